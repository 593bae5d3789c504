"""The classic training artifacts: ``vocab.json`` + ``merges.txt`` (GPT-2, RoBERTa).

The Rust core reads them and builds the byte-level pipeline
(``src/formats/vocab_merges.rs``); writing them is done here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from .. import _core
from .._io import atomic_write
from ..errors import TokenizerFormatError, UnsupportedComponentError

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer


def save_vocab_merges(
    tok: Tokenizer, folder: str | os.PathLike[str], prefix: str | None = None
) -> tuple[Path, Path]:
    """Write ``[prefix-]vocab.json`` and ``[prefix-]merges.txt`` into ``folder``."""
    from ._picky import refuse_picky

    refuse_picky(tok, "vocab.json + merges.txt")
    if any(" " in a or " " in b for a, b in tok.merges):
        raise UnsupportedComponentError(
            "merges.txt separates tokens with a space, and this tokenizer has tokens that "
            "contain one; save it as tokenizer.json instead"
        )
    out = Path(folder)
    stem = f"{prefix}-" if prefix else ""
    vocab = dict(sorted(tok.get_vocab().items(), key=lambda kv: kv[1]))
    vocab_path = atomic_write(out / f"{stem}vocab.json", json.dumps(vocab, ensure_ascii=False))
    lines = ["#version: 0.2"] + [f"{a} {b}" for a, b in tok.merges]
    merges_path = atomic_write(out / f"{stem}merges.txt", "\n".join(lines) + "\n")
    return vocab_path, merges_path


def load_vocab_merges(
    vocab_path: str | os.PathLike[str],
    merges_path: str | os.PathLike[str],
    *,
    special_tokens: list[str] | None = None,
) -> Tokenizer:
    """A GPT-2-style byte-level BPE tokenizer from ``vocab.json`` and ``merges.txt``.

    ``special_tokens`` defaults to ``<|endoftext|>`` when the vocabulary has it.
    """
    from ..tokenizer import Tokenizer

    vp, mp = Path(vocab_path), Path(merges_path)
    try:
        vocab = vp.read_bytes()
    except OSError as e:
        raise TokenizerFormatError(f"{vp}: cannot read the vocabulary: {e}") from None
    try:
        merges = mp.read_bytes()
    except OSError as e:
        raise TokenizerFormatError(f"{mp}: cannot read the merges: {e}") from None
    try:
        specials = None if special_tokens is None else list(special_tokens)
        core = _core.Tokenizer.from_vocab_merges(vocab, merges, specials, (str(vp), str(mp)))
    except (TypeError, UnicodeEncodeError) as e:  # special tokens that are not a list of str
        raise TokenizerFormatError(f"{vp}: {e}") from None
    return Tokenizer(core)
