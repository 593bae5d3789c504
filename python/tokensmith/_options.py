"""Keyword options checked before any work: a misspelt option is refused with the
closest real one (:class:`~tokensmith.errors.UnknownOptionError`). Used by the
trainers, :func:`tokensmith.count` and :meth:`tokensmith.Tokenizer.__call__`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["check_options"]


def _keywords(function: Callable[..., Any]) -> list[str]:
    import inspect

    return [n for n, p in inspect.signature(function).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY]


def check_options(function: Callable[..., Any], options: dict[str, Any], what: str,
                  others: dict[str, Callable[..., Any]] | None = None) -> None:
    """Refuse keyword arguments ``function`` does not take, naming the closest one, or
    the models (``others``) whose option it is (:class:`~tokensmith.errors.
    UnknownOptionError`), before any work is done."""
    import difflib

    from .errors import UnknownOptionError

    known = _keywords(function)
    for name in options:
        if name in known:
            continue
        owners = [m for m, f in (others or {}).items() if name in _keywords(f)]
        if owners:
            hint = f"it is an option of model={' and model='.join(map(repr, owners))}. "
        else:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0]}=? " if close else ""
        raise UnknownOptionError(f"{what} has no option {name!r}: {hint}its options are "
                                 f"{', '.join(known)}")
