"""Limits on sizes given as arguments: what a trainer accepts before it runs."""

from __future__ import annotations

from typing import Any

from .errors import ConfigError, VocabSizeError

__all__ = ["MAX_VOCAB_SIZE", "check_vocab_size", "check_min_frequency", "check_token_list",
           "warn_shortfall"]

#: Ids are 32-bit: the largest vocabulary any trainer accepts.
MAX_VOCAB_SIZE = 2**32 - 1


def check_vocab_size(vocab_size: Any) -> int:
    """``vocab_size`` as a positive int no larger than :data:`MAX_VOCAB_SIZE`."""
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size <= 0:
        raise VocabSizeError(f"vocab_size must be a positive integer, got {vocab_size!r}")
    if vocab_size > MAX_VOCAB_SIZE:
        raise VocabSizeError(f"vocab_size={vocab_size:,} is more than the {MAX_VOCAB_SIZE:,} "
                             f"ids a 32-bit token id can name")
    return vocab_size


def check_min_frequency(min_frequency: Any) -> int:
    """``min_frequency`` as an int from 0 to 2**64 - 1 (pair counts are 64-bit)."""
    if (isinstance(min_frequency, bool) or not isinstance(min_frequency, int)
            or not 0 <= min_frequency < 2**64):
        raise ConfigError(f"min_frequency must be an integer from 0 to 2**64 - 1, got "
                          f"{min_frequency!r}")
    return min_frequency


def check_token_list(tokens: Any, name: str = "special_tokens") -> list[str]:
    """``tokens`` (a list, tuple or other iterable of non-empty strings) as a list without
    repeats. A single string is refused: iterated, it would give one-character tokens."""
    if isinstance(tokens, (str, bytes)):
        raise ConfigError(f"{name} must be a list of strings, not a single string: "
                          f"did you mean {name}=[{tokens!r}]?")
    try:
        items = list(tokens)
    except TypeError:
        raise ConfigError(f"{name} must be a list of strings, got {tokens!r}") from None
    for t in items:
        if not isinstance(t, str):
            raise ConfigError(f"{name} must hold strings, got {t!r}")
        if not t:
            raise ConfigError(f"{name} cannot hold empty strings")
    return list(dict.fromkeys(items))


def warn_shortfall(asked: int, got: int, min_frequency: int, what: str = "pair") -> None:
    """Warn (:class:`~tokensmith.errors.VocabShortfallWarning`) when a trainer made fewer
    tokens than ``asked``: silent, a smaller vocabulary goes unnoticed into a model."""
    if got >= asked:
        return
    import warnings

    from .errors import VocabShortfallWarning

    message = (f"vocab_size={asked:,} asked for, {got:,} trained: no {what} is left that "
               f"occurs at least {max(min_frequency, 1):,} time(s) in the corpus. Train on "
               f"more text, lower min_frequency, or ask for a smaller vocabulary")
    warnings.warn(VocabShortfallWarning(message, asked, got), stacklevel=3)
