#!/usr/bin/env python3
"""Fuzz target: ``tokenizer.json`` text through ``tokensmith.Tokenizer.from_str``.

Input: the bytes of a tokenizer.json file. Bytes that are not UTF-8 are decoded with
``surrogateescape`` (lone surrogates in a ``str``, as a caller may pass one).

    python fuzz/fuzz_tokenizer_json.py -dict=fuzz/dicts/tokenizer_json.dict \
        fuzz/seeds/tokenizer_json
"""

from __future__ import annotations

import _common
from _common import Tokenizer


def load(data: bytes) -> Tokenizer:
    text = data.decode("utf-8", "surrogateescape")
    return Tokenizer.from_str(text)


def test_one_input(data: bytes) -> None:
    _common.run_loader(load, data)


if __name__ == "__main__":
    _common.main(test_one_input)
