#!/usr/bin/env python3
"""Fuzz target: BERT ``vocab.txt`` through ``tokensmith.formats.bert.load`` (the loader
``tokensmith.load`` uses for a vocab.txt), from a file in a private temporary folder.

    python fuzz/fuzz_bert_vocab.py fuzz/seeds/bert_vocab
"""

from __future__ import annotations

import _common
from _common import Tokenizer
from tokensmith.formats import bert


def load(data: bytes) -> Tokenizer:
    path = _common.scratch_dir() / "vocab.txt"
    path.write_bytes(data)
    return bert.load(path)


def test_one_input(data: bytes) -> None:
    _common.run_loader(load, data)


if __name__ == "__main__":
    _common.main(test_one_input)
