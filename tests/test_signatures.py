"""``tok.encode`` and ``tok.count`` are the core's fast path (``_core.FastEncode``, put
in the instance by ``Tokenizer.__init__``), yet ``help()`` and ``inspect`` show them as
the Python methods: the same parameters (names, kinds, defaults) and docstring.

The fast path's signature and doc come from ``src/python.rs`` (the ``text_signature``
and the ``///`` comments of ``FastEncode.encode``/``count``): a change to either side
needs the other, and a rebuild of the extension."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
import tokensmith as ts
from tokensmith import _core


def _params(fn: Any, drop_self: bool) -> list[tuple[str, Any, Any]]:
    params = list(inspect.signature(fn).parameters.values())
    if drop_self:
        assert params[0].name == "self"
        params = params[1:]
    return [(p.name, p.kind, p.default) for p in params]


def _first_line(fn: Any) -> str:
    doc = inspect.getdoc(fn)
    assert doc, f"{fn!r} has no docstring"
    return doc.splitlines()[0]


@pytest.fixture(scope="module", params=["trained", "no-specials", "loaded"])
def tok(request: pytest.FixtureRequest, trained: ts.Tokenizer) -> ts.Tokenizer:
    if request.param == "trained":  # (with special tokens)
        return trained
    if request.param == "no-specials":
        return ts.train(texts=["hello world " * 30], vocab_size=260)
    return ts.Tokenizer.from_str(trained.to_str())


@pytest.mark.parametrize("name", ["encode", "count"])
def test_fast_path_is_in_use(tok: ts.Tokenizer, name: str) -> None:
    # (else the tests below would check the Python methods against themselves)
    method = getattr(tok, name)
    assert name in vars(tok)
    assert isinstance(method.__self__, _core.FastEncode)


@pytest.mark.parametrize("name", ["encode", "count"])
def test_fast_path_has_the_python_signature(tok: ts.Tokenizer, name: str) -> None:
    fast = _params(getattr(tok, name), drop_self=False)
    python = _params(getattr(ts.Tokenizer, name), drop_self=True)
    assert fast == python


@pytest.mark.parametrize("name", ["encode", "count"])
def test_fast_path_has_the_python_docstring(tok: ts.Tokenizer, name: str) -> None:
    method = getattr(tok, name)
    assert method.__doc__
    assert inspect.getdoc(method).startswith(_first_line(getattr(ts.Tokenizer, name)))


@pytest.mark.parametrize("name", ["encode", "count"])
def test_defaults_mean_the_same_on_both_paths(trained: ts.Tokenizer, name: str) -> None:
    # the fast path's defaults are the Python method's: giving them explicitly, which
    # the fast path takes, gives what leaving them out does
    text = "hello <|endoftext|> world"
    fast = getattr(trained, name)
    python = getattr(ts.Tokenizer, name)
    defaults = {p: d for p, _, d in _params(python, drop_self=True) if p != "text"}
    with pytest.raises(ts.errors.DisallowedSpecialTokenError):
        fast(text)
    with pytest.raises(ts.errors.DisallowedSpecialTokenError):
        fast(text, **defaults)
    ordinary = {**defaults, "disallowed_special": ()}
    assert fast(text, **ordinary) == python(trained, text, **ordinary)
