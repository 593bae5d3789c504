"""Unigram and SentencePiece: differential tests against `tokenizers` (T5 and
umT5 ``tokenizer.json``) and against `sentencepiece` (``.model`` files:
Unigram and BPE), on real text and adversarial strings; the ``.model``
reader/writer; n-best and sampling."""

from __future__ import annotations

import base64
import collections
import functools
import json
import random
import struct

import pytest
import tokensmith as ts
from tokensmith.errors import TokenizerFormatError, UnsupportedComponentError
from tokensmith.formats import sentencepiece as spfmt
from tokensmith.formats._protobuf import _tag, _varint
from tokensmith.sampling import encode_nbest, encode_nbest_with_scores, sample_encode

from .adversarial import strings
from .conftest import asset, corpus_file

spm = pytest.importorskip("sentencepiece", reason="sentencepiece is a test dependency")
tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a test dependency")

HF_FILES = ["t5", "umt5"]
SP_FILES = [
    ("sentencepiece-unigram", "test_model.model"),
    ("sentencepiece-unigram", "test_ja_model.model"),
    ("llama2", "tokenizer.model"),
    ("mistral", "tokenizer.model"),
]
SP_UNIGRAM = SP_FILES[:2]

EXTRA = [
    "\u2581", "\u2581hello\u2581", " \u2581 ", "a\u3000\u3000b", "x  \u00a8 y", "<s>hi</s>",
    "<unk>", "<0x41>", "\t\tab\n\ncd\r\n", "\ufdfa \uff76\uff9e \u00bd \u2460",
    "e\u0301\u0301 \uff21\u0301", "  lead", "trail   ", "   ", "\u2581\u2581x", "\u20ac\u20ac",
]


@functools.cache
def real_text() -> tuple[str, ...]:
    """Two 50 KB slices and 300 short lines of each of en, zh and ja."""
    out: list[str] = []
    for name in ("en.txt", "zh.txt", "ja.txt"):
        try:
            data = corpus_file(name).read_text(encoding="utf-8")
        except pytest.skip.Exception:
            continue
        out += [data[:50_000], data[50_000:100_000]]
        out += [line for line in data[100_000:300_000].splitlines() if line][:300]
    return tuple(out)


def texts() -> list[str]:
    return list(real_text()) + strings() + EXTRA


def first_diff(a: list, b: list) -> int:
    pairs = enumerate(zip(a, b, strict=False))
    return next((i for i, (x, y) in pairs if x != y), min(len(a), len(b)))


# ------------------------------------------------------------- tokenizer.json


@functools.cache
def hf_pair(name: str):  # type: ignore[no-untyped-def]
    path = asset(name, "tokenizer.json")
    return ts.load(path), tokenizers.Tokenizer.from_file(str(path))


@pytest.mark.parametrize("name", HF_FILES)
def test_tokenizer_json_matches_tokenizers(name: str) -> None:
    ours, hf = hf_pair(name)
    problems = []
    sample = texts()
    for t in sample:
        want = hf.encode(t)
        got = ours.encode_full(t, allowed_special="all")
        if got.ids != want.ids:
            i = first_diff(got.ids, want.ids)
            problems.append(f"ids {t[:40]!r} @{i}: {got.tokens[i:i + 3]} vs {want.tokens[i:i + 3]}")
            continue
        if got.tokens != want.tokens:
            problems.append(f"tokens {t[:40]!r}")
        if got.offsets != [tuple(o) for o in want.offsets]:
            problems.append(f"offsets {t[:40]!r}")
        if ours.decode(got.ids) != hf.decode(want.ids, skip_special_tokens=False):
            problems.append(f"decode {t[:40]!r}")
        if ours.decode(got.ids, skip_special_tokens=True) != hf.decode(want.ids):
            problems.append(f"decode (skip special) {t[:40]!r}")
    assert not problems, f"{len(problems)} of {len(sample)} texts differ: {problems[:5]}"


@pytest.mark.parametrize("name", HF_FILES)
def test_tokenizer_json_written_back_loads_in_tokenizers(name: str) -> None:
    ours, hf = hf_pair(name)
    text = ours.to_str(pretty=False)
    again = tokenizers.Tokenizer.from_str(text)
    assert again.get_vocab_size() == hf.get_vocab_size()
    for t in strings()[:12] + list(real_text())[4:40]:
        assert again.encode(t).ids == hf.encode(t).ids
    assert ts.Tokenizer.from_str(text).encode(real_text()[0]) == ours.encode(real_text()[0])


def t5_variant(**changes: object) -> str:
    d = json.loads(asset("t5", "tokenizer.json").read_text(encoding="utf-8"))
    for key, value in changes.items():
        d[key] = value
    return json.dumps(d)


@pytest.mark.parametrize(
    "pre",
    [
        {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True},
        {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "never", "split": True},
        {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": False},
        {"type": "Sequence", "pretokenizers": [
            {"type": "WhitespaceSplit"},
            {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always"},
        ]},
    ],
)
def test_metaspace_variants_match_tokenizers(pre: dict) -> None:
    spec = t5_variant(pre_tokenizer=pre, decoder={**pre, "type": "Metaspace"}
                      if pre["type"] == "Metaspace" else None)
    ours, hf = ts.Tokenizer.from_str(spec), tokenizers.Tokenizer.from_str(spec)
    for t in strings() + EXTRA + ["<pad>hello world", "x</s> y"] + list(real_text())[6:60]:
        want = hf.encode(t)
        got = ours.encode_full(t, allowed_special="all")
        assert got.ids == want.ids, t[:60]
        assert got.offsets == [tuple(o) for o in want.offsets], t[:60]
        assert ours.decode(got.ids) == hf.decode(want.ids, skip_special_tokens=False), t[:60]


def test_unigram_byte_fallback_matches_tokenizers() -> None:
    d = json.loads(asset("t5", "tokenizer.json").read_text(encoding="utf-8"))
    d["model"]["vocab"] += [[f"<0x{b:02X}>", 0.0] for b in range(256)]
    d["model"]["byte_fallback"] = True
    d["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
        {"type": "ByteFallback"}, {"type": "Fuse"}]}
    spec = json.dumps(d)
    ours, hf = ts.Tokenizer.from_str(spec), tokenizers.Tokenizer.from_str(spec)
    for t in strings() + EXTRA + ["\u20ac\u20ac x", "a\U0001f600\U0001f600b"]:
        want = hf.encode(t)
        got = ours.encode_full(t, allowed_special="all")
        assert got.ids == want.ids and got.tokens == want.tokens, t[:60]
        # offsets: a run of several unknown characters spelled in bytes gives
        # every byte the run's span in `tokenizers`, its character's here
        assert ours.decode(got.ids) == hf.decode(want.ids, skip_special_tokens=False), t[:60]


def test_legacy_metaspace_without_prefix_space_loads() -> None:
    pre = {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": False}
    tok = ts.Tokenizer.from_str(t5_variant(pre_tokenizer=pre, decoder=pre))
    never = {**pre, "prepend_scheme": "never"}
    ref = ts.Tokenizer.from_str(t5_variant(pre_tokenizer=never, decoder=never))
    assert tok.encode("hello world") == ref.encode("hello world")
    assert json.loads(tok.to_str())["pre_tokenizer"]["prepend_scheme"] == "never"


def test_unigram_json_errors() -> None:
    base = json.loads(t5_variant())
    for model, fragment in [
        ({"type": "Unigram", "unk_id": 5, "vocab": [["a", -1.0]]}, "unk_id"),
        ({"type": "Unigram", "vocab": [["a", "x"]]}, "vocab[0]"),
        ({"type": "Unigram"}, "vocab"),
    ]:
        base["model"] = model
        with pytest.raises(TokenizerFormatError, match=fragment.replace("[", r"\[")):
            ts.Tokenizer.from_str(json.dumps(base))
    bad = {"type": "Precompiled", "precompiled_charsmap": "AAAA"}
    base = json.loads(t5_variant(normalizer=bad))
    with pytest.raises(TokenizerFormatError, match="precompiled_charsmap"):
        ts.Tokenizer.from_str(json.dumps(base))


# ------------------------------------------------------------- .model files


@functools.cache
def sp_pair(parts: tuple[str, str]):  # type: ignore[no-untyped-def]
    path = asset(*parts)
    return ts.load(path), spm.SentencePieceProcessor(model_file=str(path))


@pytest.mark.parametrize("parts", SP_FILES, ids=lambda p: "/".join(p))
def test_model_file_matches_sentencepiece(parts: tuple[str, str]) -> None:
    ours, sp = sp_pair(parts)
    problems = []
    sample = texts()
    for t in sample:
        got, want = ours.encode_ordinary(t), sp.encode(t)
        if got != want:
            i = first_diff(got, want)
            problems.append(
                f"ids {t[:40]!r} @{i}: {[ours.id_to_token(x) for x in got[i:i + 3]]} vs "
                f"{[sp.id_to_piece(x) for x in want[i:i + 3]]}"
            )
            continue
        if [ours.id_to_token(x) for x in got] != [sp.id_to_piece(x) for x in want]:
            problems.append(f"pieces {t[:40]!r}")
        if ours.decode(got) != sp.decode(want):
            problems.append(f"decode {t[:40]!r}")
    assert not problems, f"{len(problems)} of {len(sample)} texts differ: {problems[:5]}"
    assert ours.vocab_size == sp.get_piece_size()


@pytest.mark.parametrize("parts", SP_FILES, ids=lambda p: "/".join(p))
def test_model_file_decodes_any_ids_like_sentencepiece(parts: tuple[str, str]) -> None:
    ours, sp = sp_pair(parts)
    rng = random.Random(5)
    n = sp.get_piece_size()
    bos, eos = sp.bos_id(), sp.eos_id()
    for _ in range(300):
        ids = [rng.randrange(n) for _ in range(rng.randrange(1, 12))]
        if rng.random() < 0.3:
            ids = [bos] + ids + [eos]
        assert ours.decode(ids) == sp.decode(ids), [sp.id_to_piece(i) for i in ids]
    # byte pieces that do not make UTF-8 (models with byte fallback)
    if sp.piece_to_id("<0xE2>") != sp.unk_id():
        b = [sp.piece_to_id(f"<0x{x:02X}>") for x in (0xE2, 0x96, 0x41, 0xFF, 0xC3, 0xA9)]
        assert ours.decode(b) == sp.decode(b)


@pytest.mark.parametrize("parts", SP_UNIGRAM, ids=lambda p: "/".join(p))
def test_nbest_matches_sentencepiece(parts: tuple[str, str]) -> None:
    ours, sp = sp_pair(parts)
    lines = [t for t in real_text() if len(t) < 400][:150] + strings()[:12] + EXTRA
    for t in lines:
        assert encode_nbest(ours, t, 8) == sp.nbest_encode_as_ids(t, 8), t[:60]
    scored = encode_nbest_with_scores(ours, "I saw a girl with a telescope.", 4)
    assert [s for _, s in scored] == sorted((s for _, s in scored), reverse=True)
    assert scored[0][0] == ours.encode_ordinary("I saw a girl with a telescope.")


def test_sampling_follows_sentencepiece_distribution() -> None:
    ours, sp = sp_pair(SP_UNIGRAM[0])
    word, draws = "telescopes", 3000
    for nbest_size, alpha in ((-1, 0.3), (4, 0.5)):
        mine = collections.Counter(
            tuple(sample_encode(ours, word, alpha=alpha, nbest_size=nbest_size, seed=i))
            for i in range(draws)
        )
        ref = collections.Counter(
            tuple(sp.encode(word, enable_sampling=True, alpha=alpha, nbest_size=nbest_size))
            for _ in range(draws)
        )
        assert set(mine) <= set(ref) | {k for k, v in mine.items() if v < 15}
        for seg, count in ref.most_common(3):
            assert abs(mine[seg] - count) / draws < 0.05, (seg, mine[seg], count)
        for seg in mine:
            assert ours.decode(list(seg)) == word
    best = ours.encode_ordinary(word)
    assert sample_encode(ours, word, alpha=0.0, nbest_size=-1, seed=3) != [] and sample_encode(
        ours, word, alpha=0.5, nbest_size=1
    ) == best
    assert sample_encode(ours, word, seed=7) == sample_encode(ours, word, seed=7)


def test_sampling_on_tokenizer_json_and_errors() -> None:
    ours, _ = hf_pair("t5")
    text = "Hello wonderful world"
    nb = encode_nbest(ours, text, 5)
    assert nb[0] == ours.encode(text, add_special_tokens=False) and len(set(map(tuple, nb))) == 5
    for seed in range(20):
        ids = sample_encode(ours, text, alpha=0.2, seed=seed)
        assert ours.decode(ids) == text
    gpt2 = ts.load(asset("gpt2", "tokenizer.json"))
    with pytest.raises(UnsupportedComponentError, match="Unigram"):
        encode_nbest(gpt2, text, 2)


@pytest.mark.parametrize("parts", SP_FILES, ids=lambda p: "/".join(p))
def test_model_file_round_trips_byte_for_byte(parts: tuple[str, str], tmp_path) -> None:
    path = asset(*parts)
    data = path.read_bytes()
    proto = spfmt.read_model_proto(data)
    assert proto.serialize() == data
    assert len(proto.pieces) == spm.SentencePieceProcessor(model_file=str(path)).get_piece_size()
    tok, _ = sp_pair(parts)
    out = tok.save(tmp_path / "copy.model")
    assert out.read_bytes() == data


@pytest.mark.parametrize("parts", SP_FILES, ids=lambda p: "/".join(p))
def test_model_rebuilt_from_tokenizer_json_loads_in_sentencepiece(
    parts: tuple[str, str], tmp_path
) -> None:
    ours, sp = sp_pair(parts)
    again = ts.Tokenizer.from_str(ours.to_str(pretty=False))  # through tokenizer.json
    written = again.save(tmp_path / "rebuilt.model")
    sp2 = spm.SentencePieceProcessor(model_file=str(written))
    sample = list(real_text())[6:80] + strings()[:20] + EXTRA
    for t in sample:
        want = sp.encode(t)
        assert sp2.encode(t) == want, t[:60]
        assert again.encode_ordinary(t) == want, t[:60]
        assert again.decode(want) == sp.decode(want), t[:60]


def test_edited_model_keeps_unknown_fields(tmp_path) -> None:
    data = asset(*SP_UNIGRAM[0]).read_bytes()
    # an extension field (ModelProto reserves 200 and up) on the model and on a piece
    ext = _tag(200, 0) + _varint(42)
    piece_ext = _tag(201, 2) + _varint(3) + b"abc"
    proto = spfmt.read_model_proto(data)
    first = proto.pieces[5].serialize() + piece_ext
    pieces_end = data.index(proto.pieces[5].serialize())
    tagged = data[: pieces_end - 2] + _tag(1, 2) + _varint(len(first)) + first
    tagged += data[pieces_end + len(proto.pieces[5].serialize()) :] + ext
    proto = spfmt.read_model_proto(tagged)
    assert proto.serialize() == tagged
    assert proto.unknown_fields == [(200, 0, ext)]
    assert proto.pieces[5].unknown_fields == [(201, 2, piece_ext)]
    # edits are encoded, everything else kept
    proto.pieces[5].score = -1.25
    proto.trainer_spec.unk_surface = "<?>"
    out = proto.serialize()
    back = spfmt.read_model_proto(out)
    assert back.pieces[5].score == -1.25 and back.pieces[5].unknown_fields == [(201, 2, piece_ext)]
    assert back.unknown_fields == [(200, 0, ext)]
    assert back.trainer_spec.unk_surface == "<?>"
    (tmp_path / "edited.model").write_bytes(out)
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "edited.model"))
    tok = ts.load(tmp_path / "edited.model")
    for t in ["Hello world \u20ac", "I saw a girl"]:
        assert tok.encode_ordinary(t) == sp.encode(t)
        assert tok.decode(sp.encode(t)) == sp.decode(sp.encode(t))


def test_corrupt_model_files_are_format_errors(tmp_path) -> None:
    data = asset(*SP_UNIGRAM[0]).read_bytes()
    rng = random.Random(11)
    cuts = [1, 2, 3, 7, 100, 1000, len(data) // 2, len(data) - 3, len(data) - 1]
    for cut in cuts:
        p = tmp_path / f"cut{cut}.model"
        p.write_bytes(data[:cut])
        with pytest.raises(TokenizerFormatError, match=r"(ModelProto|model).*") as e:
            ts.load(p)
        assert str(p) in str(e.value)
        with pytest.raises(TokenizerFormatError):
            spfmt.read_model_proto(data[:cut])
    with pytest.raises(TokenizerFormatError, match=r"byte \d+"):
        spfmt.loads(data[: len(data) // 2])
    for bad in (b"", b"\x00\x00", b"not a model at all", bytes(range(256))):
        with pytest.raises(TokenizerFormatError):
            spfmt.loads(bad)
    # random damage: an error or a model, never a crash
    for _ in range(60):
        b = bytearray(data)
        for _ in range(rng.randrange(1, 6)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        try:
            tok = spfmt.loads(bytes(b))
        except TokenizerFormatError:
            continue
        tok.encode_ordinary("Hello world")


def test_unsupported_model_types_and_bad_pieces() -> None:
    data = asset(*SP_UNIGRAM[0]).read_bytes()
    proto = spfmt.read_model_proto(data)
    proto.trainer_spec.model_type = spfmt.WORD
    with pytest.raises(UnsupportedComponentError, match="WORD"):
        spfmt.loads(proto.serialize())
    proto = spfmt.read_model_proto(data)
    proto.pieces[10].piece = proto.pieces[11].piece
    with pytest.raises(TokenizerFormatError, match="already defined"):
        spfmt.loads(proto.serialize())
    proto = spfmt.read_model_proto(data)
    proto.pieces[0].type = spfmt.NORMAL  # no <unk> left
    with pytest.raises(TokenizerFormatError, match="unknown piece"):
        spfmt.loads(proto.serialize())
    proto = spfmt.read_model_proto(data)
    proto.normalizer_spec.precompiled_charsmap = b"\x10\x00\x00\x00abc"
    with pytest.raises(TokenizerFormatError, match="precompiled_charsmap"):
        spfmt.loads(proto.serialize())


def test_model_options_follow_sentencepiece(tmp_path) -> None:
    """add_dummy_prefix, remove_extra_whitespaces and escape_whitespaces off and on,
    user-defined and unused pieces, byte fallback: each variant against sentencepiece."""
    data = asset(*SP_UNIGRAM[0]).read_bytes()
    sample = strings()[:16] + EXTRA + ["  many   spaces  here  ", "x\u2581\u2581y  ", "hello"]
    variants = []
    for adp in (True, False):
        for rew in (True, False):
            for esc in (True, False):
                variants.append((adp, rew, esc))
    for k, (adp, rew, esc) in enumerate(variants):
        proto = spfmt.read_model_proto(data)
        proto.normalizer_spec.add_dummy_prefix = adp
        proto.normalizer_spec.remove_extra_whitespaces = rew
        proto.normalizer_spec.escape_whitespaces = esc
        if k == 1:
            proto.pieces[20].type = spfmt.USER_DEFINED
            proto.pieces[30].type = spfmt.UNUSED
            proto.pieces.append(spfmt.SentencePiece(piece="ing▁the", score=0.0,
                                                    type=spfmt.USER_DEFINED))
        if k == 2:
            proto.trainer_spec.byte_fallback = True
            proto.pieces.extend(
                spfmt.SentencePiece(piece=f"<0x{b:02X}>", score=0.0, type=spfmt.BYTE)
                for b in range(256)
            )
        if k == 3:
            proto.trainer_spec.treat_whitespace_as_suffix = True
        p = tmp_path / f"v{k}.model"
        p.write_bytes(proto.serialize())
        sp = spm.SentencePieceProcessor(model_file=str(p))
        tok = ts.load(p)
        for t in sample:
            want = sp.encode(t)
            assert tok.encode_ordinary(t) == want, (adp, rew, esc, k, t[:40])
            assert tok.decode(want) == sp.decode(want), (adp, rew, esc, k, t[:40])


def test_model_without_charsmap_and_bpe_options(tmp_path) -> None:
    data = asset("llama2", "tokenizer.model").read_bytes()
    proto = spfmt.read_model_proto(data)
    proto.normalizer_spec.remove_extra_whitespaces = True
    proto.pieces[1000].type = spfmt.USER_DEFINED
    proto.pieces[2000].type = spfmt.UNUSED
    p = tmp_path / "llama_variant.model"
    p.write_bytes(proto.serialize())
    sp = spm.SentencePieceProcessor(model_file=str(p))
    tok = ts.load(p)
    marked = proto.pieces[1000].piece.replace("\u2581", " ")
    unused = proto.pieces[2000].piece.replace("\u2581", " ")
    extra = [f"a{marked}b {unused} x{unused}y", list(real_text())[0][:5000]]
    for t in strings()[:16] + EXTRA + extra:
        want = sp.encode(t)
        assert tok.encode_ordinary(t) == want, t[:40]
        assert tok.decode(want) == sp.decode(want), t[:40]


def test_precompiled_charsmap_parses_what_files_contain() -> None:
    d = json.loads(asset("t5", "tokenizer.json").read_text(encoding="utf-8"))
    blob = base64.b64decode(d["normalizer"]["normalizers"][0]["precompiled_charsmap"])
    (size,) = struct.unpack("<I", blob[:4])
    assert size % 4 == 0 and 4 + size < len(blob)
    spec = json.loads(ts.load(asset("t5", "tokenizer.json")).to_str())["normalizer"]
    assert base64.b64decode(spec["normalizers"][0]["precompiled_charsmap"]) == blob
