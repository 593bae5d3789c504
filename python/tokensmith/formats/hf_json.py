"""Hugging Face ``tokenizer.json``, the native format."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._io import atomic_write
from ..errors import PortabilityWarning

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer


def loads(text: str) -> Tokenizer:
    """A tokenizer from ``tokenizer.json`` text."""
    from ..tokenizer import Tokenizer

    return Tokenizer.from_str(text)


def document(tok: Tokenizer) -> dict[str, Any]:
    """The tokenizer as a ``tokenizer.json`` document to read or edit, its SentencePiece
    normalizer and decoder in tokensmith's own form (``{"type": "SentencePiece", ...}``,
    which loads back as it is) rather than the ``tokenizers`` chain that files carry."""
    return unfold(json.loads(tok.to_str(pretty=False)))


def unfold(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with each ``tokenizers`` chain that carries exact SentencePiece settings
    (the ``"sentencepiece"`` key, see ``src/sentencepiece_json.rs``) replaced by them."""
    for key in ("normalizer", "decoder"):
        part = doc.get(key)
        if isinstance(part, dict) and isinstance(part.get("sentencepiece"), dict):
            doc[key] = {"type": "SentencePiece", **part["sentencepiece"]}
    return doc


def load(path: str | os.PathLike[str]) -> Tokenizer:
    from ..tokenizer import Tokenizer

    return Tokenizer._from_json_file(Path(path))


def save(tok: Tokenizer, path: str | os.PathLike[str], *, pretty: bool = True) -> Path:
    text = tok.to_str(pretty=pretty)
    # (only a SentencePiece pipeline can read differently: parse the text for those)
    difference = portability(json.loads(text)) if "SentencePiece" in text or (
        '"sentencepiece"' in text) or '"PickyBPE"' in text else None
    if difference:
        warnings.warn(PortabilityWarning(f"{path}: {difference}"), stacklevel=3)
    return atomic_write(path, text)


def portability(doc: dict[str, Any]) -> str | None:
    """How ``tokenizers`` reads this ``tokenizer.json`` document differently from
    tokensmith, or ``None`` when it reads it the same.

    A SentencePiece normalizer is written as ``tokenizers`` components plus
    tokensmith's exact settings (see ``src/sentencepiece_json.rs``): exact without a
    character map, close with one; what no component expresses is tokensmith's only.
    A SentencePiece Unigram model keeps its piece types, which tokensmith reads as
    ``sentencepiece``'s single-precision Viterbi. A PickyBPE model is tokensmith's only.
    """
    normalizer = doc.get("normalizer") or {}
    if normalizer.get("type") == "SentencePiece":
        return ("tokenizers cannot load this file: it has no component for this "
                "SentencePiece normalizer (user-defined symbols kept out of the character "
                "map, or whitespace as a suffix)")
    differences = []
    exact = normalizer.get("sentencepiece") or {}
    if exact.get("precompiled_charsmap"):
        differences.append(
            "tokenizers applies the precompiled character map per grapheme cluster, "
            "sentencepiece (and tokensmith) by the longest rule at each position: text "
            "where a rule spans a cluster boundary can normalize differently there")
    model = doc.get("model") or {}
    if model.get("type") == "PickyBPE":
        return ("tokenizers cannot load this file: its model is tokensmith's PickyBPE "
                "(merges and removals replayed in order, see docs/picky.md), which no "
                "tokenizers model expresses; tokensmith loads it back exactly")
    if model.get("type") == "Unigram" and model.get("piece_types"):
        differences.append(
            "tokenizers sums Unigram scores in double precision, sentencepiece (and "
            "tokensmith, for a SentencePiece model) in single precision: where two "
            "segmentations score the same to within rounding they can choose differently "
            "(a few lines in 10,000)")
    return "; ".join(differences) or None
