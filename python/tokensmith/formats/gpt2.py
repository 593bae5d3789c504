"""The classic training artifacts: ``vocab.json`` + ``merges.txt`` (GPT-2, RoBERTa)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from .._io import atomic_write
from ..errors import TokenizerFormatError, UnsupportedComponentError

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer


def save_vocab_merges(
    tok: Tokenizer, folder: str | os.PathLike[str], prefix: str | None = None
) -> tuple[Path, Path]:
    """Write ``[prefix-]vocab.json`` and ``[prefix-]merges.txt`` into ``folder``."""
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
    from .hf_json import loads

    vp, mp = Path(vocab_path), Path(merges_path)
    try:
        vocab = json.loads(vp.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise TokenizerFormatError(f"{vp}: cannot read the vocabulary: {e}") from None
    if not isinstance(vocab, dict) or not all(isinstance(v, int) for v in vocab.values()):
        raise TokenizerFormatError(f"{vp}: expected a JSON object of token -> integer id")
    merges: list[str] = []
    try:
        lines = mp.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise TokenizerFormatError(f"{mp}: cannot read the merges: {e}") from None
    for n, line in enumerate(lines, 1):
        if not line or (n == 1 and line.startswith("#version")):
            continue
        if len(line.split(" ")) != 2:
            raise TokenizerFormatError(f"{mp}:{n}: expected two tokens separated by one space")
        merges.append(line)
    if special_tokens is None:
        special_tokens = [t for t in ("<|endoftext|>",) if t in vocab]
    added = []
    for t in special_tokens:
        if t not in vocab:
            raise TokenizerFormatError(f"{vp}: the special token {t!r} is not in the vocabulary")
        added.append(
            {"id": vocab[t], "content": t, "single_word": False, "lstrip": False,
             "rstrip": False, "normalized": False, "special": True}
        )
    spec = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                          "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True,
                           "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True,
                    "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }
    try:
        return loads(json.dumps(spec, ensure_ascii=False))
    except TokenizerFormatError as e:
        raise type(e)(f"{mp}: {e}") from None
