#!/usr/bin/env python3
"""Fuzz target: GPT-2's ``vocab.json`` + ``merges.txt`` through
``tokensmith.formats.gpt2.load_vocab_merges``, from files in a private temporary folder.

Input: the bytes of vocab.json, a NUL byte, the bytes of merges.txt (JSON text cannot
hold a raw NUL, so the first one is the boundary). With no NUL, merges.txt is empty.

    python fuzz/fuzz_gpt2_vocab_merges.py fuzz/seeds/gpt2_vocab_merges
"""

from __future__ import annotations

import _common
from _common import Tokenizer
from tokensmith.formats import gpt2

SEPARATOR = b"\x00"


def split(data: bytes) -> tuple[bytes, bytes]:
    vocab, _, merges = data.partition(SEPARATOR)
    return vocab, merges


def join(vocab: bytes, merges: bytes) -> bytes:
    """The fuzz input of a vocab.json + merges.txt pair (for the seed generator)."""
    return vocab + SEPARATOR + merges


def load(data: bytes) -> Tokenizer:
    vocab, merges = split(data)
    folder = _common.scratch_dir()
    (folder / "vocab.json").write_bytes(vocab)
    (folder / "merges.txt").write_bytes(merges)
    return gpt2.load_vocab_merges(folder / "vocab.json", folder / "merges.txt")


def test_one_input(data: bytes) -> None:
    _common.run_loader(load, data, round_trip=True)


if __name__ == "__main__":
    _common.main(test_one_input)
