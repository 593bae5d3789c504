"""``Tokenizer.hf()`` / ``ts.load(..., special_tokens="hf")``: the defaults of Hugging Face
``tokenizers`` (special-token text is the special token, ``decode`` drops special
tokens), checked against ``tokenizers`` on real files."""

from __future__ import annotations

import copy
import pickle

import pytest
import tokensmith as ts
from tokensmith.errors import ConfigError, DisallowedSpecialTokenError

from .conftest import asset

tokenizers = pytest.importorskip("tokenizers")

CASES = {
    "bert-base-uncased": ["[MASK] is [SEP] here [CLS]", "plain text, no specials", ""],
    "llama3": ["<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>",
               "no specials"],
    "t5": ["translate: hello </s> world <pad>", "x"],
}


@pytest.mark.parametrize("name", CASES)
def test_encode_and_decode_follow_tokenizers(name: str) -> None:
    path = asset(name, "tokenizer.json")
    ours = ts.load(path, special_tokens="hf")
    ref = tokenizers.Tokenizer.from_file(str(path))
    for text in CASES[name]:
        want = ref.encode(text)
        assert ours.encode(text) == want.ids, text
        assert ours.count(text) == len(want.ids)
        assert ours.encode_full(text).ids == want.ids
        assert ours.encode_batch([text, text]) == [want.ids, want.ids]
        assert ours.decode(want.ids) == ref.decode(want.ids), text
        assert ours.decode(want.ids, skip_special_tokens=False) == ref.decode(
            want.ids, skip_special_tokens=False)
        assert ours.decode_batch([want.ids]) == [ref.decode(want.ids)]


def test_the_view_shares_the_tokenizer_and_keeps_its_own_defaults() -> None:
    base = ts.load(asset("bert-base-uncased", "tokenizer.json"))
    view = base.hf()
    with pytest.raises(DisallowedSpecialTokenError):
        base.encode("[MASK]")  # tokensmith's (tiktoken's) default is unchanged
    assert view.encode("[MASK]") == [101, 103, 102]
    # a call may still say otherwise
    assert view.encode("[MASK]", allowed_special=set(), disallowed_special=()) == base.encode(
        "[MASK]", disallowed_special=())
    assert view.hf() is view and view.vocab_size == base.vocab_size
    for clone in (pickle.loads(pickle.dumps(view)), copy.deepcopy(view)):
        assert type(clone) is type(view) and clone.encode("[MASK]") == [101, 103, 102]
    assert "hf()" in repr(view)


def test_load_refuses_other_modes() -> None:
    with pytest.raises(ConfigError, match="special_tokens='transformers'"):
        ts.load(asset("gpt2", "tokenizer.json"), special_tokens="transformers")  # type: ignore[arg-type]
