"""Decoding through the token-bytes table and the list fast path: the same
text and bytes as the references and as the general path, the same errors."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import tokensmith as ts
from tokensmith.errors import TokenIdTypeError, UnknownIdError

SHARED = Path(__file__).resolve().parents[2] / "shared"
CL100K = SHARED / "assets" / "cl100k_base" / "cl100k_base.tiktoken"
LLAMA3 = SHARED / "assets" / "llama3" / "tokenizer.json"
CORPUS = SHARED / "corpus"


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is not here (../shared/assets): the differential decode test needs it")
    return path


def _text(name: str, n: int = 300_000) -> str:
    path = _need(CORPUS / f"{name}.txt")
    return path.read_bytes()[:n].decode("utf-8", "ignore")


@pytest.fixture(scope="module")
def cl100k() -> ts.Tokenizer:
    return ts.load(_need(CL100K))


@pytest.mark.parametrize("corpus", ["en", "code", "zh", "ja"])
def test_corpus_decodes_to_itself_as_tiktoken_does(cl100k: ts.Tokenizer, corpus: str) -> None:
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is a test dependency")
    from tiktoken.load import load_tiktoken_bpe

    # (decoding does not use the pattern)
    enc = tiktoken.Encoding(
        name="cl100k",
        pat_str=r"\S+|\s+",
        special_tokens={},
        mergeable_ranks=load_tiktoken_bpe(str(CL100K)),
    )
    text = _text(corpus)
    ids = cl100k.encode(text, disallowed_special=())
    assert cl100k.decode(ids) == text == enc.decode(ids)
    assert cl100k.decode_bytes(ids) == text.encode() == enc.decode_bytes(ids)


def test_random_ids_decode_like_bytes_replace(cl100k: ts.Tokenizer) -> None:
    """Token bytes cut anywhere: the lossy text is bytes.decode('utf-8',
    'replace') of the raw bytes, and a list, a tuple and a generator agree."""
    rng = random.Random(7)
    for _ in range(3000):
        n = rng.randrange(0, 30)
        ids = [
            rng.randrange(100256) if rng.random() < 0.5 else rng.randrange(256) for _ in range(n)
        ]
        raw = b"".join(cl100k.decode_single_token_bytes(i) for i in ids)
        assert cl100k.decode_bytes(ids) == raw == cl100k.decode_bytes(tuple(ids))
        text = raw.decode("utf-8", "replace")
        assert cl100k.decode(ids) == text == cl100k.decode(tuple(ids)) == cl100k.decode(iter(ids))


def test_special_tokens_are_decoded_or_skipped(cl100k: ts.Tokenizer) -> None:
    eot = cl100k.special_tokens["<|endoftext|>"]
    ids = cl100k.encode("a<|endoftext|>b", allowed_special="all")
    assert eot in ids
    assert cl100k.decode(ids) == "a<|endoftext|>b"
    assert cl100k.decode_bytes(ids) == b"a<|endoftext|>b"
    hf = cl100k.hf()
    assert hf.decode(ids, skip_special_tokens=True) == "ab"
    assert hf.decode(ids, skip_special_tokens=False) == "a<|endoftext|>b"


def test_added_tokens_after_load_are_decoded(cl100k: ts.Tokenizer) -> None:
    grown = cl100k.add_tokens(["<tool>", "zzqx"], special=True)
    ids = grown.encode("x<tool>zzqx y", allowed_special="all")
    assert grown.token_to_id("<tool>") in ids and grown.token_to_id("zzqx") in ids
    assert grown.decode(ids) == "x<tool>zzqx y"
    assert grown.decode_bytes(ids) == b"x<tool>zzqx y"
    assert cl100k.decode(cl100k.encode("x y")) == "x y"  # the original's table is its own


@pytest.mark.parametrize(
    "bad, error",
    [
        ([1, -1], UnknownIdError),
        ([1, 2**40], UnknownIdError),
        ([10**6], UnknownIdError),
        ([1, "a"], TokenIdTypeError),
        ([1, 2.0], TokenIdTypeError),
        ([1, None], TokenIdTypeError),
    ],
)
def test_bad_ids_raise_typed_errors(cl100k: ts.Tokenizer, bad: list, error: type) -> None:
    with pytest.raises(error):
        cl100k.decode(bad)
    with pytest.raises(error):
        cl100k.decode_bytes(bad)


def test_empty_and_subclassed_lists(cl100k: ts.Tokenizer) -> None:
    class Ids(list):  # not exactly a list: the general path
        pass

    ids = cl100k.encode("hello world")
    assert cl100k.decode([]) == "" and cl100k.decode_bytes([]) == b""
    assert cl100k.decode(Ids(ids)) == "hello world" == cl100k.decode(ids)
    assert cl100k.decode([True]) == cl100k.decode([1])  # bools are ints, as before


@pytest.mark.parametrize("corpus", ["en", "code", "zh"])
def test_llama3_decodes_like_tokenizers(corpus: str) -> None:
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a test dependency")
    path = _need(LLAMA3)
    ref = tokenizers.Tokenizer.from_file(str(path))
    tok = ts.load(path)
    text = _text(corpus, 100_000)
    ids = ref.encode(text, add_special_tokens=False).ids
    assert tok.decode(ids) == ref.decode(ids, skip_special_tokens=False) == text
    assert tok.decode_bytes(ids) == text.encode()
    specials = ref.encode("<|begin_of_text|>hi<|eot_id|>", add_special_tokens=False).ids
    assert tok.decode(specials) == ref.decode(specials, skip_special_tokens=False)
