"""What a tokenizer file is, told from its first bytes, the name only a hint.

Files travel under names their format does not say: Mistral's SentencePiece models are
``tokenizer.model.v3`` or ``.v7``, Meta's Llama 3 ``tokenizer.model`` is a tiktoken rank
file. :func:`kind_of` reads the start of a file and names its format.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from ._gguf_io import MAGIC as GGUF_MAGIC

Kind = Literal[
    "json", "tiktoken", "sentencepiece", "gguf", "merges", "vocab-lines", "unknown"
]

HEAD_BYTES = 1 << 16
_RANK_LINE = re.compile(rb"[A-Za-z0-9+/]+={0,2} [0-9]+")


def kind_of(path: str | Path) -> Kind:
    """The format of the file at ``path``, from its first 64 KB."""
    with open(path, "rb") as f:
        return kind_of_bytes(f.read(HEAD_BYTES))


def kind_of_bytes(head: bytes) -> Kind:
    """The format of a file that starts with ``head`` (see :func:`kind_of`)."""
    if head[:4] == GGUF_MAGIC:
        return "gguf"
    if _is_sentencepiece(head):
        return "sentencepiece"
    text = head.removeprefix(b"\xef\xbb\xbf")
    if text.lstrip().startswith(b"{"):
        return "json"
    lines = [line.rstrip(b"\r") for line in text.split(b"\n")[:-1] or [text]]
    lines = [line for line in lines if line][:50]
    if not lines:
        return "unknown"
    if all(_RANK_LINE.fullmatch(line) for line in lines):
        return "tiktoken"
    if lines[0].startswith(b"#version") or all(line.count(b" ") == 1 for line in lines):
        return "merges"
    try:
        text.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(text) - 4:  # (not just a character cut by the 64 KB window)
            return "unknown"
    return "vocab-lines"


def _varint(data: bytes, k: int) -> tuple[int, int]:
    """The varint at ``data[k:]`` and the index after it; (-1, k) when there is none."""
    value = 0
    for shift in range(0, 35, 7):
        if k >= len(data):
            return -1, k
        value |= (data[k] & 0x7F) << shift
        k += 1
        if data[k - 1] < 0x80:
            return value, k
    return -1, k


def _is_sentencepiece(head: bytes) -> bool:
    """A SentencePiece ``ModelProto``: it opens with its first piece (field 1, a
    message), whose field 1 is the piece's text, followed by its score (field 2, a
    float), its type (field 3, a varint), or the end of the piece."""
    if not head.startswith(b"\x0a"):
        return False
    size, k = _varint(head, 1)
    if not 2 <= size < 1 << 20 or not head[k:k + 1] == b"\x0a":
        return False
    end = k + size
    length, k = _varint(head, k + 1)
    if length < 0 or k + length > end:
        return False
    k += length
    return k == end or head[k:k + 1] in (b"\x15", b"\x18")
