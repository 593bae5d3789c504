"""``tiktoken.core``: the :class:`Encoding` class."""

from __future__ import annotations

from . import Encoding

__all__ = ["Encoding"]
