"""What an optional dependency's absence looks like: a ConfigError that names the extra
to install, not an ImportError from deep inside."""

from __future__ import annotations

import sys

import pytest
import tokensmith as ts
from tokensmith.errors import ConfigError


def test_reference_without_regex_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from tokensmith.reference import train_bpe

    monkeypatch.setitem(sys.modules, "regex", None)  # an import of it now fails
    with pytest.raises(ConfigError, match=r"tokensmith\[reference\]"):
        train_bpe(["low lower lowest " * 10], vocab_size=260)


def test_numpy_methods_without_numpy_name_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from tokensmith import tokenizer

    tok = ts.train(texts=["hello world " * 20], vocab_size=270)
    monkeypatch.setattr(tokenizer, "_NUMPY", ())
    monkeypatch.setitem(sys.modules, "numpy", None)
    with pytest.raises(ConfigError, match=r"tokensmith\[numpy\]"):
        tok.encode_to_numpy("hello")
