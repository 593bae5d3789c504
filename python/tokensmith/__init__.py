"""tokensmith: train, load, measure and extend subword tokenizers.

>>> import tokensmith as ts
>>> tok = ts.train(texts=["hello world"] * 10, vocab_size=300)
>>> tok.decode(tok.encode("hello world"))
'hello world'
"""

from __future__ import annotations

import os

from . import errors, patterns
from .errors import (
    ConfigError,
    CorpusEncodingError,
    CorpusError,
    DisallowedSpecialTokenError,
    EmptyCorpusError,
    InvalidPatternError,
    TokenizerError,
    TokenizerFormatError,
    UnknownIdError,
    UnsupportedComponentError,
    VocabSizeError,
)
from .tokenizer import Encoding, Tokenizer
from .trainers import train, train_bpe

__version__ = "0.1.0"

__all__ = [
    "Encoding",
    "Tokenizer",
    "load",
    "train",
    "train_bpe",
    "errors",
    "patterns",
    "TokenizerError",
    "ConfigError",
    "InvalidPatternError",
    "VocabSizeError",
    "TokenizerFormatError",
    "UnsupportedComponentError",
    "UnknownIdError",
    "DisallowedSpecialTokenError",
    "CorpusError",
    "CorpusEncodingError",
    "EmptyCorpusError",
]


def load(path: str | os.PathLike[str]) -> Tokenizer:
    """Load a tokenizer: a ``tokenizer.json`` file, a ``vocab.json``/``merges.txt``
    pair, or a folder holding either."""
    return Tokenizer.from_file(path)
