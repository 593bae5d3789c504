"""Hugging Face ``tokenizer.json``, the native format."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from .. import _core
from .._io import atomic_write
from ..errors import TokenizerFormatError

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer


def loads(text: str) -> Tokenizer:
    """A tokenizer from ``tokenizer.json`` text."""
    from ..tokenizer import Tokenizer

    if not text.strip():
        raise TokenizerFormatError("tokenizer.json is empty")
    try:
        core = _core.Tokenizer.from_json(text)
    except UnicodeEncodeError as e:  # a lone surrogate: no file read as UTF-8 holds one
        raise TokenizerFormatError(
            f"tokenizer.json text holds a lone surrogate (U+{ord(text[e.start]):04X}) at "
            f"character {e.start}, which is not Unicode text; fix the text (a JSON escape "
            f"such as \\ud800 decoded by Python makes one)"
        ) from None
    except TokenizerFormatError as e:
        msg = str(e)
        if "EOF while parsing" in msg:
            msg += " (the file looks truncated)"
        raise type(e)(msg) from None
    return Tokenizer(core)


def load(path: str | os.PathLike[str]) -> Tokenizer:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise TokenizerFormatError(f"{p}: not UTF-8 text at byte {e.start}") from None
    try:
        return loads(text)
    except TokenizerFormatError as e:
        raise type(e)(f"{p}: {e}") from None


def save(tok: Tokenizer, path: str | os.PathLike[str], *, pretty: bool = True) -> Path:
    return atomic_write(path, tok.to_str(pretty=pretty))
