"""GGUF vocabularies: the container read without the weights, and each model type
encoding id for id like the reference library of the tokenizer it was converted from
(which llama.cpp's tokenizer reproduces; ``scripts/gguf_vs_llamacpp.py`` checks
llama.cpp itself where it is installed)."""

from __future__ import annotations

import struct
import unicodedata
import warnings
from pathlib import Path

import pytest
import tokensmith as ts
from tokensmith.errors import (
    DisallowedSpecialTokenError,
    PortabilityWarning,
    TokenizerFormatError,
    UnsupportedComponentError,
)
from tokensmith.formats import gguf
from tokensmith.formats._gguf_io import GGUFType as T
from tokensmith.formats._gguf_io import read_metadata, write_metadata

from . import _gguf_fixtures as F
from .adversarial import strings
from .conftest import asset, corpus_file

tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a reference library")
spm = pytest.importorskip("sentencepiece", reason="sentencepiece is a reference library")


def _texts(nfc: bool = False) -> list[str]:
    out: list[str] = []
    for name, size in (("en.txt", 40_000), ("code.txt", 30_000), ("zh.txt", 12_000),
                       ("ja.txt", 12_000)):
        text = corpus_file(name).read_text(encoding="utf-8")[:size]
        out += [text[i:i + 3000] for i in range(0, len(text), 3000)]
    out += strings() + ["", " ", "  leading and trailing  ", "a\n\n\tb", "x" * 500]
    return [unicodedata.normalize("NFC", t) for t in out] if nfc else out


def _gguf(tmp_path: Path, name: str, entries: list[F.Entry]) -> ts.Tokenizer:
    return ts.load(F.write(tmp_path / f"{name}.gguf", entries))


# -- the container ------------------------------------------------------------------

ALL_TYPES: list[F.Entry] = [
    ("u8", T.UINT8, 200), ("i8", T.INT8, -5), ("u16", T.UINT16, 60000), ("i16", T.INT16, -300),
    ("u32", T.UINT32, 4_000_000_000), ("i32", T.INT32, -7), ("f32", T.FLOAT32, 0.5),
    ("b", T.BOOL, True), ("s", T.STRING, "héllo ▁"), ("u64", T.UINT64, 2**60),
    ("i64", T.INT64, -(2**60)), ("f64", T.FLOAT64, 1e-300),
    ("strings", T.ARRAY, (T.STRING, ["", "a", "▁b"])), ("bytes", T.ARRAY, (T.UINT8, [0, 255])),
    ("floats", T.ARRAY, (T.FLOAT32, [1.5, -2.25])), ("ints", T.ARRAY, (T.INT32, [-1, 2])),
]


def test_metadata_round_trips_every_type(tmp_path: Path) -> None:
    meta = read_metadata(write_metadata(tmp_path / "m.gguf", ALL_TYPES))
    want = {k: v for k, _, v in ALL_TYPES}
    want.update(strings=["", "a", "▁b"], bytes=b"\x00\xff", floats=[1.5, -2.25], ints=[-1, 2])
    assert meta == want


def _v1_big_endian() -> bytes:
    """Version 1 (32-bit lengths) as a big-endian machine writes it."""
    def s(text: str) -> bytes:
        raw = text.encode()
        return struct.pack(">I", len(raw)) + raw
    out = b"GGUF" + struct.pack(">III", 1, 0, 2)
    out += s("name") + struct.pack(">I", T.STRING) + s("old")
    out += s("ids") + struct.pack(">II", T.ARRAY, T.INT32) + struct.pack(">Iii", 2, 7, 8)
    return out


def test_version_1_and_big_endian_files_are_read(tmp_path: Path) -> None:
    p = tmp_path / "old.gguf"
    p.write_bytes(_v1_big_endian())
    assert read_metadata(p) == {"name": "old", "ids": [7, 8]}


def test_damaged_files_raise_format_errors(tmp_path: Path) -> None:
    good = write_metadata(tmp_path / "g.gguf", ALL_TYPES).read_bytes()
    p = tmp_path / "bad.gguf"
    for cut in range(24, len(good)):  # every truncation inside the metadata
        p.write_bytes(good[:cut])
        with pytest.raises(TokenizerFormatError, match="truncated|more than the file"):
            read_metadata(p)
    cases = {
        b"GGUX" + good[4:]: "does not start with 'GGUF'",
        good[:4] + struct.pack("<I", 9) + good[8:]: "version 9",
        good[:4] + struct.pack("<IQQ", 3, 0, 10**12) + good[24:]: "more than the file holds",
        good[:8] + b"\0" * 8 + struct.pack("<Q", 1) + struct.pack("<Q", 2) + b"\xff\xfe":
            "not UTF-8",
    }
    for data, message in cases.items():
        p.write_bytes(data)
        with pytest.raises(TokenizerFormatError, match=message):
            read_metadata(p)


def test_the_weights_are_not_read(tmp_path: Path) -> None:
    """A 64 GB file (sparse: the tensors are holes) loads as fast as its metadata."""
    vocab = asset("bert-base-uncased", "vocab.txt")
    p = F.write(tmp_path / "big-model.bin", F.from_bert_vocab(vocab))
    with open(p, "r+b") as f:
        f.truncate(64 << 30)
    tok = ts.load(p)  # (told by its content: the name says nothing)
    assert tok.encode("hello world") == [101, 7592, 2088, 102]


# -- each model type against its reference ------------------------------------------

BPE_FILES = [
    ("gpt2", "gpt-2", {}),
    ("llama3", "llama-bpe", {"bos": 128000}),
    ("qwen2.5", "qwen2", {}),
    ("deepseek-v3", "deepseek-v3", {"bos": 0}),
]


@pytest.mark.parametrize(("folder", "pre", "ids"), BPE_FILES)
def test_gpt2_vocabularies_equal_tokenizers(tmp_path: Path, folder: str, pre: str,
                                            ids: dict[str, int]) -> None:
    path = asset(folder, "tokenizer.json")
    tok = _gguf(tmp_path, folder, F.from_bpe_json(path, pre) + F._ids(**ids))
    ref = tokenizers.Tokenizer.from_file(str(path))
    bos = [ids["bos"]] if pre in ("llama-bpe",) else []  # (llama.cpp's default for the name)
    # (Qwen2's tokenizer.json adds an NFC normalizer that llama.cpp does not run)
    # (`tokenizers` parses special tokens in any text: llama.cpp's parse_special)
    for text in _texts(nfc=folder == "qwen2.5"):
        want = ref.encode(text, add_special_tokens=False).ids
        assert tok.encode(text, allowed_special="all", add_special_tokens=False) == want, text[:60]
        assert tok.encode(text, allowed_special="all") == bos + want
        assert tok.decode(want) == ref.decode(want, skip_special_tokens=False)


def _derived(kind: str) -> ts.Tokenizer:
    """o200k (rank file) or tekken (mistral-common's file), as tokensmith loads them:
    exact against tiktoken and mistral-common (test_tiktoken_compat, test_tekken)."""
    if kind == "gpt-4o":
        return ts.load(asset("o200k_base", "o200k_base.tiktoken"))
    mistral_common = pytest.importorskip("mistral_common", reason="the tekken file's package")
    files = sorted((Path(mistral_common.__file__).parent / "data").glob("tekken_*.json"))
    if not files:
        pytest.skip("mistral-common ships no tekken file in this version")
    return ts.load(files[0])


@pytest.mark.parametrize(("pre", "ids"), [("gpt-4o", {}), ("tekken", {"bos": 1})])
def test_gpt2_vocabularies_from_rank_files(tmp_path: Path, pre: str, ids: dict[str, int]) -> None:
    source = _derived(pre)
    source.save(tmp_path / "source.json")
    tok = _gguf(tmp_path, pre, F.from_bpe_json(tmp_path / "source.json", pre) + F._ids(**ids))
    for text in _texts():
        # (llama.cpp's regex leaves marks out of words and takes any non-ASCII letter
        # for both cases: compare on text where that changes nothing)
        if any(unicodedata.category(c)[0] == "M" or (
                ord(c) > 127 and unicodedata.category(c) in ("Lu", "Ll", "Lt")) for c in text):
            continue
        # (both add BOS, or neither: llama.cpp's default for tekken, tekken's encode)
        want = source.encode(text, allowed_special="all")
        assert tok.encode(text, allowed_special="all") == want, text[:60]

    def parts(*pieces: str) -> list[int]:
        return [i for p in pieces for i in source.encode(p, add_special_tokens=False)]

    # the differences, as llama.cpp's tokenizer gives them
    assert tok.encode("REFER\u00caNCIA", add_special_tokens=False) == parts("REFER\u00ca", "NCIA")
    assert tok.encode("\u0645\u0627\u064b", add_special_tokens=False) == parts(
        "\u0645\u0627", "\u064b")


def test_llama_vocabulary_equals_sentencepiece(tmp_path: Path) -> None:
    model = asset("llama2", "tokenizer.model")
    tok = _gguf(tmp_path, "llama2", F.from_sentencepiece(model, "llama", bos=1, eos=2, unknown=0))
    ref = spm.SentencePieceProcessor(model_file=str(model))
    for text in _texts():
        want = ref.encode(text)
        assert tok.encode(text, disallowed_special=()) == [1] + want, text[:60]
        assert tok.decode(want) == ref.decode(want)
    # a special token in the text: llama.cpp parses it only when asked, and the text
    # after it gets its own leading space
    assert tok.encode("a</s>b", allowed_special="all") == [1, *ref.encode("a"), 2, *ref.encode("b")]
    with pytest.raises(DisallowedSpecialTokenError):
        tok.encode("a</s>b")


def test_t5_vocabulary_equals_sentencepiece(tmp_path: Path) -> None:
    model = asset("sentencepiece-unigram", "test_model.model")
    tok = _gguf(tmp_path, "t5", F.from_sentencepiece(model, "t5", eos=2, unknown=0))
    ref = spm.SentencePieceProcessor(model_file=str(model))
    for text in _texts():
        for line in text.splitlines()[:20]:
            want = ref.encode(line)
            assert tok.encode(line, disallowed_special=()) == want + [2], line[:60]


def test_bert_vocabulary_equals_tokenizers_and_follows_llama_cpp(tmp_path: Path) -> None:
    tok = _gguf(tmp_path, "bert", F.from_bert_vocab(asset("bert-base-uncased", "vocab.txt")))
    ref = tokenizers.Tokenizer.from_file(str(asset("bert-base-uncased", "tokenizer.json")))
    for text in _texts():
        # (llama.cpp strips every mark, where BERT strips Mn only, and keeps a Hangul
        # syllable's leading consonant alone: compare on text where the rules agree)
        nfd = unicodedata.normalize("NFD", text)
        if (max(map(len, text.split()), default=0) > 100
                or any("\uac00" <= c <= "\ud7a3" for c in text)
                or any(unicodedata.category(c) in ("Mc", "Me") for c in nfd)):
            continue
        assert tok.encode(text, allowed_special="all") == ref.encode(text).ids, text[:60]
    # the differences, as llama.cpp's tokenizer gives them
    assert tok.encode("오바 मा") == ref.encode("ᄋᄇ म").ids
    long_word = "a" * 150  # (no 100-character limit in llama.cpp)
    assert tok.encode(long_word, add_special_tokens=False) == [13360] + [11057] * 73 + [2050]


# -- settings and bad input ---------------------------------------------------------

def _tiny(model: str = "gpt2", **extra: object) -> list[F.Entry]:
    tokens = ["a", "b", "ab", "<|end|>", "<x>"]
    entries: list[F.Entry] = [
        ("tokenizer.ggml.model", T.STRING, model),
        ("tokenizer.ggml.pre", T.STRING, "gpt-2"),
        ("tokenizer.ggml.tokens", T.ARRAY, (T.STRING, tokens)),
        ("tokenizer.ggml.token_type", T.ARRAY, (T.INT32, [1, 1, 1, 3, 4])),
        ("tokenizer.ggml.merges", T.ARRAY, (T.STRING, ["a b"])),
    ]
    for k, v in extra.items():
        kind = T.BOOL if isinstance(v, bool) else T.STRING if isinstance(v, str) else T.UINT32
        entries = _with(entries, f"tokenizer.ggml.{k}", kind, v)
    return entries


def _with(entries: list[F.Entry], key: str, kind: T, value: object) -> list[F.Entry]:
    return [e for e in entries if e[0] != key] + [(key, kind, value)]


def _without(key: str) -> list[F.Entry]:
    return [e for e in _tiny() if e[0] != f"tokenizer.ggml.{key}"]


def test_special_and_user_defined_tokens(tmp_path: Path) -> None:
    tok = _gguf(tmp_path, "tiny", _tiny(add_bos_token=True, bos_token_id=3))
    assert tok.encode("abab") == [3, 2, 2]
    assert tok.encode("ab<x>b", add_special_tokens=False) == [2, 4, 1]  # always parsed
    assert tok.encode("a<|end|>", allowed_special="all", add_special_tokens=False) == [0, 3]


def test_unsupported_models_and_pre_tokenizers_are_named(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedComponentError, match="'rwkv'.*'llama'.*'gpt2'"):
        _gguf(tmp_path, "rwkv", _tiny("rwkv"))
    with pytest.raises(UnsupportedComponentError, match="'kimi-k2'.*llama-bpe"):
        _gguf(tmp_path, "kimi", _tiny(pre="kimi-k2"))
    assert "qwen2" in gguf.PRE_TOKENIZERS and "kimi-k2" not in gguf.PRE_TOKENIZERS


@pytest.mark.parametrize(("entries", "message"), [
    (_without("tokens"), "no tokenizer.ggml.tokens"),
    (_without("merges"), "no tokenizer.ggml.merges"),
    (_tiny(add_bos_token=True), "add_bos_token is true, but tokenizer.ggml.bos_token_id"),
    (_with(_tiny(), "tokenizer.ggml.token_type", T.ARRAY, (T.INT32, [1, 1])),
     "2 entries for 5 tokens"),
    (_with(_tiny(), "tokenizer.ggml.tokens", T.ARRAY, (T.STRING, ["a", "a"])),
     "duplicate token in vocabulary: 'a' has ids 0 and 1"),
    (_with(_tiny(), "tokenizer.ggml.merges", T.ARRAY, (T.STRING, ["ab"])),
     "'ab' is not 'left right'"),
    (_with(_tiny(), "tokenizer.ggml.model", T.UINT32, 3), "tokenizer.ggml.model is a int"),
    (_tiny() + [("tokenizer.ggml.pre", T.STRING, "gpt-2")], "'tokenizer.ggml.pre' is there twice"),
])
def test_bad_metadata_raises_format_errors(tmp_path: Path, entries: list[F.Entry],
                                           message: str) -> None:
    with pytest.raises(TokenizerFormatError, match=message):
        _gguf(tmp_path, "bad", entries)


def test_a_file_without_a_tokenizer_is_refused(tmp_path: Path) -> None:
    p = write_metadata(tmp_path / "weights.gguf", [("general.architecture", T.STRING, "llama")])
    with pytest.raises(TokenizerFormatError, match="weights.gguf: no tokenizer.ggml.model"):
        ts.load(p)


def test_gguf_tokenizers_save_as_json_that_tokenizers_reads(tmp_path: Path) -> None:
    """The pipelines built for GGUF files (llama.cpp's regex forms, its BERT cleaning,
    the SentencePiece normalizer) are written with components `tokenizers` has."""
    source = _derived("gpt-4o").save(tmp_path / "o200k.json")
    entries = {
        "gpt-4o": F.from_bpe_json(source, "gpt-4o"),
        "bert": F.from_bert_vocab(asset("bert-base-uncased", "vocab.txt")),
        "t5": F.from_sentencepiece(asset("sentencepiece-unigram", "test_model.model"), "t5",
                                   eos=2, unknown=0),
    }
    lines = [line for text in _texts() for line in text.split("\n") if line][:400]
    lines += ["REFER\u00caNCIA \u0645\u0627\u064b", "\uc624\ubc14 \u092e\u093e"]
    for name, made in entries.items():
        tok = _gguf(tmp_path, name, made)
        path = tmp_path / f"{name}-tokenizer.json"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PortabilityWarning)  # (t5: its character map)
            tok.save(path)
        ref = tokenizers.Tokenizer.from_file(str(path))
        for line in lines:
            assert ref.encode(line).ids == tok.encode(line, allowed_special="all"), line[:60]
