"""Which encoding a tiktoken rank file belongs to, from its name or its content.

A rank file holds only ranks: the split pattern and the special tokens come from the
encoding it belongs to. Known by name (``cl100k_base.tiktoken``), by content (the
SHA-256 of an OpenAI encoding's file), or by its shape: 128,000 ranks are Meta's Llama
3 ``tokenizer.model`` (the cl100k pattern; 256 special tokens from 128,000, named by a
``tokenizer_config.json`` or ``tokenizer.json`` beside the file when there is one, else
as the Llama 3 release names them).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .. import patterns
from .._encodings import ENCODINGS, encoding_for_file
from ..errors import TokenizerFormatError

LLAMA3_RANKS = 128_000
LLAMA3_SPECIALS = 256


def llama3_special_tokens() -> dict[str, int]:
    """The special tokens of the Llama 3 release (``tokenizer.model``'s 256 ids)."""
    names = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
             "<|reserved_special_token_1|>", "<|reserved_special_token_2|>",
             "<|reserved_special_token_3|>", "<|start_header_id|>", "<|end_header_id|>",
             "<|reserved_special_token_4|>", "<|eot_id|>"]
    names += [f"<|reserved_special_token_{i}|>" for i in range(5, LLAMA3_SPECIALS - 5)]
    return {name: LLAMA3_RANKS + k for k, name in enumerate(names)}


def special_tokens_beside(path: Path, first_id: int) -> dict[str, int] | None:
    """Special tokens with ids from ``first_id`` that a ``tokenizer_config.json`` (its
    ``added_tokens_decoder``) or a ``tokenizer.json`` (its ``added_tokens``) in the same
    folder names; ``None`` when neither is there or names any."""
    found: dict[str, int] = {}
    config = path.with_name("tokenizer_config.json")
    whole = path.with_name("tokenizer.json")
    try:
        if config.is_file():
            decoder = json.loads(config.read_text(encoding="utf-8")).get("added_tokens_decoder")
            for key, entry in (decoder or {}).items():
                found[entry["content"]] = int(key)
        elif whole.is_file():
            for entry in json.loads(whole.read_text(encoding="utf-8")).get("added_tokens") or []:
                found[entry["content"]] = int(entry["id"])
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise TokenizerFormatError(f"{config if config.is_file() else whole}: cannot read "
                                   f"the special tokens of {path.name} from it: {e}") from None
    found = {name: i for name, i in found.items() if i >= first_id}
    return found or None


def encoding_of(path: Path, data: bytes) -> tuple[str, dict[str, int]]:
    """(split pattern, special tokens) of the rank file at ``path`` with bytes ``data``."""
    known = encoding_for_file(path)
    if known is None:
        digest = hashlib.sha256(data).hexdigest()
        known = next((s for s in ENCODINGS.values() if s.sha256 == digest), None)
    if known is not None:
        return known.pattern, dict(known.special_tokens)
    ranks = data.count(b"\n") + (not data.endswith(b"\n") and bool(data))
    if ranks == LLAMA3_RANKS:
        specials = special_tokens_beside(path, LLAMA3_RANKS) or llama3_special_tokens()
        return patterns.resolve("llama3"), specials
    raise TokenizerFormatError(
        f"{path}: a tiktoken rank file holds only ranks, and this one ({ranks:,} ranks) is "
        f"no encoding tokensmith knows; say which split pattern and special tokens go with "
        f"it: tokensmith.formats.tiktoken.load(path, pattern=..., special_tokens={{...}}), "
        f"or name the file after a known encoding ({', '.join(ENCODINGS)})"
    )
