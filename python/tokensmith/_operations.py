"""The operations behind :class:`~tokensmith.Tokenizer`'s file and vocabulary methods
(``from_file``, ``save``, ``save_vocab_merges``, ``add_tokens``, ``extend``, ``prune``,
``resize``), handed to :mod:`tokensmith.tokenizer` by the package's ``__init__``:
:mod:`tokensmith.formats` and :mod:`tokensmith.surgery` build tokenizers, so the
tokenizer module cannot import them (see :class:`tokensmith.tokenizer.Operations`).

Each operation imports its module on its first call: ``import tokensmith`` then
costs only what loading and encoding need (the surgery modules alone took
about as long to import as everything else together)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .tokenizer import Operations, provide_operations

if TYPE_CHECKING:
    from .surgery import IdMap
    from .tokenizer import Tokenizer

__all__ = ["provide"]


def _load_path(path: str | os.PathLike[str]) -> Tokenizer:
    from .formats import load_path

    return load_path(path)


def _save_path(*args: Any, **kwargs: Any) -> Path:
    from .formats import save_path

    return save_path(*args, **kwargs)


def _save_vocab_merges(tok: Tokenizer, directory: str | os.PathLike[str],
                       prefix: str | None) -> tuple[Path, Path]:
    from .formats.gpt2 import save_vocab_merges

    return save_vocab_merges(tok, directory, prefix)


def _add_tokens(*args: Any, **kwargs: Any) -> Tokenizer:
    from .surgery import add_tokens

    return add_tokens(*args, **kwargs)


def _extend(*args: Any, **kwargs: Any) -> Tokenizer:
    from .surgery import extend

    return extend(*args, **kwargs)


def _prune(*args: Any, **kwargs: Any) -> tuple[Tokenizer, IdMap]:
    from .surgery import prune

    return prune(*args, **kwargs)


def _resize(*args: Any, **kwargs: Any) -> Tokenizer:
    from .surgery import resize

    return resize(*args, **kwargs)


def provide() -> None:
    """Give :class:`~tokensmith.Tokenizer` its file and vocabulary operations."""
    provide_operations(Operations(
        load_path=_load_path, save_path=_save_path, save_vocab_merges=_save_vocab_merges,
        add_tokens=_add_tokens, extend=_extend, prune=_prune, resize=_resize,
    ))
