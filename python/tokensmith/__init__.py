"""tokensmith: train, load, measure and extend subword tokenizers.

>>> import tokensmith as ts
>>> tok = ts.train(texts=["hello world"] * 10, vocab_size=300)
>>> tok.decode(tok.encode("hello world"))
'hello world'
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from . import compare, errors, evaluate, patterns
from ._loading import load
from ._operations import provide as _provide_operations
from ._version import __version__ as __version__
from .counts import WordCounts, count
from .diagnostics import diagnose
from .errors import (
    ChecksumError,
    CompatibilityError,
    ConfigError,
    CorpusEncodingError,
    CorpusError,
    DisallowedSpecialTokenError,
    EmptyCorpusError,
    InternalError,
    InvalidPatternError,
    PruneError,
    SurgeryError,
    TokenizerError,
    TokenizerFormatError,
    UnknownIdError,
    UnsupportedComponentError,
    VocabSizeError,
)
from .pretrained import PretrainedNotFoundError, UnknownEncodingError
from .surgery import (
    CompatibilityReport,
    IdMap,
    add_tokens,
    check_compatible,
    extend,
    merge,
    prune,
    resize,
)
from .tokenizer import Encoding, Tokenizer
from .trainers import train, train_bpe

if TYPE_CHECKING:
    from ._train_sentencepiece import train_sentencepiece_bpe, train_unigram
    from ._train_wordlevel import train_wordlevel
    from ._train_wordpiece import train_wordpiece

# Tokenizer.from_file, .save, .add_tokens … (formats and surgery import tokenizer.py)
_provide_operations()

# trainers imported on first use (they bring their formats' modules along)
_LAZY = {
    "train_wordpiece": "._train_wordpiece",
    "train_unigram": "._train_sentencepiece",
    "train_sentencepiece_bpe": "._train_sentencepiece",
    "train_wordlevel": "._train_wordlevel",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

# A forked child has no copy of the parent's worker threads: drop the pools so
# the child starts its own (multiprocessing and data loaders fork).
if hasattr(os, "register_at_fork"):
    from . import _core as _core_module

    os.register_at_fork(after_in_child=_core_module.after_fork)

__all__ = [
    "Encoding",
    "Tokenizer",
    "load",
    "train",
    "train_bpe",
    "train_wordpiece",
    "train_unigram",
    "train_sentencepiece_bpe",
    "train_wordlevel",
    "count",
    "WordCounts",
    "diagnose",
    "add_tokens",
    "extend",
    "prune",
    "merge",
    "resize",
    "check_compatible",
    "CompatibilityReport",
    "IdMap",
    "evaluate",
    "compare",
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
    "ChecksumError",
    "SurgeryError",
    "PruneError",
    "CompatibilityError",
    "InternalError",
    "PretrainedNotFoundError",
    "UnknownEncodingError",
]
