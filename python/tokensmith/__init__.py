"""tokensmith: train, load, measure and extend subword tokenizers.

>>> import tokensmith as ts
>>> tok = ts.train(texts=["hello world"] * 10, vocab_size=300)
>>> tok.decode(tok.encode("hello world"))
'hello world'
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from . import errors, patterns
from ._loading import load
from ._operations import provide as _provide_operations
from ._version import __version__ as __version__
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
from .tokenizer import Encoding, Tokenizer

if TYPE_CHECKING:
    from . import compare, evaluate
    from ._train_sentencepiece import train_sentencepiece_bpe, train_unigram
    from ._train_wordlevel import train_wordlevel
    from ._train_wordpiece import train_wordpiece
    from .counts import WordCounts, count
    from .diagnostics import diagnose
    from .pretrained import PretrainedNotFoundError, UnknownEncodingError
    from .surgery.add import add_tokens, resize
    from .surgery.check import CompatibilityReport, check_compatible
    from .surgery.extend import extend
    from .surgery.merging import merge
    from .surgery.prune import IdMap, prune
    from .trainers import train, train_bpe

# Tokenizer.from_file, .save, .add_tokens … (formats and surgery import tokenizer.py)
_provide_operations()

# Imported on first use: loading and encoding need none of them, and
# `import tokensmith` is part of every cold start (name -> module).
_LAZY = {
    "train": ".trainers",
    "train_bpe": ".trainers",
    "train_wordpiece": "._train_wordpiece",
    "train_unigram": "._train_sentencepiece",
    "train_sentencepiece_bpe": "._train_sentencepiece",
    "train_wordlevel": "._train_wordlevel",
    "WordCounts": ".counts",
    "count": ".counts",
    "diagnose": ".diagnostics",
    "PretrainedNotFoundError": ".pretrained",
    "UnknownEncodingError": ".pretrained",
    "CompatibilityReport": ".surgery",
    "IdMap": ".surgery",
    "add_tokens": ".surgery",
    "check_compatible": ".surgery",
    "extend": ".surgery",
    "merge": ".surgery",
    "prune": ".surgery",
    "resize": ".surgery",
}
_LAZY_MODULES = ("compare", "evaluate")


def __getattr__(name: str) -> Any:
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    elif name in _LAZY_MODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | set(_LAZY_MODULES))

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
