"""SentencePiece ``.model`` files.

A ``.model`` file is a protobuf ``ModelProto``: the pieces (string, score,
type), the trainer's settings (model type, byte fallback, the ids of
``<unk>``/``<s>``/``</s>``/``<pad>`` …) and the normalizer's (the compiled
normalization rules, ``add_dummy_prefix``, ``remove_extra_whitespaces``,
``escape_whitespaces``). :func:`read_model_proto` and :meth:`ModelProto.serialize`
read and write it without the protobuf package, keeping fields they do not
know, so that an unchanged model is written back byte for byte.

:func:`load` builds (in the Rust core) the tokenizer that encodes exactly as
the ``sentencepiece`` library does: ``tok.encode_ordinary(text) ==
sp.encode(text)`` and ``tok.decode(ids) == sp.decode(ids)``. Control pieces
(``<s>``, ``</s>`` …) and ``<unk>`` become special tokens; sentencepiece never
finds them in text, and neither does ``encode_ordinary``.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _core
from .._io import atomic_write
from ..errors import TokenizerFormatError, UnsupportedComponentError
from ._protobuf import Message, schema_fields

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer

__all__ = [
    "ModelProto",
    "SentencePiece",
    "TrainerSpec",
    "NormalizerSpec",
    "SelfTestData",
    "read_model_proto",
    "load",
    "loads",
    "save",
    "dumps",
    "to_model_proto",
]

# ModelProto.SentencePiece.Type
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
# TrainerSpec.ModelType
UNIGRAM, BPE, WORD, CHAR = 1, 2, 3, 4
MODEL_TYPE_NAMES = {UNIGRAM: "UNIGRAM", BPE: "BPE", WORD: "WORD", CHAR: "CHAR"}


# The messages' fields come from the core's schema of the format (src/formats/sp_schema.rs),
# the one its own reader uses; a message field's kind is the class of that name above it.
_SCHEMA = _core.sentencepiece_schema()


def _fields(message: str) -> dict[str, tuple[int, Any, bool, Any]]:
    return schema_fields(_SCHEMA[message], globals())


class SentencePiece(Message):
    FIELDS = _fields("SentencePiece")


class TrainerSpec(Message):
    FIELDS = _fields("TrainerSpec")


class NormalizerSpec(Message):
    FIELDS = _fields("NormalizerSpec")


class Sample(Message):
    FIELDS = _fields("Sample")


class SelfTestData(Message):
    FIELDS = _fields("SelfTestData")


class ModelProto(Message):
    FIELDS = _fields("ModelProto")


def read_model_proto(data: bytes) -> ModelProto:
    """Parse the bytes of a ``.model`` file."""
    if not data:
        raise TokenizerFormatError("the .model file is empty")
    proto = ModelProto.parse(bytes(data))
    assert isinstance(proto, ModelProto)
    if not proto.pieces:
        raise TokenizerFormatError(
            "ModelProto.pieces: no pieces (this is not a SentencePiece model, or it is truncated)"
        )
    for i, p in enumerate(proto.pieces):
        if not p.piece:
            raise TokenizerFormatError(f"ModelProto.pieces[{i}].piece: empty piece")
    return proto


def loads(data: bytes) -> Tokenizer:
    """A tokenizer from the bytes of a ``.model`` file.

    The file is read by the Rust core (the whole of it, in one call); the
    bytes are kept so that :func:`save` writes them back unchanged.
    """
    from ..tokenizer import Tokenizer

    raw = bytes(data)
    tok = Tokenizer(_core.Tokenizer.from_sentencepiece(raw))
    tok._sentencepiece_bytes = raw  # type: ignore[attr-defined]
    return tok


def load(path: str | os.PathLike[str]) -> Tokenizer:
    """A tokenizer from a SentencePiece ``.model`` file."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise TokenizerFormatError(f"{p}: cannot read: {e}") from None
    try:
        return loads(data)
    except TokenizerFormatError as e:
        raise type(e)(f"{p}: {e}") from None


def to_model_proto(tok: Tokenizer) -> ModelProto:
    """The ``ModelProto`` of a tokenizer loaded from a ``.model`` (the one read,
    unknown fields and all), or rebuilt from a ``tokenizer.json`` written from one."""
    from ._picky import refuse_picky

    refuse_picky(tok, "SentencePiece .model")
    raw = getattr(tok, "_sentencepiece_bytes", None)
    if isinstance(raw, bytes):
        return read_model_proto(raw)
    from .hf_json import document

    spec = document(tok)
    model = spec.get("model") or {}
    norm = spec.get("normalizer") or {}
    dec = spec.get("decoder") or {}
    if model.get("type") == "Unigram" and model.get("piece_types") is not None:
        vocab, ptypes = model["vocab"], model["piece_types"]
        rows = [(p, s, t) for (p, s), t in zip(vocab, ptypes, strict=True)]
        model_type = UNIGRAM
    elif model.get("type") == "BPE" and model.get("sentencepiece") is not None:
        rows = [tuple(r) for r in model["sentencepiece"]]
        model_type = BPE
    else:
        raise UnsupportedComponentError(
            "a .model file can be written for tokenizers read from a SentencePiece .model (or "
            "from a tokenizer.json that tokensmith wrote from one); this tokenizer's pipeline "
            "has no exact SentencePiece equivalent, save it as tokenizer.json"
        )
    if norm.get("type") != "SentencePiece":
        raise UnsupportedComponentError(
            "a .model file needs the SentencePiece normalizer; this tokenizer's normalizer is "
            f"{norm.get('type')!r}, save it as tokenizer.json"
        )
    pieces = [SentencePiece(piece=p, score=float(s), type=int(t)) for p, s, t in rows]

    def find(name: str) -> int:
        return next(
            (i for i, (p, _, t) in enumerate(rows) if p == name and t in (CONTROL, UNKNOWN)), -1
        )

    unk_id = next(i for i, (_, _, t) in enumerate(rows) if t == UNKNOWN)
    trainer = TrainerSpec(
        model_type=model_type,
        vocab_size=len(rows),
        treat_whitespace_as_suffix=bool(norm.get("treat_whitespace_as_suffix", False)),
        byte_fallback=bool(model.get("byte_fallback", False)),
        unk_id=unk_id,
        bos_id=find("<s>"),
        eos_id=find("</s>"),
        pad_id=find("<pad>"),
        unk_piece=rows[unk_id][0],
    )
    if dec.get("type") == "SentencePiece" and "unk_surface" in dec:
        trainer.unk_surface = dec["unk_surface"]
    charsmap = norm.get("precompiled_charsmap")
    normalizer = NormalizerSpec(
        name="identity" if not charsmap else "tokensmith",
        precompiled_charsmap=base64.b64decode(charsmap) if charsmap else b"",
        add_dummy_prefix=bool(norm.get("add_dummy_prefix", True)),
        remove_extra_whitespaces=bool(norm.get("remove_extra_whitespaces", True)),
        escape_whitespaces=bool(norm.get("escape_whitespaces", True)),
    )
    out = ModelProto(pieces=pieces, trainer_spec=trainer, normalizer_spec=normalizer)
    denorm = dec.get("denormalizer") if dec.get("type") == "SentencePiece" else None
    if denorm and denorm.get("precompiled_charsmap"):
        out.denormalizer_spec = NormalizerSpec(
            precompiled_charsmap=base64.b64decode(denorm["precompiled_charsmap"]),
            add_dummy_prefix=bool(denorm.get("add_dummy_prefix", True)),
            remove_extra_whitespaces=bool(denorm.get("remove_extra_whitespaces", True)),
            escape_whitespaces=bool(denorm.get("escape_whitespaces", True)),
        )
    return out


def dumps(tok: Tokenizer) -> bytes:
    """The bytes of the ``.model`` file of ``tok`` (see :func:`to_model_proto`): the
    file it was read from, unchanged, or one rebuilt from its pipeline."""
    raw = getattr(tok, "_sentencepiece_bytes", None)
    if isinstance(raw, bytes):
        return raw
    return to_model_proto(tok).serialize()


def save(tok: Tokenizer, path: str | os.PathLike[str]) -> Path:
    """Write a SentencePiece ``.model`` file (atomically)."""
    return atomic_write(path, dumps(tok))
