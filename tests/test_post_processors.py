"""Post-processors against ``tokenizers``: templates that repeat, drop or leave out the
text, special-token ids the vocabulary does not have, and added tokens matched on
normalized text (what fuzzing found, made into differential tests)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import tokensmith as ts
from tokensmith.errors import TokenizerFormatError

tokenizers = pytest.importorskip("tokenizers")

VOCAB = {"[UNK]": 0, "a": 1, "b": 2, "[CLS]": 3, "[SEP]": 4}
TEXTS = ["a b", "b", "", "a a b [CLS] b"]


def _spec(single: list[Any], pair: list[Any] | None = None) -> dict[str, Any]:
    """A WordPiece tokenizer.json with a TemplateProcessing of these templates."""
    seq = {"Sequence": {"id": "A", "type_id": 0}}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": single,
            "pair": pair or [seq, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {
                name: {"id": name, "ids": [VOCAB[name]], "tokens": [name]}
                for name in ("[CLS]", "[SEP]")
            },
        },
        "decoder": None,
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": VOCAB},
    }


def A(type_id: int = 0) -> dict[str, Any]:  # noqa: N802 - the template's own name
    return {"Sequence": {"id": "A", "type_id": type_id}}


def special(name: str) -> dict[str, Any]:
    return {"SpecialToken": {"id": name, "type_id": 0}}


TEMPLATES = {
    "text twice": [A(), A()],
    "text twice, other type ids": [A(1), A(0)],
    "special then text twice": [special("[CLS]"), A(), A()],
    "only special tokens": [special("[CLS]"), special("[SEP]")],
    "empty": [],
    "usual": [special("[CLS]"), A(), special("[SEP]")],
}


@pytest.mark.parametrize("name", TEMPLATES)
@pytest.mark.parametrize("add", [True, False])
def test_template_ids_as_tokenizers(name: str, add: bool) -> None:
    text = json.dumps(_spec(TEMPLATES[name]))
    ours = ts.Tokenizer.from_str(text)
    theirs = tokenizers.Tokenizer.from_str(text)
    for t in TEXTS:
        want = theirs.encode(t, add_special_tokens=add)
        ids = ours.encode(t, add_special_tokens=add, disallowed_special=())
        assert ids == want.ids, (name, t)
        # every path agrees: count, batch, and the full encoding with its type ids
        assert ours.count(t, add_special_tokens=add, disallowed_special=()) == len(ids)
        assert ours.encode_batch([t, t], add_special_tokens=add,
                                 disallowed_special=()) == [ids, ids]
        full = ours.encode_full(t, add_special_tokens=add, disallowed_special=())
        assert (full.ids, full.type_ids) == (want.ids, want.type_ids), (name, t)


def test_single_template_with_the_pair_text_is_refused() -> None:
    # (tokenizers loads it and panics on the first encode)
    text = json.dumps(_spec([special("[CLS]"), {"Sequence": {"id": "B", "type_id": 0}}]))
    with pytest.raises(TokenizerFormatError, match=r"single.*\$B"):
        ts.Tokenizer.from_str(text)


@pytest.mark.parametrize("processor", [
    {"type": "BertProcessing", "sep": ["[SEP]", 4], "cls": ["[CLS]", 99]},
    {"type": "RobertaProcessing", "sep": ["[SEP]", 77], "cls": ["[CLS]", 3]},
    {"type": "Sequence", "processors": [
        {"type": "BertProcessing", "sep": ["[SEP]", 4], "cls": ["[CLS]", 1234]}]},
])
def test_post_processor_ids_must_be_in_the_vocabulary(processor: dict[str, Any]) -> None:
    spec = _spec([A()])
    spec["post_processor"] = processor
    with pytest.raises(TokenizerFormatError, match=r"post_processor: the special token .* has id"):
        ts.Tokenizer.from_str(json.dumps(spec))
    spec["post_processor"] = {"type": "BertProcessing", "sep": ["[SEP]", 4], "cls": ["[CLS]", 3]}
    assert ts.Tokenizer.from_str(json.dumps(spec)).encode("a") == [3, 1, 4]


def test_template_ids_must_be_in_the_vocabulary() -> None:
    spec = _spec([special("[CLS]"), A()])
    spec["post_processor"]["special_tokens"]["[CLS]"]["ids"] = [5000]
    with pytest.raises(TokenizerFormatError, match=r"\[CLS\].* has id 5000"):
        ts.Tokenizer.from_str(json.dumps(spec))
    # an added token is in the vocabulary too
    spec["added_tokens"] = [{"id": 5, "content": "[BOS]", "single_word": False, "lstrip": False,
                             "rstrip": False, "normalized": False, "special": True}]
    spec["post_processor"]["special_tokens"]["[CLS]"]["ids"] = [5]
    assert ts.Tokenizer.from_str(json.dumps(spec)).encode("a") == [5, 1]


@pytest.mark.parametrize("normalizer", [
    {"type": "Lowercase"},
    {"type": "Prepend", "prepend": "\u2581"},
])
def test_normalized_added_token_bytes_are_what_decode_gives(normalizer: dict[str, Any]) -> None:
    spec = _spec([A()])
    spec["normalizer"] = normalizer
    spec["added_tokens"] = [{"id": 5, "content": "Hello", "single_word": False, "lstrip": False,
                             "rstrip": False, "normalized": True, "special": False}]
    tok = ts.Tokenizer.from_str(json.dumps(spec))
    theirs = tokenizers.Tokenizer.from_str(json.dumps(spec))
    assert tok.decode([5]) == theirs.decode([5])
    assert tok.id_to_token(5) == theirs.id_to_token(5)
    assert tok.decode_single_token_bytes(5) == tok.decode([5]).encode()
