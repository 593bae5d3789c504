"""tiktoken's ``*.tiktoken`` rank files: ``base64(token) rank`` per line.

A rank file holds only the vocabulary; the split pattern and the special
tokens come from the encoding's definition (``tokensmith.pretrained`` knows
the OpenAI ones) or from the caller.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .. import _core, patterns
from .._io import atomic_write
from ..errors import TokenizerFormatError

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer


@dataclass(frozen=True)
class TiktokenSource:
    """What a rank file leaves out: the split regex and the special tokens."""

    pattern: str
    special_tokens: dict[str, int]


def loads(
    data: bytes, *, pattern: str, special_tokens: Mapping[str, int] | None = None
) -> Tokenizer:
    """A tokenizer from the bytes of a rank file, a split regex (or a pattern name
    such as ``"cl100k"``) and special tokens (content -> id)."""
    from ..tokenizer import Tokenizer

    specials = sorted((special_tokens or {}).items(), key=lambda kv: kv[1])
    regex = patterns.resolve(pattern)
    core = _core.Tokenizer.from_tiktoken(bytes(data), regex, specials)
    tok = Tokenizer(core)
    # what the rank file leaves out, for vocabulary changes that rebuild it
    tok._tiktoken = TiktokenSource(regex, dict(specials))  # type: ignore[attr-defined]
    return tok


def load(
    path: str | os.PathLike[str],
    *,
    pattern: str,
    special_tokens: Mapping[str, int] | None = None,
) -> Tokenizer:
    p = Path(path)
    try:
        return loads(p.read_bytes(), pattern=pattern, special_tokens=special_tokens)
    except TokenizerFormatError as e:
        raise type(e)(f"{p}: {e}") from None


def dumps(tok: Tokenizer) -> str:
    """The rank-file text of a tokenizer that tiktoken's rules encode exactly."""
    from ._picky import refuse_picky

    refuse_picky(tok, "tiktoken")
    return tok._core.to_tiktoken()


def save(tok: Tokenizer, path: str | os.PathLike[str]) -> Path:
    """Write a ``.tiktoken`` rank file (atomically).

    Raises :class:`~tokensmith.errors.UnsupportedComponentError` when a rank
    file cannot reproduce the tokenizer exactly (for example a BPE trained
    with an explicit merge list whose order tiktoken's rule would not follow).
    """
    return atomic_write(path, dumps(tok))
