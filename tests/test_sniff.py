"""Files are told by their content, the name only a hint: Mistral's ``tokenizer.model.v3``,
Meta's Llama 3 ``tokenizer.model`` (a tiktoken rank file), renamed files of every format."""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import pytest
import tokensmith as ts
from tokensmith.errors import TokenizerFormatError, UnsupportedComponentError
from tokensmith.formats import sentencepiece as spfmt
from tokensmith.formats import tiktoken as ttfmt
from tokensmith.formats.sniff import kind_of, kind_of_bytes

from .conftest import asset, make_text

TEXTS = [make_text(i, 80) for i in range(20)] + ["東京 😀 don't\n\n  x", ""]
# a rank file of the 256 bytes (what every byte-level vocabulary starts with)
BYTE_RANKS = "".join(f"{base64.b64encode(bytes([b])).decode()} {b}\n" for b in range(256))


@pytest.fixture(scope="module")
def trained() -> ts.Tokenizer:
    return ts.train(texts=[make_text(i) for i in range(30)], vocab_size=400,
                    special_tokens=["<|endoftext|>"])


@pytest.fixture(scope="module")
def unigram() -> ts.Tokenizer:
    return ts.train(texts=[make_text(i) for i in range(30)], model="unigram", vocab_size=300)


def test_each_format_is_told_by_its_bytes(tmp_path: Path, trained: ts.Tokenizer,
                                          unigram: ts.Tokenizer) -> None:
    trained.save(tmp_path / "tokenizer.json")
    unigram.save(tmp_path / "u.model")
    (tmp_path / "r.tiktoken").write_text(BYTE_RANKS, encoding="utf-8")
    assert kind_of(tmp_path / "tokenizer.json") == "json"
    assert kind_of(tmp_path / "u.model") == "sentencepiece"
    assert kind_of(tmp_path / "r.tiktoken") == "tiktoken"
    assert kind_of_bytes(b"#version: 0.2\nh e\nhe llo\n") == "merges"
    assert kind_of_bytes(b"[PAD]\n[UNK]\nthe\n##s\n") == "vocab-lines"
    assert kind_of_bytes(b"\x00\x01\x02\xff\xfe garbage \x80\x81" * 40) == "unknown"
    assert kind_of_bytes(b"") == "unknown"


def test_renamed_files_load(tmp_path: Path, trained: ts.Tokenizer, unigram: ts.Tokenizer) -> None:
    json_path = trained.save(tmp_path / "tokenizer.json")
    shutil.copy(json_path, tmp_path / "weights.bin")
    model = unigram.save(tmp_path / "u.model")
    shutil.copy(model, tmp_path / "tokenizer.model.v7")
    for path, like in ((tmp_path / "weights.bin", trained),
                       (tmp_path / "tokenizer.model.v7", unigram)):
        tok = ts.load(path)
        assert [tok.encode(t, disallowed_special=()) for t in TEXTS] == [
            like.encode(t, disallowed_special=()) for t in TEXTS]


def test_unknown_rank_file_says_what_it_needs(tmp_path: Path) -> None:
    (tmp_path / "ranks.txt").write_text(BYTE_RANKS, encoding="utf-8")
    with pytest.raises(TokenizerFormatError, match=r"ranks\.txt.*holds only ranks.*pattern="):
        ts.load(tmp_path / "ranks.txt")
    # given them, it loads
    tok = ttfmt.load(tmp_path / "ranks.txt", pattern="gpt2")
    assert tok.encode("hi") == [ord("h"), ord("i")]


def test_not_a_tokenizer_is_refused_by_content(tmp_path: Path) -> None:
    garbage = b"\x00\x01\x02\xff\xfe\x80" * 100
    (tmp_path / "weights.bin").write_bytes(garbage)
    with pytest.raises(UnsupportedComponentError, match="told by their content"):
        ts.load(tmp_path / "weights.bin")
    # a plain text file is no vocabulary unless its name or its lines say so
    (tmp_path / "notes.txt").write_text("hello\nworld\n")
    with pytest.raises(UnsupportedComponentError, match="told by their content"):
        ts.load(tmp_path / "notes.txt")
    # content that says nothing under a telling name: that format's reader explains
    (tmp_path / "tokenizer.model").write_bytes(garbage)
    with pytest.raises(TokenizerFormatError, match="ModelProto"):
        ts.load(tmp_path / "tokenizer.model")
    (tmp_path / "tokenizer_config.json").write_text('{"model_max_length": 8}')
    with pytest.raises(TokenizerFormatError, match="load the tokenizer.json"):
        ts.load(tmp_path / "tokenizer_config.json")


def test_openai_rank_file_under_another_name_is_known_by_its_hash(tmp_path: Path) -> None:
    src = asset("cl100k_base", "cl100k_base.tiktoken")
    shutil.copy(src, tmp_path / "ranks.bin")
    tok, ref = ts.load(tmp_path / "ranks.bin"), ts.load(src)
    assert tok.vocab_size == ref.vocab_size == 100277
    assert tok.encode("<|endoftext|> hi", allowed_special="all") == ref.encode(
        "<|endoftext|> hi", allowed_special="all")


def test_mistral_style_model_v3_is_sentencepiece(tmp_path: Path) -> None:
    sentencepiece = pytest.importorskip("sentencepiece")
    src = asset("mistral", "tokenizer.model")
    shutil.copy(src, tmp_path / "tokenizer.model.v3")
    tok = ts.load(tmp_path / "tokenizer.model.v3")
    ref = sentencepiece.SentencePieceProcessor(model_file=str(src))
    for text in TEXTS:
        assert tok.encode(text, add_special_tokens=False) == ref.encode(text)
    assert spfmt.dumps(tok) == src.read_bytes()


def test_llama3_tokenizer_model_is_a_rank_file_with_its_special_tokens(tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    model = asset("llama3", "tokenizer.model")
    ref = tokenizers.Tokenizer.from_file(str(asset("llama3", "tokenizer.json")))
    texts = TEXTS + ["<|begin_of_text|>hi<|eot_id|>", "<|start_header_id|>user<|end_header_id|>"]
    # alone (the release's names), and beside its tokenizer_config.json (the folder's names)
    alone = tmp_path / "tokenizer.model"
    shutil.copy(model, alone)
    for tok in (ts.load(alone), ts.load(model)):
        assert tok.vocab_size == ref.get_vocab_size() == 128256
        for text in texts:
            assert tok.encode(text, allowed_special="all") == ref.encode(
                text, add_special_tokens=False).ids
        assert tok.decode(tok.encode(texts[-1], allowed_special="all")) == texts[-1]
