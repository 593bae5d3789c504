"""Hostile files and arguments get typed errors, not an abort, a panic or a hang:
ids far beyond the vocabulary, long added tokens, sizes no trainer can hold,
scores that are not numbers."""

from __future__ import annotations

import json

import pytest
import tokensmith as ts
from tokensmith import errors
from tokensmith.formats import sentencepiece as spm

from .conftest import make_text


@pytest.fixture(scope="module")
def bpe_doc() -> dict:
    tok = ts.train(texts=[make_text(i) for i in range(10)], vocab_size=300)
    return json.loads(tok.to_str())


def test_isolated_huge_id_in_a_bpe_vocabulary(bpe_doc: dict) -> None:
    doc = json.loads(json.dumps(bpe_doc))
    doc["model"]["vocab"]["zzz"] = 1_000_000_000
    with pytest.raises(errors.TokenizerFormatError, match="1000000000.*twice the tokens"):
        ts.Tokenizer.from_str(json.dumps(doc))


def test_huge_added_token_id(bpe_doc: dict) -> None:
    doc = json.loads(json.dumps(bpe_doc))
    doc["added_tokens"].append({"id": 10**8, "content": "<big>", "single_word": False,
                                "lstrip": False, "rstrip": False, "normalized": False,
                                "special": True})
    with pytest.raises(errors.TokenizerFormatError, match="added_tokens.*<big>"):
        ts.Tokenizer.from_str(json.dumps(doc))


def test_ids_may_leave_gaps_within_the_limit(bpe_doc: dict) -> None:
    doc = json.loads(json.dumps(bpe_doc))
    doc["added_tokens"].append({"id": 5000, "content": "<apart>", "single_word": False,
                                "lstrip": False, "rstrip": False, "normalized": False,
                                "special": True})
    tok = ts.Tokenizer.from_str(json.dumps(doc))
    assert tok.vocab_size == 5001
    assert tok.encode("<apart>", allowed_special="all") == [5000]


def test_huge_special_id_for_a_rank_file() -> None:
    from tokensmith.formats import tiktoken

    data = "".join(f"{__import__('base64').b64encode(bytes([b])).decode()} {b}\n"
                   for b in range(256)).encode()
    with pytest.raises(errors.TokenizerFormatError, match="special_tokens"):
        tiktoken.loads(data, pattern="gpt2", special_tokens={"<|x|>": 4_000_000_000})


@pytest.mark.parametrize("content", ["x" * 10_000, "分" * 10_000])
def test_long_added_tokens_load_in_linear_time(bpe_doc: dict, content: str) -> None:
    doc = json.loads(json.dumps(bpe_doc))
    doc["normalizer"] = {"type": "BertNormalizer", "clean_text": True,
                         "handle_chinese_chars": True, "strip_accents": None,
                         "lowercase": True}
    doc["added_tokens"].append({"id": 300, "content": content, "single_word": False,
                                "lstrip": False, "rstrip": False, "normalized": True,
                                "special": False})
    # (10,000 CJK characters took 8 s to load when the automaton was a DFA,
    # growing with the square of the length; now milliseconds)
    tok = ts.Tokenizer.from_str(json.dumps(doc))
    # found whole, as `tokenizers` finds it: normalized the same way
    assert tok.encode("a " + content + " b").count(300) == 1


def test_a_token_of_a_megabyte(bpe_doc: dict) -> None:
    # a vocabulary entry looked up whole (ignore_merges, as Llama 3 does) and an added
    # token, each of 1 MB: no length field of the encoder overflows
    doc = json.loads(json.dumps(bpe_doc))
    long = "z" * (1 << 20)
    doc["model"]["ignore_merges"] = True
    doc["model"]["vocab"][long] = 300
    doc["added_tokens"].append({"id": 301, "content": "q" * (1 << 20), "single_word": False,
                                "lstrip": False, "rstrip": False, "normalized": False,
                                "special": False})
    tok = ts.Tokenizer.from_str(json.dumps(doc))
    text = long + " " + "q" * (1 << 20)
    ids = tok.encode(text)
    assert ids[0] == 300 and ids[-1] == 301
    assert tok.decode(ids) == text


@pytest.mark.parametrize("size", [10**10, 2**64])
def test_vocab_size_beyond_32_bit_ids(size: int) -> None:
    for model in ("bpe", "wordpiece", "unigram", "sentencepiece-bpe"):
        with pytest.raises(errors.VocabSizeError, match="32-bit"):
            ts.train(texts=["a b c"], model=model, vocab_size=size)


def test_huge_vocab_size_trains_what_the_text_supports() -> None:
    tok = ts.train(texts=["low lower lowest " * 10], vocab_size=10**9, special_tokens=[])
    assert 256 < tok.vocab_size < 300


@pytest.mark.parametrize("value", [2**64, -1, 1.5, True])
def test_min_frequency_out_of_range(value: object) -> None:
    with pytest.raises(errors.ConfigError, match="min_frequency"):
        ts.train(texts=["a b"], vocab_size=300, min_frequency=value)  # type: ignore[arg-type]


@pytest.mark.parametrize("score", [float("nan"), float("inf"), float("-inf")])
def test_model_scores_must_be_numbers(score: float) -> None:
    tok = ts.train(texts=[make_text(i) for i in range(10)], model="unigram", vocab_size=300)
    proto = spm.read_model_proto(spm.dumps(tok))
    proto.pieces[5].score = score
    name = proto.pieces[5].piece
    with pytest.raises(errors.TokenizerFormatError, match=f"pieces\\[5\\].score.*{name}"):
        spm.loads(proto.serialize())


def test_bpe_dropout_alpha_is_a_probability() -> None:
    tok = ts.train(texts=[make_text(i) for i in range(10)], model="sentencepiece-bpe",
                   vocab_size=300)
    with pytest.raises(errors.ConfigError, match="alpha"):
        tok._core.sample_encode("some text", -1, 1.5, 0)


def test_backtracking_regex_has_a_budget_per_call(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    script = (
        "import json, tokensmith as ts\n"
        "tok = ts.train(texts=['a b c'] * 10, vocab_size=260)\n"
        "doc = json.loads(tok.to_str())\n"
        "doc['pre_tokenizer'] = {'type': 'Split', 'pattern': {'Regex': '(a+)+(?=c)| '},\n"
        "                        'behavior': 'Isolated', 'invert': False}\n"
        "slow = ts.Tokenizer.from_str(json.dumps(doc))\n"
        "try:\n"
        "    slow.encode(('a' * 18 + ' ') * 1000)\n"
        "except ts.ConfigError as e:\n"
        "    print('refused:', e)\n"
    )
    # a budget of a tenth of a second: every piece backtracks 2**18 steps
    env = {**__import__("os").environ, "TOKENSMITH_REGEX_SECONDS": "0.1"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=600)
    assert "refused:" in out.stdout, out.stderr
    assert "(a+)+(?=c)" in out.stdout and "budget" in out.stdout
