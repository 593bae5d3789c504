"""Changing a tokenizer without breaking it: add tokens, extend by continued
training, prune, merge two vocabularies, resize, and check that the old ids
still mean what they meant.

Every operation returns a new :class:`~tokensmith.Tokenizer` and leaves the
original untouched; the new one is built in the original's format (rank
file, SentencePiece ``.model`` or ``tokenizer.json``) so that it saves back
to it and its reference library encodes it identically.
"""

from __future__ import annotations

from ._base import to_tokenizer_json
from .add import add_tokens, resize
from .check import CheckResult, CompatibilityReport, check_compatible
from .extend import extend
from .merging import merge
from .prune import IdMap, prune

__all__ = [
    "add_tokens",
    "extend",
    "prune",
    "merge",
    "resize",
    "check_compatible",
    "CompatibilityReport",
    "CheckResult",
    "IdMap",
    "to_tokenizer_json",
]
