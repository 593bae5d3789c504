"""``tiktoken.registry``: encodings by name."""

from __future__ import annotations

from . import get_encoding, list_encoding_names

__all__ = ["get_encoding", "list_encoding_names"]
