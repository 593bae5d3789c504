"""One protobuf reader and one schema for SentencePiece ``.model`` files: the Rust
core's (``_core.proto_fields``, ``_core.sentencepiece_schema``), which Python's
message classes read through and are built from."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokensmith import _core
from tokensmith.errors import TokenizerFormatError
from tokensmith.formats import sentencepiece as spfmt
from tokensmith.formats._protobuf import _tag, _varint
from tokensmith.formats.sniff import kind_of

from .conftest import ASSETS


def _fail(data: bytes, where: str, base: int) -> str:
    with pytest.raises(TokenizerFormatError) as e:
        _core.proto_fields(data, where, base)
    return str(e.value)


def test_proto_fields_reads_each_wire_type() -> None:
    data = (b"\x08\x96\x01" + b"\x11" + bytes(range(1, 9)) + b"\x1a\x03abc"
            + b"\x25\x00\x00\x80\x3f")
    assert _core.proto_fields(data, "M", 10) == [
        (1, 0, 150, 10, 13),
        (2, 1, 0x0807060504030201, 13, 22),
        (3, 2, b"abc", 22, 27),
        (4, 5, 0x3F800000, 27, 32),
    ]
    assert _core.proto_fields(b"", "M", 0) == []


def test_proto_fields_errors_name_the_path_and_the_offset() -> None:
    assert _fail(b"\x0a\x05ab", "ModelProto", 0) == (
        "ModelProto.pieces[0] at byte 2: length 5 runs past the end (2 bytes left; "
        "the file is truncated or corrupt)"
    )
    # a piece read from byte 1000 of a file, its score cut short
    assert _fail(b"\x0a\x01a\x15\x00", "ModelProto.pieces[12]", 1000) == (
        "ModelProto.pieces[12].score at byte 1004: truncated 32-bit value"
    )
    assert _fail(b"\x0a\x00\x0a\x00\x0b", "ModelProto", 7) == (
        "ModelProto.pieces[2] at byte 11: unsupported wire type 3 (corrupt file)"
    )
    assert _fail(b"\x08\x01\x02", "ModelProto.trainer_spec", 0) == (
        "ModelProto.trainer_spec at byte 2: field number 0 (corrupt file)"
    )
    assert _fail(b"\x18" + b"\xff" * 10 + b"\x01", "ModelProto.trainer_spec", 0) == (
        "ModelProto.trainer_spec.model_type at byte 1: varint longer than 10 bytes "
        "(corrupt file)"
    )
    # outside the schema, fields are named by number
    assert _fail(b"\x10", "Other", 3) == (
        "Other.<field 2> at byte 4: truncated varint (the file is cut short or corrupt)"
    )


def _tiny_model() -> bytes:
    proto = spfmt.ModelProto(pieces=[
        spfmt.SentencePiece(piece="<unk>", score=0.0, type=spfmt.UNKNOWN),
        spfmt.SentencePiece(piece="a", score=-1.0),
        spfmt.SentencePiece(piece="b", score=-2.0),
    ])
    return proto.serialize()


def test_nested_errors_keep_file_offsets() -> None:
    data = _tiny_model()
    good = spfmt.read_model_proto(data)
    assert [p.piece for p in good.pieces] == ["<unk>", "a", "b"]
    at = data.index(b"\x0a\x01b")  # pieces[2].piece
    bad = data[:at + 2] + b"\xff" + data[at + 3:]
    with pytest.raises(TokenizerFormatError) as e:
        spfmt.read_model_proto(bad)
    assert str(e.value) == f"ModelProto.pieces[2].piece at byte {at + 2}: not valid UTF-8"
    cut = data[:at] + b"\x0a\x7fb" + data[at + 3:]
    with pytest.raises(TokenizerFormatError, match=rf"ModelProto\.pieces\[2\]\.piece at byte "
                                                   rf"{at + 2}: length 127 runs past the end"):
        spfmt.read_model_proto(cut)
    # the Rust loader reads through the same reader: the same error
    with pytest.raises(TokenizerFormatError, match=rf"ModelProto\.pieces\[2\]\.piece at byte "
                                                   rf"{at + 2}: length 127 runs past the end"):
        spfmt.loads(cut)


def test_a_cut_varint_in_a_piece_is_placed_in_the_file() -> None:
    head = spfmt.ModelProto(pieces=[spfmt.SentencePiece(piece="<unk>", type=spfmt.UNKNOWN)])
    body = b"\x0a\x01a\x18\x80"  # piece "a", type: a varint cut short
    data = head.serialize() + _tag(1, 2) + _varint(len(body)) + body
    want = (f"ModelProto.pieces[1].type at byte {len(data) - 1}: truncated varint "
            "(the file is cut short or corrupt)")  # (the Python reader said "at byte 4")
    for read in (spfmt.read_model_proto, spfmt.loads):
        with pytest.raises(TokenizerFormatError) as e:
            read(data)
        assert str(e.value) == want


def test_an_error_in_an_earlier_field_comes_before_a_cut_after_it() -> None:
    data = _tiny_model()
    at = data.index(b"\x0a\x01a")  # pieces[1].piece
    bad = data[:at + 2] + b"\xff" + data[at + 3:] + b"\x0a\x7f"  # and a cut at the end
    for read in (spfmt.read_model_proto, spfmt.loads):
        with pytest.raises(TokenizerFormatError) as e:
            read(bad)
        assert str(e.value) == f"ModelProto.pieces[1].piece at byte {at + 2}: not valid UTF-8"
    with pytest.raises(TokenizerFormatError) as e:
        _core.proto_fields(bad, "ModelProto", 0)
    assert str(e.value).startswith(f"ModelProto.pieces[3] at byte {len(bad)}: length 127")
    assert [f[0] for f in e.value.fields] == [1, 1, 1]  # type: ignore[attr-defined]


def test_unknown_fields_and_raw_bytes_survive_a_round_trip() -> None:
    data = _tiny_model() + _tag(99, 1) + bytes(8) + _tag(98, 5) + bytes(4)
    proto = spfmt.read_model_proto(data)
    assert proto.unknown_fields == [(99, 1, _tag(99, 1) + bytes(8)),
                                    (98, 5, _tag(98, 5) + bytes(4))]
    assert proto.serialize() == data
    # a non-canonical varint (0x81 0x00 for 1) is read, and written back as it was
    body = b"\x0a\x01x" + b"\x18\x81\x00"
    odd = data + _tag(1, 2) + _varint(len(body)) + body
    proto = spfmt.read_model_proto(odd)
    assert (proto.pieces[3].piece, proto.pieces[3].type) == ("x", spfmt.NORMAL)
    proto.pieces[0].score = -0.5
    again = proto.serialize()
    assert again.endswith(body) and spfmt.read_model_proto(again).pieces[0].score == -0.5


# The FIELDS the classes had as literals before they were built from the core's schema.
_FROZEN: dict[str, dict[str, tuple[int, str, bool, object]]] = {
    "SentencePiece": {
        "piece": (1, "string", False, ""),
        "score": (2, "float", False, 0.0),
        "type": (3, "enum", False, 1),
    },
    "TrainerSpec": {
        "input": (1, "string", True, None),
        "input_format": (7, "string", False, ""),
        "model_prefix": (2, "string", False, ""),
        "model_type": (3, "enum", False, 1),
        "vocab_size": (4, "int32", False, 8000),
        "accept_language": (5, "string", True, None),
        "self_test_sample_size": (6, "int32", False, 0),
        "enable_differential_privacy": (50, "bool", False, False),
        "differential_privacy_noise_level": (51, "float", False, 0.0),
        "differential_privacy_clipping_threshold": (52, "uint64", False, 0),
        "character_coverage": (10, "float", False, 0.9995),
        "input_sentence_size": (11, "uint64", False, 0),
        "shuffle_input_sentence": (19, "bool", False, True),
        "mining_sentence_size": (12, "int32", False, 0),
        "training_sentence_size": (13, "int32", False, 0),
        "seed_sentencepiece_size": (14, "int32", False, 1000000),
        "shrinking_factor": (15, "float", False, 0.75),
        "max_sentence_length": (18, "int32", False, 4192),
        "num_threads": (16, "int32", False, 16),
        "num_sub_iterations": (17, "int32", False, 2),
        "max_sentencepiece_length": (20, "int32", False, 16),
        "split_by_unicode_script": (21, "bool", False, True),
        "split_by_number": (23, "bool", False, True),
        "split_by_whitespace": (22, "bool", False, True),
        "treat_whitespace_as_suffix": (24, "bool", False, False),
        "allow_whitespace_only_pieces": (26, "bool", False, False),
        "split_digits": (25, "bool", False, False),
        "pretokenization_delimiter": (53, "string", False, ""),
        "control_symbols": (30, "string", True, None),
        "user_defined_symbols": (31, "string", True, None),
        "required_chars": (36, "string", False, ""),
        "byte_fallback": (35, "bool", False, False),
        "vocabulary_output_piece_score": (32, "bool", False, True),
        "hard_vocab_limit": (33, "bool", False, True),
        "use_all_vocab": (34, "bool", False, False),
        "unk_id": (40, "int32", False, 0),
        "bos_id": (41, "int32", False, 1),
        "eos_id": (42, "int32", False, 2),
        "pad_id": (43, "int32", False, -1),
        "unk_piece": (45, "string", False, "<unk>"),
        "bos_piece": (46, "string", False, "<s>"),
        "eos_piece": (47, "string", False, "</s>"),
        "pad_piece": (48, "string", False, "<pad>"),
        "unk_surface": (44, "string", False, " \u2047 "),
        "train_extremely_large_corpus": (49, "bool", False, False),
        "seed_sentencepieces_file": (54, "string", False, ""),
    },
    "NormalizerSpec": {
        "name": (1, "string", False, ""),
        "precompiled_charsmap": (2, "bytes", False, b""),
        "add_dummy_prefix": (3, "bool", False, True),
        "remove_extra_whitespaces": (4, "bool", False, True),
        "escape_whitespaces": (5, "bool", False, True),
        "normalization_rule_tsv": (6, "string", False, ""),
    },
    "Sample": {
        "input": (1, "string", False, ""),
        "expected": (2, "string", False, ""),
    },
    "SelfTestData": {"samples": (1, "Sample", True, None)},
    "ModelProto": {
        "pieces": (1, "SentencePiece", True, None),
        "trainer_spec": (2, "TrainerSpec", False, None),
        "normalizer_spec": (3, "NormalizerSpec", False, None),
        "self_test_data": (4, "SelfTestData", False, None),
        "denormalizer_spec": (5, "NormalizerSpec", False, None),
    },
}


def _strict(spec: tuple[int, object, bool, object]) -> tuple[object, ...]:
    """A field's spec with its kind by name and its default's type (``0 == 0.0 == False``)."""
    number, kind, repeated, default = spec
    name = kind.__name__ if isinstance(kind, type) else kind
    return number, name, repeated, type(default), default


@pytest.mark.parametrize("name", list(_FROZEN))
def test_fields_built_from_the_schema_are_the_former_literals(name: str) -> None:
    cls = getattr(spfmt, name)
    assert list(cls.FIELDS) == list(_FROZEN[name])  # (same order, too)
    assert {k: _strict(v) for k, v in cls.FIELDS.items()} == {
        k: _strict(v) for k, v in _FROZEN[name].items()
    }
    for field, (_, kind, _, _) in cls.FIELDS.items():
        if isinstance(kind, type):
            assert kind is getattr(spfmt, _FROZEN[name][field][1])
    assert cls._BY_NUMBER == {spec[0]: f for f, spec in _FROZEN[name].items()}


def test_the_schema_has_these_messages_only() -> None:
    assert set(_core.sentencepiece_schema()) == set(_FROZEN)


def _model_files() -> list[Path]:
    """The SentencePiece models among the assets (Llama 3 ships a tiktoken
    rank file named ``tokenizer.model``: told by content, left out)."""
    if not ASSETS.is_dir():
        return []
    found = {p for pattern in ("*.model", "*.model.v*") for p in ASSETS.rglob(pattern)}
    return sorted(p for p in found if kind_of(p) == "sentencepiece")


@pytest.mark.parametrize("path", _model_files() or [None],
                         ids=lambda p: str(p.relative_to(ASSETS)) if p else "none")
def test_every_model_file_reads_and_writes_back_byte_for_byte(path: Path | None) -> None:
    if path is None:
        pytest.skip(f"no .model files under {ASSETS}: ../shared/assets is absent or empty, "
                    "the round trip of real models is NOT tested")
    data = path.read_bytes()
    proto = spfmt.read_model_proto(data)
    assert proto.serialize() == data
    assert spfmt.ModelProto.parse(data).serialize() == data
    assert spfmt.loads(data).vocab_size == len(proto.pieces)
    assert proto.trainer_spec is not None and proto.normalizer_spec is not None
