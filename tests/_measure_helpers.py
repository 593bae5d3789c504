"""Small tokenizers built by hand for the measurement tests, so that every
expected value can be worked out on paper from the vocabulary alone."""

from __future__ import annotations

import json
from typing import Any

import tokensmith as ts


def _added(content: str, i: int) -> dict[str, Any]:
    return {"id": i, "content": content, "single_word": False, "lstrip": False,
            "rstrip": False, "normalized": False, "special": True}


def _spec(model: dict[str, Any], added: list[dict[str, Any]], decoder: Any) -> str:
    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": None, "decoder": decoder, "model": model,
    })


# WordPiece, whitespace-split words, greedy longest match. A word that cannot be
# spelled from the vocabulary becomes one [UNK].
WP_VOCAB = ["[UNK]", "the", "cat", "##s", "sat", "mat", "m", "##at", "c"]


def wordpiece() -> ts.Tokenizer:
    model = {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
             "max_input_chars_per_word": 100,
             "vocab": {t: i for i, t in enumerate(WP_VOCAB)}}
    return ts.Tokenizer.from_str(_spec(model, [_added("[UNK]", 0)],
                                       {"type": "WordPiece", "prefix": "##", "cleanup": True}))


def char_bpe(vocab: list[str], merges: list[str], *, byte_fallback: bool = False,
             unk: str | None = None) -> ts.Tokenizer:
    """Character-level BPE over whitespace-split words (optionally with <0xXX> fallback)."""
    tokens: list[str] = []
    if unk is not None:
        tokens.append(unk)
    if byte_fallback:
        tokens += [f"<0x{b:02X}>" for b in range(256)]
    tokens += vocab
    model = {"type": "BPE", "dropout": None, "unk_token": unk,
             "continuing_subword_prefix": None, "end_of_word_suffix": None,
             "fuse_unk": False, "byte_fallback": byte_fallback, "ignore_merges": False,
             "vocab": {t: i for i, t in enumerate(tokens)}, "merges": merges}
    added = [_added(unk, 0)] if unk is not None else []
    decoder = {"type": "ByteFallback"} if byte_fallback else None
    return ts.Tokenizer.from_str(_spec(model, added, decoder))


def bytes_only() -> ts.Tokenizer:
    """Byte-level BPE without a single merge: one token per UTF-8 byte."""
    return ts.train(texts=["x"], vocab_size=256, special_tokens=[])
