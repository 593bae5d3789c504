"""Round trips of every trained family, as properties over generated text (hypothesis):
Unigram and SentencePiece BPE with byte fallback give back any text ("▁" as a space),
WordPiece gives back text made of its own words, and in every family ``count``, ``encode_batch``,
``encode_full`` and streaming decode agree with ``encode`` and ``decode``."""

from __future__ import annotations

import random
from functools import cache

import pytest
import tokensmith as ts
from hypothesis import example, given, settings
from hypothesis import strategies as st

WORDS = ("the of and to in token merge byte pair lower lowest newer newest naïve café "
         "straße 東京 分词器 данные مرحبا 😀 👍🏽 x1 42 3.14 don't it's ( ) <s> </s>").split()
SEPARATORS = (" ", " ", "  ", "\n", "\t", ". ", ", ", "\r\n")
ASCII_WORDS = [w for w in WORDS if w.isascii() and w.isalpha()]


def _training_texts() -> list[str]:
    rng = random.Random(5)
    return ["".join(rng.choice(WORDS) + rng.choice(SEPARATORS) for _ in range(100))
            for _ in range(50)]


@cache
def tokenizer(family: str) -> ts.Tokenizer:
    texts = _training_texts()
    if family == "wordpiece":
        return ts.train(texts=texts, model="wordpiece", vocab_size=300, min_frequency=1)
    # (the identity rule: NFKC and nmt_nfkc's control-character removal lose text)
    return ts.train(texts=texts, model=family, vocab_size=400, byte_fallback=True,
                    remove_extra_whitespaces=False, hard_vocab_limit=False,
                    normalization_rule_name="identity")


ANY_TEXT = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=200) | st.lists(
    st.sampled_from(WORDS + list(SEPARATORS)), max_size=60).map("".join)


def _agree(tok: ts.Tokenizer, text: str) -> list[int]:
    ids = tok.encode(text, disallowed_special=())
    assert all(0 <= i < tok.vocab_size for i in ids)
    assert tok.count(text, disallowed_special=()) == len(ids)
    assert tok.encode_batch([text, "", text], disallowed_special=()) == [
        ids, tok.encode("", disallowed_special=()), ids]
    full = tok.encode_full(text, disallowed_special=())
    assert full.ids == ids
    assert all(0 <= s <= e <= len(text) for s, e in full.offsets)
    return ids


@pytest.mark.parametrize("family", ["unigram", "sentencepiece-bpe"])
def test_sentencepiece_families_give_back_any_text(family: str) -> None:
    tok = tokenizer(family)

    @settings(max_examples=250, deadline=None)
    @given(text=ANY_TEXT)
    @example(text="\u2581")
    @example(text=" \u2581a\u2581\u2581 b\u2581")
    def check(text: str) -> None:
        ids = _agree(tok, text)
        out = tok.decode(ids)
        # SentencePiece writes a space as "▁" (U+2581), so a "▁" in the text comes back
        # as a space, as it does from sentencepiece itself
        assert out == text.replace("\u2581", " ")
        stream = tok.decode_stream()
        assert "".join(stream.step(i) for i in ids) + stream.flush() == out

    check()


def test_wordpiece_gives_back_text_of_its_words() -> None:
    tok = tokenizer("wordpiece")

    @settings(max_examples=250, deadline=None)
    @given(words=st.lists(st.sampled_from(ASCII_WORDS), max_size=40),
           spaces=st.lists(st.sampled_from([" ", "  ", "\n", "\t"]), min_size=40, max_size=40))
    def check(words: list[str], spaces: list[str]) -> None:
        text = "".join(w + s for w, s in zip(words, spaces, strict=False))
        ids = _agree(tok, text)
        assert tok.decode(ids, skip_special_tokens=True) == " ".join(words)

    check()


def test_wordpiece_any_text_keeps_its_promises() -> None:
    tok = tokenizer("wordpiece")

    @settings(max_examples=250, deadline=None)
    @given(text=ANY_TEXT)
    def check(text: str) -> None:
        ids = _agree(tok, text)
        assert isinstance(tok.decode(ids), str)

    check()
