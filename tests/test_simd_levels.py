"""Every SIMD level gives the same ids (`TOKENSMITH_SIMD`, `set_simd_level`).

The encoder, the scanner and the UTF-8 conversion pick kernels at run time;
`TOKENSMITH_SIMD=scalar|avx2|avx512` caps them, so the scalar and AVX2 paths
run on a machine that has AVX-512. CI runs the exactness suites at the
scalar level too (`.ci/run`); these tests check the switch itself and one
pass of mixed text at every level, each in a fresh process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import tokensmith as ts
from tokensmith import _core

from . import adversarial
from .conftest import asset

LEVELS = ("scalar", "avx2", "avx512")


def _run(code: str, level: str | None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("TOKENSMITH_SIMD", None)
    if level is not None:
        env["TOKENSMITH_SIMD"] = level
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_bad_level_is_refused_when_the_core_loads() -> None:
    done = _run("import tokensmith", "sse9")
    assert done.returncode != 0
    assert "TOKENSMITH_SIMD must be one of scalar, avx2, avx512" in done.stderr
    assert "'sse9'" in done.stderr or '"sse9"' in done.stderr


def test_the_level_in_force_is_the_one_asked_for_or_less() -> None:
    best = _run("from tokensmith import _core; print(_core.simd_level())", None)
    native = best.stdout.strip()
    assert native in LEVELS
    for level in LEVELS:
        got = _run("from tokensmith import _core; print(_core.simd_level())", level)
        assert got.returncode == 0, got.stderr
        want = min(level, native, key=LEVELS.index)
        assert got.stdout.strip() == want


def test_set_simd_level_caps_and_returns_the_cap_before() -> None:
    before = _core.set_simd_level("scalar")
    try:
        assert _core.simd_level() == "scalar"
        assert _core.set_simd_level(None) == "scalar"
        with pytest.raises(ValueError, match="one of scalar, avx2, avx512"):
            _core.set_simd_level("fast")
    finally:
        _core.set_simd_level(before)


def _texts() -> list[str]:
    base = [
        "Hello world, this is English text with numbers 12345 and symbols!",
        "def f(x):\n    return x ** 2  # code\n\n\tindented\r\n",
        "中文文本的分词测试。日本語のテキストも混ぜる。한국어 문장도 있다.",
        "   many   spaces\u3000and\u00a0odd\u2028separators " * 20,
        "a" * 9000,
        "Ünïcödé café naïve résumé " * 50,
    ]
    return base + adversarial.strings()[:200]


ENCODE = """
import json, sys
import tokensmith as ts
from tokensmith import _core
tok = ts.load(sys.argv[1] if len(sys.argv) > 1 else {path!r})
texts = json.loads({texts!r})
print(json.dumps({{"level": _core.simd_level(),
                  "single": [tok.encode(t, disallowed_special=()) for t in texts],
                  "batch": tok.encode_batch(texts, disallowed_special=())}}))
"""


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_every_level_encodes_alike(name: str) -> None:
    path = asset(name, f"{name}.tiktoken")
    code = ENCODE.format(path=str(path), texts=json.dumps(_texts()))
    results = {}
    for level in LEVELS:
        done = _run(code, level)
        assert done.returncode == 0, done.stderr
        results[level] = json.loads(done.stdout)
    levels = {r["level"] for r in results.values()}
    assert "scalar" in levels, "the scalar level did not run"
    want = results["scalar"]
    assert want["single"] == want["batch"]
    for level, got in results.items():
        assert got["single"] == want["single"], level
        assert got["batch"] == want["batch"], level


def test_a_tokenizer_in_this_process_is_unchanged_by_the_level() -> None:
    tok = ts.load(asset("cl100k_base", "cl100k_base.tiktoken"))
    texts = _texts()
    native = [tok.encode(t, disallowed_special=()) for t in texts]
    before = _core.set_simd_level("scalar")
    try:
        fresh = ts.load(asset("cl100k_base", "cl100k_base.tiktoken"))
        assert [fresh.encode(t, disallowed_special=()) for t in texts] == native
        assert [tok.encode(t, disallowed_special=()) for t in texts] == native
    finally:
        _core.set_simd_level(before)
