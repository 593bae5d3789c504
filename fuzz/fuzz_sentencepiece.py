#!/usr/bin/env python3
"""Fuzz target: SentencePiece ``.model`` bytes through
``tokensmith.formats.sentencepiece.loads`` (the Rust loader) and ``read_model_proto``
(the Python message classes, which ``save`` and vocabulary changes use; both read the
wire format with the core's protobuf reader).

    python fuzz/fuzz_sentencepiece.py fuzz/seeds/sentencepiece
"""

from __future__ import annotations

import _common
from _common import Tokenizer
from tokensmith.formats import sentencepiece as spm


def load(data: bytes) -> Tokenizer:
    try:
        proto = spm.read_model_proto(data)
    except _common.EXPECTED:
        proto = None
    if proto is not None:
        # the Python writer: what it writes reads back and is written again unchanged
        once = proto.serialize()
        assert spm.ModelProto.parse(once).serialize() == once, "serialize() is not stable"
    tok = spm.loads(data)
    if proto is not None:
        # a model that both readers accept: one id per piece
        pieces = len(proto.pieces)
        assert tok.vocab_size == pieces, f"{pieces} pieces, vocab_size {tok.vocab_size}"
    return tok


def test_one_input(data: bytes) -> None:
    _common.run_loader(load, data)


if __name__ == "__main__":
    _common.main(test_one_input)
