"""Tokenizers pickle and deep-copy (through their tokenizer.json text), so spawn-based
multiprocessing, process pools and DataLoader-style workers get the same tokenizer."""

from __future__ import annotations

import copy
import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor

import pytest
import tokensmith as ts

from .conftest import asset, make_text

TEXTS = [make_text(i, 60) for i in range(8)] + ["<|endoftext|> 東京 😀", ""]


@pytest.fixture(scope="module")
def trained() -> ts.Tokenizer:
    return ts.train(texts=[make_text(i) for i in range(20)], vocab_size=400,
                    special_tokens=["<|endoftext|>"])


def _ids(tok: ts.Tokenizer) -> list[list[int]]:
    return [tok.encode(t, allowed_special="all") for t in TEXTS]


def _encode_in_child(tok: ts.Tokenizer) -> list[list[int]]:
    return _ids(tok)


def test_pickle_and_deepcopy_give_the_same_tokenizer(trained: ts.Tokenizer) -> None:
    for clone in (pickle.loads(pickle.dumps(trained)), copy.deepcopy(trained),
                  copy.copy(trained)):
        assert clone is not trained
        assert _ids(clone) == _ids(trained)
        assert clone.to_str() == trained.to_str()
        # the fast path and the special-token policy are made again
        with pytest.raises(ts.DisallowedSpecialTokenError):
            clone.encode("<|endoftext|>")


def test_files_keep_what_their_format_needs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rank_file = asset("gpt2", "r50k_base.tiktoken")
    tok = ts.load(rank_file)
    clone = pickle.loads(pickle.dumps(tok))
    assert _ids(clone) == _ids(tok)
    # (a rank file's pattern and special tokens go along: it saves as a rank file again)
    clone.save(tmp_path / "copy.tiktoken")
    assert (tmp_path / "copy.tiktoken").read_bytes() == rank_file.read_bytes()
    model = asset("sentencepiece-unigram", "test_model.model")
    sp = pickle.loads(pickle.dumps(ts.load(model)))
    sp.save(tmp_path / "copy.model")
    assert (tmp_path / "copy.model").read_bytes() == model.read_bytes()


def test_spawned_processes_encode_alike(trained: ts.Tokenizer) -> None:
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=spawn) as pool:
        results = list(pool.map(_encode_in_child, [trained, trained]))
    assert results == [_ids(trained), _ids(trained)]
