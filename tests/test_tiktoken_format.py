"""Reading and writing tiktoken rank files."""

from __future__ import annotations

import base64

import pytest
import tokensmith as ts
from tokensmith.errors import ConfigError, TokenizerFormatError, UnsupportedComponentError
from tokensmith.formats import tiktoken as tt

from .conftest import asset


def _ranks(tokens: list[bytes]) -> bytes:
    return b"".join(base64.b64encode(t) + b" %d\n" % i for i, t in enumerate(tokens))


BYTES = [bytes([b]) for b in range(256)]


def test_small_rank_file_encodes_like_tiktoken_rules() -> None:
    data = _ranks(BYTES + [b"ab", b"bc", b"abc", b" a"])
    tok = tt.loads(data, pattern="gpt2", special_tokens={"<|end|>": 260})
    # whole-piece lookup first, then lowest-rank merges
    assert tok.encode("abc") == [258]
    assert tok.encode("abcbc") == [258, 257]
    assert tok.encode(" abc") == [32, 258]  # "ab" (256) merges before " a" (259)
    assert tok.encode(" ax") == [259, ord("x")]
    assert tok.encode("x<|end|>", allowed_special="all") == [ord("x"), 260]
    assert tt.dumps(tok).encode() == data  # specials are not part of the rank file


def test_bad_rank_files() -> None:
    with pytest.raises(TokenizerFormatError) as e:
        tt.loads(_ranks(BYTES) + b"!!notbase64 256\n", pattern="gpt2")
    assert "line 257" in str(e.value)
    with pytest.raises(TokenizerFormatError) as e:
        tt.loads(_ranks(BYTES) + base64.b64encode(b"ab") + b" 255\n", pattern="gpt2")
    assert "twice" in str(e.value)
    with pytest.raises(TokenizerFormatError) as e:
        tt.loads(_ranks(BYTES) + base64.b64encode(b"ab") + b" 300\n", pattern="gpt2")
    assert "rank 256 is missing" in str(e.value)
    with pytest.raises(TokenizerFormatError) as e:
        tt.loads(_ranks(BYTES[:200]), pattern="gpt2")
    assert "0xC8" in str(e.value)
    with pytest.raises(TokenizerFormatError):
        tt.loads(b"YQ==\n", pattern="gpt2")
    with pytest.raises(ConfigError):
        tt.loads(_ranks(BYTES), pattern="gpt2", special_tokens={"<s>": 5})
    with pytest.raises(ConfigError):
        tt.loads(_ranks(BYTES), pattern="(bad")


def test_trained_tokenizer_is_not_silently_written_as_tiktoken(trained, tmp_path) -> None:
    with pytest.raises(UnsupportedComponentError) as e:
        trained.save(tmp_path / "x.tiktoken")
    assert "tokenizer.json" in str(e.value)
    assert not (tmp_path / "x.tiktoken").exists()


def test_unknown_rank_file_needs_a_pattern(tmp_path) -> None:
    p = tmp_path / "mine.tiktoken"
    p.write_bytes(_ranks(BYTES))
    with pytest.raises(TokenizerFormatError) as e:
        ts.load(p)
    assert "pattern" in str(e.value)


def test_cl100k_round_trips_through_both_formats(tmp_path) -> None:
    path = asset("cl100k_base", "cl100k_base.tiktoken")
    tok = ts.load(path)
    assert tok.vocab_size == 100277
    assert tok.special_tokens["<|endofprompt|>"] == 100276
    out = tok.save(tmp_path / "cl100k_base.tiktoken")
    assert out.read_bytes() == path.read_bytes()
    as_json = ts.load(tok.save(tmp_path / "tokenizer.json"))
    text = "Hello world 1234567  \n\n\tindented 分词 😀 it's"
    assert as_json.encode(text) == tok.encode(text)
    assert as_json.save(tmp_path / "again.tiktoken").read_bytes() == path.read_bytes()
