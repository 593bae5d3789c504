"""The GGUF container: read and write the metadata of a GGUF file, never its tensors.

A GGUF file (llama.cpp's model format) opens with the magic ``GGUF``, a version
(1, 2 or 3), the number of tensors and the number of metadata entries; then come the
entries (a key string, a value type, the value), then the tensor descriptions and the
weights. The tokenizer lives in the entries (``tokenizer.ggml.*``), so a reader stops
after them and a multi-gigabyte model costs only its metadata: the file is mapped,
not read, and the pages past the metadata are never touched.

Strings are a length and UTF-8 bytes; arrays an element type, a count and the
elements. Version 1 wrote lengths and counts as 32-bit numbers, later versions as
64-bit. Files written on big-endian machines hold every number big-endian; they are
recognised by their version field.
"""

from __future__ import annotations

import mmap
import os
import struct
from enum import IntEnum
from pathlib import Path
from typing import Any

from .._io import atomic_write
from ..errors import TokenizerFormatError

__all__ = ["GGUFType", "MAGIC", "read_metadata", "write_metadata"]

MAGIC = b"GGUF"


class GGUFType(IntEnum):
    """The value types of GGUF metadata."""

    UINT8 = 0
    INT8 = 1
    UINT16 = 2
    INT16 = 3
    UINT32 = 4
    INT32 = 5
    FLOAT32 = 6
    BOOL = 7
    STRING = 8
    ARRAY = 9
    UINT64 = 10
    INT64 = 11
    FLOAT64 = 12


_FORMAT: dict[int, str] = {
    GGUFType.UINT8: "B", GGUFType.INT8: "b", GGUFType.UINT16: "H", GGUFType.INT16: "h",
    GGUFType.UINT32: "I", GGUFType.INT32: "i", GGUFType.FLOAT32: "f", GGUFType.BOOL: "?",
    GGUFType.UINT64: "Q", GGUFType.INT64: "q", GGUFType.FLOAT64: "d",
}


class _Reader:
    """A cursor over the mapped file; every read checks that the bytes are there."""

    def __init__(self, data: mmap.mmap | bytes, path: str) -> None:
        self.data = data
        self.pos = 0
        self.path = path
        self.order = "<"
        self.wide = True  # 64-bit lengths and counts (versions 2 and 3)

    def fail(self, what: str) -> TokenizerFormatError:
        return TokenizerFormatError(f"{self.path}: {what} (GGUF, at byte {self.pos})")

    def take(self, n: int, what: str) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise self.fail(f"the file ends inside {what}: it looks truncated")
        chunk = self.data[self.pos:end]
        self.pos = end
        return chunk

    def number(self, code: str, what: str) -> Any:
        size = struct.calcsize(code)
        return struct.unpack(self.order + code, self.take(size, what))[0]

    def count(self, what: str) -> int:
        return int(self.number("Q" if self.wide else "I", what))

    def string(self, what: str) -> str:
        n = self.count(what)
        raw = self.take(n, what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise self.fail(f"{what} is not UTF-8 (byte {e.start} of the string)") from None

    def value(self, kind: int, key: str) -> Any:
        if kind == GGUFType.STRING:
            return self.string(f"the value of {key}")
        if kind == GGUFType.ARRAY:
            return self.array(key)
        code = _FORMAT.get(kind)
        if code is None:
            raise self.fail(f"{key} has value type {kind}, which GGUF does not define")
        return self.number(code, f"the value of {key}")

    def array(self, key: str) -> Any:
        kind = self.number("I", f"the element type of {key}")
        n = self.count(f"the length of {key}")
        if kind == GGUFType.STRING:
            # (each string costs at least its length field: a count beyond what the
            # file can hold is damage, refused before anything is allocated for it)
            if n * (8 if self.wide else 4) > len(self.data) - self.pos:
                raise self.fail(f"{key} claims {n} strings, more than the file holds")
            return [self.string(f"element {i} of {key}") for i in range(n)]
        if kind in (GGUFType.UINT8, GGUFType.INT8):
            return self.take(n, key)
        code = _FORMAT.get(kind)
        if code is None:
            raise self.fail(f"{key} is an array of type {kind}, which tokensmith does not read")
        raw = self.take(n * struct.calcsize(code), key)
        return list(struct.unpack(f"{self.order}{n}{code}", raw))


def read_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The metadata entries of the GGUF file at ``path``, key → value.

    Numbers come back as ``int``/``float``/``bool``, strings as ``str``, arrays of
    bytes (``UINT8``/``INT8``) as ``bytes`` and other arrays as lists. The tensors are
    not read. Damage (a wrong magic, an unknown version, a truncated entry, a string
    that is not UTF-8) raises :class:`~tokensmith.errors.TokenizerFormatError`.
    """
    p = Path(path)
    with open(p, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < 24:
            raise TokenizerFormatError(f"{p}: {size} bytes is too short for a GGUF file")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            # (slices of an mmap are copies: nothing keeps the mapping once it closes)
            return _parse(mapped, str(p))


def _parse(data: mmap.mmap | bytes, name: str) -> dict[str, Any]:
    r = _Reader(data, name)
    if r.take(4, "the magic") != MAGIC:
        raise r.fail("not a GGUF file (it does not start with 'GGUF')")
    version = r.number("I", "the version")
    if version not in (1, 2, 3):
        swapped = int.from_bytes(version.to_bytes(4, "little"), "big")
        if swapped not in (1, 2, 3):
            raise r.fail(f"GGUF version {version}; tokensmith reads versions 1 to 3")
        r.order, version = ">", swapped
    r.wide = version >= 2
    r.count("the tensor count")
    n = r.count("the metadata count")
    if n * 13 > len(data):  # (key length, type and a value of at least one byte)
        raise r.fail(f"the header claims {n} metadata entries, more than the file holds")
    meta: dict[str, Any] = {}
    for i in range(n):
        key = r.string(f"the key of metadata entry {i}")
        if key in meta:
            raise r.fail(f"the key {key!r} is there twice")
        kind = r.number("I", f"the type of {key}")
        meta[key] = r.value(kind, key)
    return meta


def write_metadata(
    path: str | os.PathLike[str], entries: list[tuple[str, GGUFType, Any]], *, version: int = 3
) -> Path:
    """Write a GGUF file with these metadata entries and no tensors (a vocab-only file).

    Each entry is ``(key, type, value)``; an array is ``(key, GGUFType.ARRAY,
    (element_type, values))``. The file is written whole or not at all.
    """
    out = bytearray(MAGIC)
    out += struct.pack("<IQQ", version, 0, len(entries))
    for key, kind, value in entries:
        _put_string(out, key)
        out += struct.pack("<I", kind)
        _put_value(out, GGUFType(kind), value, key)
    return atomic_write(path, bytes(out))


def _put_string(out: bytearray, s: str) -> None:
    raw = s.encode("utf-8")
    out += struct.pack("<Q", len(raw)) + raw


def _put_value(out: bytearray, kind: GGUFType, value: Any, key: str) -> None:
    if kind == GGUFType.STRING:
        _put_string(out, value)
    elif kind == GGUFType.ARRAY:
        elem, values = value
        elem = GGUFType(elem)
        if elem == GGUFType.ARRAY:
            raise ValueError(f"{key}: arrays of arrays are not written")
        out += struct.pack("<IQ", elem, len(values))
        if elem == GGUFType.STRING:
            for s in values:
                _put_string(out, s)
        else:
            out += struct.pack(f"<{len(values)}{_FORMAT[elem]}", *values)
    else:
        out += struct.pack("<" + _FORMAT[kind], value)
