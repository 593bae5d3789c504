"""Fuzzing's findings stay fixed: every input in ``fuzz/regressions/<target>/`` goes
through its fuzz target's ``test_one_input`` again, and every seed in
``fuzz/seeds/<target>/`` must load (or, for the round-trip target, round-trip).

A regression input runs in a child process of its own, with memory capped and a time
limit, because what fuzzing finds can be an abort or a hang as well as an exception.
The child runs with ``FUZZ_SKIP_KNOWN=0``, so that the targets check even what a fuzzing
run skips. A regression file named after a known, unfixed bug (a key of
``KNOWN_BUGS`` in ``fuzz/_common.py``, followed by ``-``) is expected to fail
(``xfail(strict=True)``): when the bug is fixed its test fails as XPASS, and the entry
goes from ``KNOWN_BUGS``. See ``fuzz/README.md``. These tests need no atheris.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
FUZZ = ROOT / "fuzz"
TARGETS = ("tokenizer_json", "sentencepiece", "tiktoken", "bert_vocab", "gpt2_vocab_merges",
           "roundtrip")
LOADERS = tuple(t for t in TARGETS if t != "roundtrip")
MEMORY_LIMIT = 4 << 30  # bytes of address space for a replay
TIME_LIMIT = 120  # seconds for a replay (libFuzzer calls an input that takes 10 s a hang)


def harness(target: str) -> ModuleType:
    if str(FUZZ) not in sys.path:
        sys.path.insert(0, str(FUZZ))
    return importlib.import_module(f"fuzz_{target}")


def known_bugs() -> dict[str, str]:
    return dict(harness("roundtrip")._common.KNOWN_BUGS)


def files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))


def regression_cases() -> list[object]:
    bugs = known_bugs()
    cases: list[object] = []
    for target in TARGETS:
        for path in files(FUZZ / "regressions" / target):
            bug = next((b for b in bugs if path.name.startswith(b + "-")), None)
            # (raises=: a harness that does not even start fails, it does not xfail)
            marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=bugs[bug])
                     ] if bug else []
            cases.append(pytest.param(target, path, id=f"{target}/{path.name}", marks=marks))
    return cases


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


REPLAY = (
    "import sys; sys.path.insert(0, sys.argv[1]); import importlib; "
    "target = importlib.import_module('fuzz_' + sys.argv[2]); "
    "data = open(sys.argv[3], 'rb').read(); print('ready', flush=True); "
    "target.test_one_input(data); print('replayed')"
)


@pytest.mark.parametrize(("target", "path"), regression_cases())
def test_regression_input_is_handled(target: str, path: Path) -> None:
    env = {**os.environ, "FUZZ_SKIP_KNOWN": "0"}
    try:
        proc = subprocess.run(
            [sys.executable, "-c", REPLAY, str(FUZZ), target, str(path)],
            capture_output=True, text=True, errors="replace", env=env, timeout=TIME_LIMIT,
            preexec_fn=_limit_memory,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"fuzz/fuzz_{target}.py hangs on {path.name} (over {TIME_LIMIT} s)")
    if "ready" not in proc.stdout:
        raise RuntimeError(f"fuzz/fuzz_{target}.py did not start:\n{proc.stderr[-3000:]}")
    assert proc.returncode == 0 and "replayed" in proc.stdout, (
        f"fuzz/fuzz_{target}.py on {path.name}: exit {proc.returncode}\n"
        f"{proc.stderr[-3000:]}"
    )


@pytest.mark.parametrize("target", LOADERS)
def test_every_seed_loads(target: str) -> None:
    module = harness(target)
    seeds = files(FUZZ / "seeds" / target)
    assert seeds, f"no seeds in fuzz/seeds/{target}: run python fuzz/make_seeds.py"
    for path in seeds:
        data = path.read_bytes()
        tok = module.load(data)  # a TokenizerError here fails the test: seeds are valid
        assert tok.vocab_size > 0, path.name
        assert tok.decode(tok.encode("hello world", disallowed_special=())) is not None
        module.test_one_input(data)


def test_roundtrip_seeds_cover_every_family_and_policy() -> None:
    module = harness("roundtrip")
    seen = set()
    for path in files(FUZZ / "seeds" / "roundtrip"):
        data = path.read_bytes()
        family, policy, _ = module.parse(data)
        seen.add((family, policy))
        module.test_one_input(data)
    assert {f for f, _ in seen} == set(module.FAMILIES)
    assert {p for _, p in seen} == set(range(len(module.POLICIES)))


def test_roundtrip_target_checks_what_it_claims() -> None:
    """The round-trip target is not a test that cannot fail: a wrong decode is caught."""
    module = harness("roundtrip")
    tok = module.tokenizer("bpe")
    original = tok.decode
    try:
        tok.decode = lambda ids, **kw: original(ids, **kw) + "!"  # type: ignore[method-assign]
        with pytest.raises(AssertionError, match="decode"):
            module.check("bpe", 1, "hello world")
    finally:
        del tok.decode
    module.check("bpe", 1, "hello world")


def test_loader_target_refuses_quietly_and_flags_other_errors() -> None:
    module = harness("tokenizer_json")
    module.test_one_input(b"{not json")  # a TokenizerFormatError: expected, ignored
    module.test_one_input(b"")
    common = module._common
    with pytest.raises(AssertionError, match="did not raise"):
        # a tokenizer whose decode accepts an unknown id breaks exercise()'s promise
        tok = module.load((FUZZ / "seeds" / "tokenizer_json" / "bpe_cl100k.json").read_bytes())
        original = tok.decode
        tok.decode = lambda ids, **kw: "" if ids and ids[0] >= tok.vocab_size else original(
            ids, **kw)
        common.exercise(tok)


def test_every_target_has_a_harness_seeds_and_a_regression_folder() -> None:
    names = {p.stem.removeprefix("fuzz_") for p in FUZZ.glob("fuzz_*.py")}
    assert names == set(TARGETS)
    for target in TARGETS:
        assert (FUZZ / "seeds" / target).is_dir(), target
        assert (FUZZ / "regressions" / target).is_dir(), target
    bugs = known_bugs()
    for target in TARGETS:
        for path in files(FUZZ / "regressions" / target):
            assert path.stat().st_size < 1 << 20, f"{path}: keep regression inputs small"
    # every known bug has a regression input that shows it
    named = {p.name for t in TARGETS for p in files(FUZZ / "regressions" / t)}
    for bug in bugs:
        assert any(n.startswith(bug + "-") for n in named), f"no regression input for {bug}"
