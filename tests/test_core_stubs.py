"""The core's type stubs (``python/tokensmith/_core.pyi``) match the built extension, and
the fast ``encode``/``count`` keep a real signature and docstring."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest
import tokensmith as ts


def test_stubs_match_the_extension() -> None:
    pytest.importorskip("mypy", reason="mypy is a test dependency")
    run = subprocess.run([sys.executable, "-m", "mypy.stubtest", "tokensmith._core"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "Success" in run.stdout


def test_fast_encode_has_a_signature_and_a_docstring() -> None:
    tok = ts.train(texts=["hello world " * 30], vocab_size=260)
    for method in (tok.encode, tok.count):
        params = inspect.signature(method).parameters
        assert list(params) == ["text", "allowed_special", "disallowed_special",
                                "add_special_tokens"]
        assert params["disallowed_special"].default == "all"
        assert method.__doc__ and "text" in method.__doc__
