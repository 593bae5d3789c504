"""PickyBPE (Chizhov et al. 2024): the option that asks for it, checked, and the
call into the core trainer (``src/trainers/picky.rs``).

After each merge ``(x1, x2) -> x3`` the trainer looks at ``x1`` and then ``x2``
(learned tokens only): its IoS is the share of its occurrences that the merge just
consumed, ``c / (c + f)``; at ``IoS >= picky_threshold`` it is removed, its
remaining occurrences split back into the tokens it was made of, and its slot is
free for a later merge. The result encodes by replaying the merges and removals in
order (``docs/picky.md`` has the formulas and the semantics).
"""

from __future__ import annotations

import math
from typing import Any

from .errors import ConfigError

__all__ = ["MAX_MERGES_PER_SLOT", "check_picky", "format_removal"]

#: The trainer's guard: at most this many merges per learned vocabulary slot
#: (``src/trainers/picky.rs``).
MAX_MERGES_PER_SLOT = 4


def check_picky(threshold: Any, *, byte_level: bool, parity: bool,
                superword: bool) -> float | None:
    """The checked ``picky_threshold`` (``None``: plain BPE)."""
    if threshold is None:
        return None
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise ConfigError(f"picky_threshold must be a number in (0, 1] (PickyBPE's IoS "
                          f"threshold τ, e.g. 0.9), not {threshold!r}")
    value = float(threshold)
    if not (math.isfinite(value) and 0.0 < value <= 1.0):
        raise ConfigError(f"picky_threshold must be in (0, 1] (PickyBPE's IoS threshold τ; "
                          f"the paper uses 0.6-0.9), not {threshold!r}")
    if not byte_level:
        raise ConfigError("picky_threshold=: PickyBPE is byte-level only here; "
                          "drop byte_level=False")
    if parity:
        raise ConfigError("picky_threshold= (PickyBPE) cannot be combined with languages=/"
                          "parity_dev=/parity_measure=/parity_start= (parity-aware BPE): "
                          "they are two trainers; use one of them")
    if superword:
        raise ConfigError("picky_threshold= (PickyBPE) cannot be combined with "
                          "superword_start= (SuperBPE): they are two trainers; use one of them")
    return value


def format_removal(index: int, token: bytes, ios: float, left: bytes, right: bytes,
                   merge: int) -> str:
    """One line of the training trace, after the merge's own line:
    ``remove b'ab' (IoS 0.950) after merge 10 (b'ab', b'c')``. (``index``, the
    removal's place among all events, is the callback's only.)"""
    del index
    return f"remove {token!r} (IoS {ios:.3f}) after merge {merge} ({left!r}, {right!r})"
