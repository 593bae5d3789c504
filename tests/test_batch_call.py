"""``tok(texts, padding=..., truncation=..., max_length=...)`` against ``tokenizers`` with
padding and truncation enabled: the same ids, attention masks and type ids."""

from __future__ import annotations

import pytest
import tokensmith as ts
from tokensmith.errors import ConfigError, UnknownOptionError

from .conftest import asset, make_text

tokenizers = pytest.importorskip("tokenizers")

TEXTS = [make_text(i, 40 + 25 * i) for i in range(6)] + ["", "short", "[MASK] hi [SEP] x"]
PAIRS = [make_text(i + 20, 10 + 40 * (i % 3)) for i in range(len(TEXTS))]


def _reference(path: str, max_length: int | None, pad: tuple[int, str] | None,
               multiple: int | None = None, side: str = "right"):  # type: ignore[no-untyped-def]
    ref = tokenizers.Tokenizer.from_file(path)
    if max_length is not None:
        ref.enable_truncation(max_length=max_length)
    if pad is not None:
        ref.enable_padding(pad_id=pad[0], pad_token=pad[1], pad_to_multiple_of=multiple,
                           direction=side)
    return ref


@pytest.mark.parametrize("max_length", [None, 8, 17, 64])
@pytest.mark.parametrize("pairs", [False, True])
def test_bert_batches_as_tokenizers(max_length: int | None, pairs: bool) -> None:
    path = str(asset("bert-base-uncased", "tokenizer.json"))
    tok = ts.load(path)
    ref = _reference(path, max_length, (0, "[PAD]"))
    inputs = list(zip(TEXTS, PAIRS, strict=True)) if pairs else TEXTS
    want = ref.encode_batch(inputs)
    got = tok(TEXTS, PAIRS if pairs else None, padding=True,
              truncation=max_length is not None, max_length=max_length)
    assert got["input_ids"] == [e.ids for e in want]
    assert got["attention_mask"] == [e.attention_mask for e in want]
    if pairs:
        assert got["token_type_ids"] == [e.type_ids for e in want]


@pytest.mark.parametrize("side", ["right", "left"])
def test_padding_options_as_tokenizers(side: str) -> None:
    path = str(asset("gpt2", "tokenizer.json"))
    tok = ts.load(path)
    ref = _reference(path, 20, (50256, "<|endoftext|>"), multiple=8, side=side)
    want = ref.encode_batch(TEXTS)
    got = tok(TEXTS, padding=True, truncation=True, max_length=20, pad_to_multiple_of=8,
              padding_side=side, pad_token="<|endoftext|>")
    assert got.input_ids == [e.ids for e in want]
    assert got.attention_mask == [e.attention_mask for e in want]


def test_numpy_and_single_texts() -> None:
    np = pytest.importorskip("numpy")
    tok = ts.load(asset("bert-base-uncased", "tokenizer.json"))
    batch = tok(["a b c", "a"], padding="max_length", max_length=8, return_tensors="np")
    assert batch["input_ids"].shape == (2, 8) and batch["input_ids"].dtype == np.int64
    assert batch["attention_mask"].sum(axis=1).tolist() == [5, 3]
    one = tok("hello world")
    assert one["input_ids"] == tok.encode("hello world")
    assert one["attention_mask"] == [1] * len(one["input_ids"])
    assert "token_type_ids" not in one and "token_type_ids" in tok("a", "b")


def test_bad_calls_are_refused() -> None:
    tok = ts.train(texts=[make_text(i) for i in range(10)], vocab_size=300)
    with pytest.raises(ConfigError, match="no pad token"):
        tok(["a", "a b c"], padding=True)
    with pytest.raises(ConfigError, match="truncation needs max_length"):
        tok("a", truncation=True)
    with pytest.raises(UnknownOptionError, match="did you mean max_length="):
        tok("a", max_len=3)
    with pytest.raises(ConfigError, match="2 texts but 1 pair"):
        tok(["a", "b"], ["c"])
