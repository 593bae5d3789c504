#!/usr/bin/env python3
"""Fuzz target: encode/decode round trips of four small tokenizers trained here.

Input: one selector byte, then text (UTF-8; bytes that are not become lone surrogates
through ``surrogateescape``, which tokensmith documents to encode as U+FFFD). The
selector picks the family, ``byte % 4``, and the special-token policy, ``byte // 4 % 3``
(0: the default, refusing special tokens' text with DisallowedSpecialTokenError;
1: ``disallowed_special=()``, everything ordinary text; 2: ``allowed_special="all"``).

Families, each trained once per process on text generated below:

* byte-level BPE (cl100k pattern, ``<|endoftext|>``): ``decode(encode(x)) == x`` under
  every policy, and ``decode_bytes`` gives x's UTF-8;
* WordPiece (BERT pipeline): lowercases, strips accents and drops unknown words, so no
  round trip; ids, offsets, counts and the post-processor's CLS/SEP are checked;
* Unigram and SentencePiece-BPE with byte fallback, identity normalization and
  ``remove_extra_whitespaces=False``: ``decode(encode(x)) == x`` for ordinary text
  (control tokens such as ``<s>`` decode to nothing, so not under ``allowed_special``).

Everywhere: encode raises nothing but TokenizerError, ``count`` equals the number of
ids, ``encode_full`` and ``encode_batch`` agree with ``encode``, offsets lie inside the
text, and streaming decode equals ``decode`` where tokensmith documents that it does.

    python fuzz/fuzz_roundtrip.py fuzz/seeds/roundtrip
"""

from __future__ import annotations

import random
from functools import cache

import _common
import tokensmith as ts
from _common import Tokenizer

FAMILIES = ("bpe", "wordpiece", "unigram", "sentencepiece-bpe")
POLICIES = (
    {},
    {"disallowed_special": ()},
    {"allowed_special": "all"},
)
ROUND_TRIPS = {"bpe": (0, 1, 2), "wordpiece": (), "unigram": (0, 1), "sentencepiece-bpe": (0, 1)}
STREAMS = {"bpe", "unigram", "sentencepiece-bpe"}  # streaming.py: exact for these decoders

WORDS = (
    "the of and to in token tokenizer merge byte pair encoding lower lowest newer newest "
    "naïve café résumé Ärger straße 東京 分词器 词表 данные привет مرحبا שלום नमस्ते "
    "😀 👍🏽 🇫🇷 x1 42 3.14 1,000 don't we'll it's I'M ( ) [ ] { } <s> </s> <|endoftext|> "
    "[CLS] [SEP] a\u0301 e\u0308 ﬁ ＡＢＣ ½ \u200b \u00a0"
).split()
SEPARATORS = (" ", " ", " ", "  ", "\n", "\t", "\n\n", ". ", ", ", "\r\n", "   ")


def training_text(seed: int, n_words: int = 120) -> str:
    """Deterministic mixed text: several scripts, numbers, punctuation, whitespace runs."""
    rng = random.Random(seed)
    out: list[str] = []
    for _ in range(n_words):
        out.append(rng.choice(WORDS))
        out.append(rng.choice(SEPARATORS))
    return "".join(out)


TEXTS = [training_text(i) for i in range(60)]


@cache
def tokenizer(family: str) -> Tokenizer:
    if family == "bpe":
        return ts.train(texts=TEXTS, model="bpe", vocab_size=400, pattern="cl100k",
                        special_tokens=["<|endoftext|>"])
    if family == "wordpiece":
        return ts.train(texts=TEXTS, model="wordpiece", vocab_size=300, min_frequency=1)
    # (the identity rule: NFKC and nmt_nfkc's control-character removal lose text)
    return ts.train(texts=TEXTS, model=family, vocab_size=500, byte_fallback=True,
                    remove_extra_whitespaces=False, hard_vocab_limit=False,
                    normalization_rule_name="identity")


for _family in FAMILIES:  # trained before fuzzing starts, not in the first input's time
    tokenizer(_family)


def parse(data: bytes) -> tuple[str, int, str]:
    """(family, policy index, text) of a fuzz input."""
    if not data:
        return FAMILIES[0], 0, ""
    selector = data[0]
    text = data[1:].decode("utf-8", "surrogateescape")
    return FAMILIES[selector % 4], selector // 4 % 3, text


def make_input(family: str, policy: int, text: str) -> bytes:
    """The fuzz input for (family, policy, text) (for the seed generator)."""
    return bytes([FAMILIES.index(family) + 4 * policy]) + text.encode("utf-8")


def check(family: str, policy: int, text: str) -> None:
    tok = tokenizer(family)
    kwargs = POLICIES[policy]
    size = tok.vocab_size
    try:
        ids = tok.encode(text, **kwargs)
    except _common.EXPECTED as e:
        # a documented refusal (DisallowedSpecialTokenError under the default)
        _common.feature(f"{family}:{policy}:refused:{_common.error_kind(e)}")
        return
    for i in set(ids):
        _common.feature(f"{family}:{i}")
    _common.feature(f"{family}:{policy}:length:{len(ids).bit_length()}")
    assert all(0 <= i < size for i in ids), f"ids out of range: {ids}"
    assert tok.count(text, **kwargs) == len(ids), "count() != len(encode())"
    assert tok.encode_batch([text, text], **kwargs) == [ids, ids], "encode_batch != encode"
    full = tok.encode_full(text, **kwargs)
    assert full.ids == ids, f"encode_full ids {full.ids} != encode ids {ids}"
    assert len(full.tokens) == len(ids) == len(full.offsets)
    for start, end in full.offsets:
        assert 0 <= start <= end <= len(text), f"offset ({start}, {end}), text of {len(text)}"
    out = tok.decode(ids)
    clean = _common.cleaned(text)
    if policy in ROUND_TRIPS[family]:
        assert out == clean, f"decode(encode(x)) != x: {out!r} != {clean!r} (ids {ids})"
        if family == "bpe":
            assert tok.decode_bytes(ids) == clean.encode("utf-8"), "decode_bytes"
    if family in STREAMS:
        stream = tok.decode_stream()
        pieces = [stream.step(i) for i in ids]
        streamed = "".join(pieces) + stream.flush()
        assert streamed == out, f"streamed {streamed!r} != decoded {out!r} (ids {ids})"
    skipped = tok.decode(ids, skip_special_tokens=True)
    assert isinstance(skipped, str)


def test_one_input(data: bytes) -> None:
    check(*parse(data))


if __name__ == "__main__":
    _common.main(test_one_input)
