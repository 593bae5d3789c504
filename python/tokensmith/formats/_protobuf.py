"""A small protobuf (proto2) reader and writer for SentencePiece's ``ModelProto``.

Written for tokensmith, without the protobuf package. Every message keeps the
fields it does not know, and the exact bytes of every field it read, so that
reading a file and writing it back gives the same bytes; fields changed or
added through the typed attributes are encoded canonically (fields in number
order, as protobuf writes them).

The wire format is read by the Rust core (``_core.proto_fields``, the reader
its own ``.model`` loader uses); this module decodes the fields by their kinds
and writes messages. Malformed input raises
:class:`~tokensmith.errors.TokenizerFormatError` with the path of the field
(``ModelProto.pieces[12].score``) and the byte offset.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any, ClassVar

from .. import _core
from ..errors import TokenizerFormatError

VARINT, I64, LEN, I32 = 0, 1, 2, 5
_WIRE_NAMES = {0: "varint", 1: "64-bit", 2: "length-delimited", 5: "32-bit"}

# field kinds
STRING, BYTES, BOOL, INT32, INT64, UINT64, ENUM, FLOAT = (
    "string", "bytes", "bool", "int32", "int64", "uint64", "enum", "float",
)
_FLOAT, _BITS32 = struct.Struct("<f"), struct.Struct("<I")
_WIRE_OF = {STRING: LEN, BYTES: LEN, BOOL: VARINT, INT32: VARINT, INT64: VARINT,
            UINT64: VARINT, ENUM: VARINT, FLOAT: I32}


def _err(where: str, offset: int, what: str) -> TokenizerFormatError:
    return TokenizerFormatError(f"{where} at byte {offset}: {what}")


def _varint(n: int) -> bytes:
    if n < 0:
        n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _tag(number: int, wire: int) -> bytes:
    return _varint((number << 3) | wire)


def _signed(n: int, bits: int) -> int:
    n &= (1 << bits) - 1
    return n - (1 << bits) if n >> (bits - 1) else n


class _Slot:
    """One field occurrence as read: its number, its bytes, and what it decoded to."""

    __slots__ = ("number", "wire", "raw", "name", "index", "value")

    def __init__(self, number: int, wire: int, raw: bytes, name: str | None,
                 index: int, value: Any) -> None:
        self.number = number
        self.wire = wire
        self.raw = raw
        self.name = name
        self.index = index
        self.value = value


class Message:
    """Base of the typed messages: ``FIELDS`` maps name -> (number, kind, repeated, default).

    ``kind`` is a scalar kind or a :class:`Message` subclass.
    """

    FIELDS: ClassVar[dict[str, tuple[int, Any, bool, Any]]] = {}
    _BY_NUMBER: ClassVar[dict[int, str]] = {}
    # number -> (name, kind, repeated), made by `_table` for each class (declared only)
    _TABLE: ClassVar[dict[int, tuple[str, Any, bool]]]

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        cls._BY_NUMBER = {spec[0]: name for name, spec in cls.FIELDS.items()}

    def __init__(self, **values: Any) -> None:
        object.__setattr__(self, "_slots", [])
        object.__setattr__(self, "_values", {})
        for k, v in values.items():
            setattr(self, k, v)

    # ------------------------------------------------------------ attributes
    def __getattr__(self, name: str) -> Any:
        spec = type(self).FIELDS.get(name)
        if spec is None:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}")
        values = self.__dict__["_values"]
        if name in values:
            return values[name]
        if spec[2]:  # repeated: an empty list that sticks
            values[name] = []
            return values[name]
        kind = spec[1]
        if isinstance(kind, type) and issubclass(kind, Message):
            return None
        return spec[3]

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in type(self).FIELDS:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}")
        if value is None:
            self.__dict__["_values"].pop(name, None)
        else:
            self.__dict__["_values"][name] = value

    def has(self, name: str) -> bool:
        """Whether the field is present (set, or read from the file)."""
        v = self.__dict__["_values"].get(name)
        return v is not None and (not type(self).FIELDS[name][2] or len(v) > 0)

    def __repr__(self) -> str:
        inner = ", ".join(
            f"{k}={v!r}" if not isinstance(v, list) or len(v) < 8 else f"{k}=[{len(v)} items]"
            for k, v in self.__dict__["_values"].items()
        )
        return f"{type(self).__name__}({inner})"

    @property
    def unknown_fields(self) -> list[tuple[int, int, bytes]]:
        """Fields this reader does not know, as (number, wire type, raw bytes)."""
        return [(s.number, s.wire, s.raw) for s in self.__dict__["_slots"] if s.name is None]

    # --------------------------------------------------------------- parsing
    @classmethod
    def parse(cls, data: bytes, where: str | None = None, base: int = 0) -> Message:
        """Decode ``data`` (offsets in errors are counted from ``base``)."""
        where = where or cls.__name__
        table = cls._table()
        msg = cls()
        slots: list[_Slot] = msg.__dict__["_slots"]
        values: dict[str, Any] = msg.__dict__["_values"]
        bad: TokenizerFormatError | None = None
        try:
            fields = _core.proto_fields(data, where, base)
        except TokenizerFormatError as e:
            # the fields before the malformed one are decoded first: an error in one
            # of them (a piece's bad UTF-8 ...) is earlier in the file, and raised
            fields, bad = getattr(e, "fields", []), e
        for number, wire, payload, start, end in fields:
            raw = data[start - base : end - base]
            entry = table.get(number)
            if entry is None:
                slots.append(_Slot(number, wire, raw, None, 0, None))
                continue
            name, kind, repeated = entry
            if repeated:
                items = values.get(name)
                if items is None:
                    items = values[name] = []
                index = len(items)
                value = _decode(kind, wire, payload, f"{where}.{name}[{index}]", start, end)
                items.append(value)
            else:
                index = 0
                value = _decode(kind, wire, payload, f"{where}.{name}", start, end)
                values[name] = value
            slots.append(_Slot(number, wire, raw, name, index, value))
        if bad is not None:
            raise bad
        return msg

    @classmethod
    def _table(cls) -> dict[int, tuple[str, Any, bool]]:
        t = cls.__dict__.get("_TABLE")
        if t is None:
            t = {spec[0]: (name, spec[1], spec[2]) for name, spec in cls.FIELDS.items()}
            cls._TABLE = t
        return t

    # ------------------------------------------------------------- writing
    def serialize(self) -> bytes:
        """The message's bytes: unchanged fields as read, the rest encoded canonically."""
        out = bytearray()
        values = self.__dict__["_values"]
        slots: list[_Slot] = self.__dict__["_slots"]
        last_index: dict[str, int] = {}
        for s in slots:
            if s.name is not None and type(self).FIELDS[s.name][2]:
                last_index[s.name] = max(last_index.get(s.name, -1), s.index)
        read_names = {s.name for s in slots if s.name is not None}
        # fields set through attributes and not read: written in number order
        pending = sorted(
            (n for n in values if n not in read_names), key=lambda n: type(self).FIELDS[n][0]
        )

        def emit_new(upto: int | None) -> None:
            while pending and (upto is None or type(self).FIELDS[pending[0]][0] <= upto):
                name = pending.pop(0)
                out.extend(self._encode_field(name, values[name]))

        for s in slots:
            if s.name is None:
                emit_new(s.number)
                out.extend(s.raw)
                continue
            emit_new(s.number)
            number, kind, repeated, _ = type(self).FIELDS[s.name]
            cur = values.get(s.name)
            if repeated:
                items = cur or []
                if s.index < len(items):
                    out.extend(self._encode_item(s, kind, number, items[s.index]))
                if s.index == last_index[s.name]:
                    for extra in items[s.index + 1 :]:
                        out.extend(_encode_one(number, kind, extra))
            else:
                if cur is not None:
                    out.extend(self._encode_item(s, kind, number, cur))
        emit_new(None)
        return bytes(out)

    def _encode_item(self, s: _Slot, kind: Any, number: int, value: Any) -> bytes:
        if isinstance(value, Message):
            body = value.serialize()
            fresh = _tag(number, LEN) + _varint(len(body)) + body
            return s.raw if s.raw == fresh else fresh
        if _same(kind, s.value, value):
            return s.raw
        return _encode_one(number, kind, value)

    def _encode_field(self, name: str, value: Any) -> bytes:
        number, kind, repeated, _ = type(self).FIELDS[name]
        if repeated:
            return b"".join(_encode_one(number, kind, v) for v in value)
        return _encode_one(number, kind, value)


def schema_fields(
    rows: list[tuple[str, int, str, bool, object]], messages: Mapping[str, Any]
) -> dict[str, tuple[int, Any, bool, Any]]:
    """A class's ``FIELDS`` from a schema's rows ``(name, number, kind, repeated, default)``
    (``_core.sentencepiece_schema()``); a kind that is not a scalar kind names a
    message, looked up in ``messages``."""
    return {
        name: (number, kind if kind in _WIRE_OF else messages[kind], repeated, default)
        for name, number, kind, repeated, default in rows
    }


def _same(kind: Any, a: Any, b: Any) -> bool:
    if kind == FLOAT:
        try:
            return struct.pack("<f", a) == struct.pack("<f", b)
        except (struct.error, TypeError):
            return False
    return type(a) is type(b) and a == b


def _decode(kind: Any, wire: int, payload: Any, where: str, at: int, end: int) -> Any:
    """Decode one field value (as ``_core.proto_fields`` gives it); the field is at
    ``at``, up to ``end`` (a length-delimited value is the bytes just before ``end``)."""
    if kind == FLOAT and wire == I32:
        return _FLOAT.unpack(_BITS32.pack(payload))[0]
    if isinstance(kind, type) and issubclass(kind, Message):
        if wire != LEN:
            raise _err(where, at, f"expected a message, found a {_WIRE_NAMES[wire]} value")
        return kind.parse(payload, where, end - len(payload))
    expected = _WIRE_OF[kind]
    if wire != expected:
        raise _err(where, at, f"expected a {_WIRE_NAMES[expected]} value, found a "
                   f"{_WIRE_NAMES.get(wire, str(wire))} one (corrupt file)")
    if kind == STRING:
        try:
            return payload.decode("utf-8")
        except UnicodeDecodeError as e:
            raise _err(where, end - len(payload) + e.start, "not valid UTF-8") from None
    if kind == BYTES:
        return payload
    if kind == BOOL:
        return payload != 0
    if kind in (INT32, ENUM):
        return _signed(payload, 64) if payload >> 63 else _signed(payload, 32)
    if kind == INT64:
        return _signed(payload, 64)
    return payload  # uint64


def _encode_one(number: int, kind: Any, value: Any) -> bytes:
    if isinstance(value, Message):
        body = value.serialize()
        return _tag(number, LEN) + _varint(len(body)) + body
    if kind == STRING:
        body = value.encode("utf-8")
        return _tag(number, LEN) + _varint(len(body)) + body
    if kind == BYTES:
        body = bytes(value)
        return _tag(number, LEN) + _varint(len(body)) + body
    if kind == FLOAT:
        return _tag(number, I32) + struct.pack("<f", value)
    if kind == BOOL:
        return _tag(number, VARINT) + _varint(1 if value else 0)
    return _tag(number, VARINT) + _varint(int(value))

