"""The pure-Python BPE reference (tokensmith.reference) and its agreement with the Rust core."""

from __future__ import annotations

from typing import Any

import pytest
import tokensmith as ts
from hypothesis import given, settings
from hypothesis import strategies as st
from tokensmith import _core, patterns
from tokensmith.reference import ReferenceBPE, count_words, split_text, train_bpe
from tokensmith.reference.bpe import count_pairs, merge_word, split_specials

# Multi-byte UTF-8 on purpose: é ü ß (2 bytes), 中 文 (3 bytes), 😀 (4 bytes).
ALPHABET = list(" \n\r\t.,!?'-_0123456789abstSTxyzAé") + ["ü", "ß", "中", "文", "😀"]
SPECIALS = ("<|endoftext|>", "<a>")
BYTE_OF = {_core.bytes_to_unicode(bytes([b])): b for b in range(256)}

texts_st = st.text(alphabet=st.sampled_from(ALPHABET), max_size=40)
corpus_st = st.lists(texts_st, min_size=1, max_size=20).filter(lambda c: any(c))
SETTINGS = settings(max_examples=80, deadline=None)

# The classic example (Sennrich et al. 2016), one word per document so no spaces appear.
CLASSIC = ["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3


def rust_merge_bytes(tok: ts.Tokenizer) -> list[tuple[bytes, bytes]]:
    """The Rust merges in rank order, as (left bytes, right bytes)."""
    return [
        (bytes(BYTE_OF[c] for c in left), bytes(BYTE_OF[c] for c in right))
        for left, right in tok.merges
    ]


def ref_merge_bytes(ref: ReferenceBPE) -> list[tuple[bytes, bytes]]:
    return [(ref.vocab[a], ref.vocab[b]) for a, b in ref.merges]


def train_both(corpus: list[str], **options: Any) -> tuple[ts.Tokenizer, ReferenceBPE]:
    specials = options.pop("special_tokens", ())
    pattern = options.pop("pattern", "gpt4")
    tok = ts.train(texts=corpus, special_tokens=list(specials), pattern=pattern, **options)
    ref = train_bpe(corpus, pattern=pattern, special_tokens=specials, **options)
    return tok, ref


# --- hand-checked -------------------------------------------------------------------


def test_classic_example_by_hand() -> None:
    # Pair counts: low(5) lower(2) newest(6) widest(3)
    #   lo 7, ow 7, we 8, er 2, ne 6, ew 6, es 9, st 9, wi 3, id 3, de 3
    assert count_words(CLASSIC) == {b"low": 5, b"lower": 2, b"newest": 6, b"widest": 3}
    words = {tuple(w): n for w, n in count_words(CLASSIC).items()}
    pairs = count_pairs(words)
    assert pairs[(ord("e"), ord("s"))] == pairs[(ord("s"), ord("t"))] == 9
    assert pairs[(ord("w"), ord("e"))] == 8
    # 0. es 9 and st 9 tie; (e, s) = (101, 115) < (115, 116)  -> 256 "es"
    # 1. (256, t) 9 ("es"+"t"; "st" is gone)                 -> 257 "est"
    # 2. lo 7 and ow 7 tie; (108, 111) < (111, 119)          -> 258 "lo"
    # 3. (258, w) 7                                          -> 259 "low"
    # 4. ne 6, ew 6, (w, 257) 6: (101, 119) is the smallest  -> 260 "ew"
    # 5. (n, 260) 6 < (260, 257) 6                           -> 261 "new"
    # 6. (261, 257) 6                                        -> 262 "newest"
    # 7. (d, 257) 3, (i, d) 3, (w, i) 3: (100, 257) smallest -> 263 "dest"
    e, n, s, t, d, w = (ord(c) for c in "enstdw")
    ref = train_bpe(CLASSIC, vocab_size=264)
    assert ref.merges == [(e, s), (256, t), (ord("l"), ord("o")), (258, w), (e, w), (n, 260),
                          (261, 257), (d, 257)]
    assert [ref.vocab[i] for i in range(256, 264)] == [
        b"es", b"est", b"lo", b"low", b"ew", b"new", b"newest", b"dest"]

    seen: list[tuple[bytes, int]] = []

    def on_event(kind: str, data: tuple[Any, ...]) -> None:
        if kind == "merge":
            _, left, right, _, count = data
            seen.append((bytes(left) + bytes(right), count))

    tok = ts.train(texts=CLASSIC, vocab_size=264, special_tokens=[], callback=on_event)
    assert rust_merge_bytes(tok) == ref_merge_bytes(ref)
    assert seen == [(b"es", 9), (b"est", 9), (b"lo", 7), (b"low", 7), (b"ew", 6),
                    (b"new", 6), (b"newest", 6), (b"dest", 3)]


def test_min_frequency_and_max_token_length_by_hand() -> None:
    # Counts of the merges above: 9 9 7 7 6 6 6 3 -> min_frequency=7 keeps four.
    assert [ref_merge_bytes(train_bpe(CLASSIC, 300, min_frequency=7))[i][0] for i in range(4)] \
        == [b"e", b"es", b"l", b"lo"]
    assert len(train_bpe(CLASSIC, 300, min_frequency=7).merges) == 4
    # With tokens of at most 2 bytes: es 9, then (es, t) is too long; lo 7, then (lo, w) is
    # too long; ew 6 (101, 119) beats ne 6 (110, 101); then only 2-byte tokens can form.
    ref = train_bpe(CLASSIC, 300, max_token_length=2)
    assert [ref.vocab[i] for i in range(256, 259)] == [b"es", b"lo", b"ew"]
    assert all(len(b) <= 2 for b in ref.vocab.values())
    tok = ts.train(texts=CLASSIC, vocab_size=300, special_tokens=[], max_token_length=2)
    assert rust_merge_bytes(tok) == ref_merge_bytes(ref)


def test_small_steps() -> None:
    a = ord("a")
    assert merge_word((a, a, a), (a, a), 256) == (256, a)
    assert merge_word((a, a, a, a), (a, a), 256) == (256, 256)
    assert split_text("Hello, world!\n\n  x", patterns.GPT2) == [
        "Hello", ",", " world", "!", "\n\n ", " x"]
    assert "".join(split_text("it's 1234 中文😀  \n", patterns.CL100K)) == "it's 1234 中文😀  \n"
    # "Isolated": a gap between two matches is a piece too (here nothing matches "\x00").
    assert split_text("a\x00b", r"\p{L}") == ["a", "\x00", "b"]
    assert split_specials("x<a><ab>", ["<a>", "<ab>"]) == [
        ("x", False), ("<a>", True), ("<ab>", True)]
    # Overlapping pairs: "aaaa" holds (a, a) three times; after merging, (aa, aa) once.
    ref = train_bpe(["aaaa"], 258)
    assert ref.merges == [(a, a), (256, 256)]


def test_special_tokens_in_reference() -> None:
    ref = train_bpe(CLASSIC, 260, special_tokens=["<|endoftext|>", "<a>", "<a>"])
    assert ref.special_tokens == {"<|endoftext|>": 258, "<a>": 259}
    text = "low<|endoftext|>new<a>"
    assert ref.encode(text, allowed_special="all")[-1] == 259
    assert 258 in ref.encode(text, allowed_special={"<|endoftext|>"})
    assert 259 not in ref.encode(text, allowed_special={"<|endoftext|>"})
    assert ref.decode(ref.encode(text, allowed_special="all")) == text
    with pytest.raises(ValueError):
        train_bpe(CLASSIC, 257, special_tokens=["<a>", "<b>"])


# --- the reference against the Rust core --------------------------------------------


@st.composite
def training_options(draw: st.DrawFn) -> dict[str, Any]:
    specials = draw(st.sampled_from([(), SPECIALS[:1], SPECIALS]))
    return {
        "pattern": draw(st.sampled_from(["gpt4", "gpt2"])),
        "vocab_size": draw(st.integers(256 + len(specials), 400)),
        "min_frequency": draw(st.integers(0, 3)),
        "max_token_length": draw(st.none() | st.integers(2, 8)),
        "special_tokens": specials,
    }


@SETTINGS
@given(corpus=corpus_st, options=training_options(), probes=st.lists(texts_st, max_size=4))
def test_rust_and_reference_agree(
    corpus: list[str], options: dict[str, Any], probes: list[str]
) -> None:
    tok, ref = train_both(corpus, **options)
    assert rust_merge_bytes(tok) == ref_merge_bytes(ref)
    assert tok.vocab_size == len(ref.vocab)
    for i in range(256, tok.vocab_size):
        assert tok.id_to_bytes(i) == ref.vocab[i]
    for special, i in ref.special_tokens.items():
        assert tok.token_to_id(special) == i
    for text in [*probes, *corpus[:3], "".join(corpus)]:
        ids = tok.encode(text, disallowed_special=())
        assert ids == ref.encode(text)
        assert tok.decode(ids) == ref.decode(ids) == text


@SETTINGS
@given(corpus=corpus_st, vocab_size=st.integers(256, 320), text=texts_st)
def test_reference_round_trips(corpus: list[str], vocab_size: int, text: str) -> None:
    ref = train_bpe(corpus, vocab_size)
    ids = ref.encode(text)
    assert ref.decode(ids) == text
    assert len(ids) <= len(text.encode("utf-8"))
    assert all(0 <= i < len(ref.vocab) for i in ids)
