"""Streaming decode: one id at a time, never half a character, same text as decode()."""

from __future__ import annotations

import pytest
import tokensmith as ts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokensmith.streaming import StreamDecoder, stream_decode

from .adversarial import strings
from .conftest import asset

PIECES = [
    "😀", "👍🏽", "👨‍👩‍👧‍👦", "🇯🇵", "分词", "中文", "日本語", "한국어", "é", "e\u0301", "ß", "İ",
    "\u200d", "\ufffd", " ", "  ", "\n", "\t", "<|endoftext|>", "hello", " world", "1234567",
    "it's", "ไทย", "مرحبا", "𝔘𝔫𝔦", "\x00", "\r\n",
]
TEXTS = st.lists(
    st.one_of(st.sampled_from(PIECES), st.text(min_size=1, max_size=8)), max_size=25
).map("".join)
SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def streamed(tok: ts.Tokenizer, ids: list[int], skip: bool = False) -> list[str]:
    stream = tok.decode_stream(skip_special_tokens=skip)
    return [stream.step(i) for i in ids] + [stream.flush()]


@pytest.fixture(scope="module")
def cl100k() -> ts.Tokenizer:
    return ts.load(asset("cl100k_base", "cl100k_base.tiktoken"))


@pytest.fixture(scope="module")
def gpt2() -> ts.Tokenizer:
    return ts.load(asset("gpt2", "tokenizer.json"))


@pytest.fixture(scope="module")
def char_level() -> ts.Tokenizer:
    texts = [
        "the quick brown fox jumps over the lazy dog naïve café 分词 😀",
        "lower lowest newer newest wider widest it's they're",
    ] * 10
    return ts.train(
        texts=texts, vocab_size=300, byte_level=False, end_of_word_suffix="</w>",
        limit_alphabet=200, special_tokens=["<|endoftext|>"],
    )


@SETTINGS
@given(text=TEXTS)
def test_byte_level_round_trip(cl100k, text) -> None:
    ids = cl100k.encode(text, allowed_special="all")
    assert cl100k.decode_stream().byte_level
    for skip in (False, True):
        pieces = streamed(cl100k, ids, skip)
        assert "".join(pieces) == cl100k.decode(ids, skip_special_tokens=skip)
        for piece in pieces:  # never half a character: each piece is whole UTF-8 text
            piece.encode("utf-8")


@SETTINGS
@given(ids=st.lists(st.integers(0, 50256), max_size=40))
def test_any_ids_match_decode(gpt2, ids) -> None:
    """Random ids (partial characters, invalid UTF-8 …) decode exactly like decode()."""
    assert "".join(streamed(gpt2, ids)) == gpt2.decode(ids)


def test_adversarial_and_specials(cl100k, gpt2) -> None:
    for tok in (cl100k, gpt2):
        for text in strings():
            ids = tok.encode(text, allowed_special="all")
            assert "".join(streamed(tok, ids)) == tok.decode(ids)
            assert "".join(streamed(tok, ids, True)) == tok.decode(ids, skip_special_tokens=True)


def test_partial_characters_wait(cl100k) -> None:
    b = "😀".encode()  # four bytes: find one id per byte
    byte_ids = [_byte_id(cl100k, bytes([x])) for x in b]
    stream = cl100k.decode_stream()
    assert [stream.step(i) for i in byte_ids] == ["", "", "", "😀"]
    assert stream.flush() == ""
    # an unfinished character at the end comes out as U+FFFD, as decode() gives it
    assert stream.step(_byte_id(cl100k, b"a")) == "a"
    assert stream.step(byte_ids[0]) == ""
    assert stream.step(byte_ids[1]) == ""
    assert stream.flush() == "\ufffd" == cl100k.decode(byte_ids[:2])
    # a byte that cannot continue the character ends it as U+FFFD
    assert stream.step(byte_ids[0]) == ""
    assert stream.step(_byte_id(cl100k, b"x")) == "\ufffdx"
    assert stream.flush() == ""
    # a special token between bytes: exactly what decode() does with the whole list
    ids = [byte_ids[0], cl100k.special_tokens["<|endoftext|>"], *byte_ids[1:]]
    assert "".join(streamed(cl100k, ids)) == cl100k.decode(ids)
    skipped = cl100k.decode(ids, skip_special_tokens=True)
    assert "".join(streamed(cl100k, ids, True)) == "😀" == skipped


_SINGLE_BYTES: dict[int, dict[bytes, int]] = {}


def _byte_id(tok: ts.Tokenizer, raw: bytes) -> int:
    """The id of the token that is exactly the one byte ``raw``."""
    table = _SINGLE_BYTES.get(id(tok))
    if table is None:
        table = {}
        for i in range(tok.vocab_size):
            b = tok.id_to_bytes(i)
            if b is not None and len(b) == 1:
                table.setdefault(b, i)
        _SINGLE_BYTES[id(tok)] = table
    return table[raw]


def test_unknown_id(cl100k) -> None:
    stream = cl100k.decode_stream()
    assert stream.step(_byte_id(cl100k, "分".encode()[:1])) == ""
    for bad in (100256, 10**6, -1, 2**40):
        with pytest.raises(ts.UnknownIdError):
            stream.step(bad)
    with pytest.raises(KeyError):  # UnknownIdError is a KeyError too
        stream.step(100256)
    # the failed steps changed nothing: the held byte is still there
    rest = "分".encode()[1:]
    assert [stream.step(_byte_id(cl100k, bytes([x]))) for x in rest] == ["", "分"]
    with pytest.raises(ts.TokenizerError):
        stream.step("12")  # type: ignore[arg-type]


def test_helpers(cl100k) -> None:
    ids = cl100k.encode("héllo 😀 分词 world")
    pieces = list(stream_decode(cl100k, ids))
    assert "".join(pieces) == cl100k.decode(ids) and all(pieces)
    stream = StreamDecoder(cl100k)
    assert stream.feed(ids) + stream.flush() == cl100k.decode(ids)
    assert cl100k.decode_single_token_bytes(ids[0]) == cl100k.id_to_bytes(ids[0])
    assert cl100k.decode_single_token_bytes(100257) == b"<|endoftext|>"
    with pytest.raises(ts.UnknownIdError):
        cl100k.decode_single_token_bytes(100256)
    stream.step(ids[0])
    stream.reset()
    assert stream.flush() == ""


@SETTINGS
@given(text=TEXTS)
def test_char_level_bpe_fallback(char_level, text) -> None:
    """Not byte-level: an end-of-word suffix decoder, unknown characters, special tokens."""
    assert not char_level.is_byte_level
    ids = char_level.encode(text, allowed_special="all")
    stream = char_level.decode_stream()
    assert not stream.byte_level
    for skip in (False, True):
        assert "".join(streamed(char_level, ids, skip)) == char_level.decode(
            ids, skip_special_tokens=skip
        )


def test_char_level_pieces_arrive_word_by_word(char_level) -> None:
    ids = char_level.encode("the lazy dog")
    pieces = streamed(char_level, ids)
    assert "".join(pieces) == "the lazy dog" == char_level.decode(ids)
    assert pieces[0] == "the"  # no trailing space until the next word arrives
    with pytest.raises(ts.UnknownIdError):
        char_level.decode_stream().step(char_level.vocab_size + 3)


@pytest.mark.parametrize("name", ["llama2", "mistral"])
def test_byte_fallback_metaspace(name) -> None:
    """SentencePiece-style tokenizers: Metaspace + byte fallback (characters split in bytes)."""
    tok = ts.load(asset(name, "tokenizer.json"))
    assert not tok.decode_stream().byte_level
    texts = strings() + ["héllo 😀 分词 ١٢٣٤٥ ०१२ 𝔘𝔫𝔦 👍🏽👍🏿", "  two  spaces", "\u2003x"]
    for text in texts:
        ids = tok.encode(text)
        for skip in (False, True):
            pieces = streamed(tok, ids, skip)
            assert "".join(pieces) == tok.decode(ids, skip_special_tokens=skip), repr(text[:40])
    byte_ids = [tok.token_to_id(f"<0x{b:02X}>") for b in "😀".encode()]
    assert None not in byte_ids
    assert streamed(tok, byte_ids) == ["", "", "", "😀", ""]
    assert "".join(streamed(tok, byte_ids[:2])) == tok.decode(byte_ids[:2])


# ------------------------------------------------- SentencePiece decoder, byte fallback
SP_TEXTS = [
    "the quick brown fox jumps over the lazy dog naïve café 分词 😀 x y z",
    "lower lowest newer newest wider widest it's they're  two  spaces\n",
] * 10


@pytest.fixture(scope="module", params=["unigram", "sentencepiece-bpe"])
def sp_model(request) -> ts.Tokenizer:
    """A SentencePiece-style tokenizer (SentencePiece decoder: control tokens <s> </s>
    that decode to nothing, the dummy-prefix space dropped at the start of the text,
    byte fallback). The ``identity`` rule: the text reaches the byte pieces as it is
    (``nmt_nfkc`` would make U+FFFD and U+FEFF spaces)."""
    return ts.train(
        texts=SP_TEXTS, model=request.param, vocab_size=350, byte_fallback=True,
        remove_extra_whitespaces=False, hard_vocab_limit=False,
        normalization_rule_name="identity",
    )


def _sp_ids(tok: ts.Tokenizer, *parts: str | list[int]) -> list[int]:
    """Ids of pieces (``"▁"``, ``"<s>"``, ``"<0xEF>"`` …) and lists of ids."""
    ids: list[int] = []
    for part in parts:
        if isinstance(part, list):
            ids += part
        else:
            i = tok.token_to_id(part)
            assert i is not None, part
            ids.append(i)
    return ids


def test_space_after_a_control_token(sp_model) -> None:
    """The SentencePiece decoder drops the space of the first piece only while the
    text is empty (control tokens decode to nothing): after <s> in the middle of the
    text the space stays, as decode() keeps it."""
    tok = sp_model
    assert not tok.decode_stream().byte_level
    ids = tok.encode("y<s>z", allowed_special="all")
    assert tok.special_tokens["<s>"] in ids
    pieces = streamed(tok, ids)
    assert "".join(pieces) == tok.decode(ids) == "y z"
    assert "".join(streamed(tok, ids, True)) == tok.decode(ids, skip_special_tokens=True)
    y, z = tok.encode("y"), tok.encode("z")  # "▁" "y", "▁" "z"
    cases = [
        ["<s>", y, "</s>", "<s>", z],
        ["▁", "<s>", z],  # the dummy prefix, dropped; after it "▁z" keeps its space
        ["<s>", "</s>", "<s>", y],  # still the start of the text: no space
        [y, *["<s>", "</s>"] * 100, z],  # far from the text before
        [*["<s>"] * 40, "▁", *["</s>"] * 40, z],
        ["▁"] * 100 + [z],
        ["<s>", "▁", "<s>"] * 50 + [z],
    ]
    for parts in cases:
        ids = _sp_ids(tok, *parts)
        for skip in (False, True):
            assert "".join(streamed(tok, ids, skip)) == tok.decode(
                ids, skip_special_tokens=skip
            ), (parts[:6], skip)


def test_real_replacement_characters_in_byte_pieces(sp_model) -> None:
    """U+FFFD in the text is a character like any other: its three byte pieces
    (EF BF BD) give it as soon as the last one arrives, and however many there are,
    the character after them is never cut."""
    tok = sp_model
    fffd = _sp_ids(tok, "<0xEF>", "<0xBF>", "<0xBD>")
    assert tok.decode(fffd) == "\ufffd"
    assert streamed(tok, fffd) == ["", "", "\ufffd", ""]
    bom = _sp_ids(tok, "<0xEF>", "<0xBB>", "<0xBF>")
    emoji = _sp_ids(tok, *[f"<0x{b:02X}>" for b in "😀".encode()])
    for n in (1, 10, 11, 40):
        for tail in (bom, emoji, bom[:2], emoji[:3]):
            ids = fffd * n + tail
            assert "".join(streamed(tok, ids)) == tok.decode(ids), (n, tail)
    ids = fffd * 10 + bom
    assert tok.decode(ids) == "\ufffd" * 10 + "\ufeff"
    pieces = streamed(tok, ids)
    assert pieces == ["", "", "\ufffd"] * 10 + ["", "", "\ufeff", ""]
    # the same through encode(): byte fallback for characters not in the vocabulary
    text = "\ufffd" * 12 + "\ufeff x \ufffd😀\ufffd"
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert "".join(streamed(tok, ids)) == text
    # an invalid byte is final at once; a cut character comes out as decode() gives it
    bad = _sp_ids(tok, "<0xFF>")
    assert streamed(tok, bad + emoji) == ["\ufffd", "", "", "", "😀", ""]
    ids = emoji[:2] + bad + emoji
    assert "".join(streamed(tok, ids)) == tok.decode(ids) == "\ufffd" * 3 + "😀"


@SETTINGS
@given(data=st.data())
def test_sentencepiece_any_ids_match_decode(sp_model, data) -> None:
    """Any ids, in particular control tokens, spaces and byte pieces (real U+FFFD,
    cut and invalid characters) in any order: the stream gives decode()'s text."""
    tok = sp_model
    pieces = ["▁", "<s>", "</s>", "<unk>"] + [f"<0x{b:02X}>" for b in (
        0x20, 0x41, 0x80, 0x96, 0x9F, 0xA9, 0xBB, 0xBD, 0xBF, 0xC3, 0xE2, 0xEF, 0xF0, 0xFF)]
    chosen = st.one_of(
        st.sampled_from([tok.token_to_id(p) for p in pieces]),
        st.integers(0, tok.vocab_size - 1),
    )
    ids = data.draw(st.lists(chosen, max_size=60))
    for skip in (False, True):
        assert "".join(streamed(tok, ids, skip)) == tok.decode(ids, skip_special_tokens=skip)


@SETTINGS
@given(text=TEXTS)
def test_sentencepiece_text_round_trip(sp_model, text) -> None:
    ids = sp_model.encode(f"<s>{text}</s><s> {text}", allowed_special="all")
    for skip in (False, True):
        pieces = streamed(sp_model, ids, skip)
        assert "".join(pieces) == sp_model.decode(ids, skip_special_tokens=skip)
