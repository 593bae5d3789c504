"""Drop-in facades with the APIs of other tokenizer libraries.

``from tokensmith.compat import tiktoken`` gives a module with tiktoken's
public API (``get_encoding``, ``encoding_for_model``, ``Encoding`` …) that
encodes with tokensmith's core, so code written for tiktoken runs unchanged.
"""

from __future__ import annotations

from . import tiktoken

__all__ = ["tiktoken"]
