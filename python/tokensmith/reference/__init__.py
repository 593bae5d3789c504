"""Small pure-Python implementations that define what the Rust core must compute.

They are slow on purpose: each step is a short function with a docstring, so they double
as an explanation of the algorithms: byte-level BPE (:mod:`.bpe`), parity-aware BPE
(:mod:`.parity`) and Unigram training (:mod:`.unigram`). Tests check that the Rust
core agrees with them.
"""

from __future__ import annotations

from . import parity, unigram
from .bpe import ReferenceBPE, count_words, split_text, train_bpe

__all__ = ["ReferenceBPE", "count_words", "parity", "split_text", "train_bpe", "unigram"]
