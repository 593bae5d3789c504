#!/usr/bin/env python3
"""Fuzz target: ``.tiktoken`` rank files through ``tokensmith.formats.tiktoken.loads``
with the cl100k split pattern and one special token, ``<|endoftext|>``, whose id is the
number of lines (just past the ranks, where tiktoken's encodings put theirs).

    python fuzz/fuzz_tiktoken.py fuzz/seeds/tiktoken
"""

from __future__ import annotations

import _common
from _common import Tokenizer
from tokensmith.formats import tiktoken


def load(data: bytes) -> Tokenizer:
    specials = {"<|endoftext|>": len(data.splitlines())}
    tok = tiktoken.loads(data, pattern="cl100k", special_tokens=specials)
    # a rank file that loads is written back as the same ranks
    try:
        ranks = tiktoken.dumps(tok).encode()
    except _common.EXPECTED as e:
        raise AssertionError(f"a rank file loaded but dumps() refuses it: {e}") from e
    try:
        again = tiktoken.loads(ranks, pattern="cl100k", special_tokens=specials)
    except _common.EXPECTED as e:
        raise AssertionError(f"the rank file dumps() wrote does not load: {e}") from e
    assert again.get_vocab() == tok.get_vocab(), "dumps() then loads() changed the vocabulary"
    return tok


def test_one_input(data: bytes) -> None:
    _common.run_loader(load, data, round_trip=True)


if __name__ == "__main__":
    _common.main(test_one_input)
