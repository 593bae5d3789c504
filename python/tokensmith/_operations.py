"""The operations behind :class:`~tokensmith.Tokenizer`'s file and vocabulary methods
(``from_file``, ``save``, ``save_vocab_merges``, ``add_tokens``, ``extend``, ``prune``,
``resize``), handed to :mod:`tokensmith.tokenizer` by the package's ``__init__``:
:mod:`tokensmith.formats` and :mod:`tokensmith.surgery` build tokenizers, so the
tokenizer module cannot import them (see :class:`tokensmith.tokenizer.Operations`)."""

from __future__ import annotations

from .formats import load_path, save_path
from .formats.gpt2 import save_vocab_merges
from .surgery import add_tokens, extend, prune, resize
from .tokenizer import Operations, provide_operations

__all__ = ["provide"]


def provide() -> None:
    """Give :class:`~tokensmith.Tokenizer` its file and vocabulary operations."""
    provide_operations(Operations(
        load_path=load_path, save_path=save_path, save_vocab_merges=save_vocab_merges,
        add_tokens=add_tokens, extend=extend, prune=prune, resize=resize,
    ))
