"""PickyBPE training (``picky_threshold``): the same events and encodings as the
recount-everything oracle, save/load, the exports it refuses, typed errors, the trace,
and fewer residue tokens than plain BPE on real text."""

from __future__ import annotations

import json
import pickle
import random
import warnings
from pathlib import Path
from typing import Any

import pytest
import tokensmith as ts
from tokensmith.errors import (
    ConfigError,
    PortabilityWarning,
    TokenizerFormatError,
    UnknownOptionError,
    UnsupportedComponentError,
)
from tokensmith.reference.picky import ReferencePicky, train_picky_bpe

from .conftest import corpus_file, make_text

SPECIALS = ["<|endoftext|>"]
# stems that only ever occur inside longer words: the intermediate tokens on the
# way to them ("ucti" -> "uction") are what PickyBPE removes
STEMS = ["construction", "instruction", "production", "reduction", "kentucky",
         "tucker", "nation", "national", "station", "stationary", "relation"]
ADVERSARIAL = ["", " ", "a" * 3000, "ab" * 1500, " " * 500 + "x", "\n\n\t  \n",
               "é" * 400, "😀👍🏽" * 50, "中文字符" * 80, "x\u0301\u0302" * 40]


def built_lines(seed: int, n: int) -> list[str]:
    """Lines of mixed text, with long words whose stems recur inside each other."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        words = [rng.choice(STEMS) + rng.choice(["", "s", "al", "ally"])
                 for _ in range(rng.randrange(3, 9))]
        lines.append(" ".join(words) + " " + make_text(rng.randrange(10**6), 15))
    return lines


def traced_train(lines: list[str], vocab_size: int, tau: float,
                 **options: Any) -> tuple[ts.Tokenizer, list[tuple[Any, ...]]]:
    """Train, collecting every event of the trace as the oracle writes them."""
    got: list[tuple[Any, ...]] = []

    def on_event(kind: str, data: tuple[Any, ...]) -> None:
        if kind == "merge":
            got.append(("merge", data[1], data[2], data[4]))
        elif kind == "removal":
            got.append(("remove", data[1], data[2]))

    tok = ts.train(texts=lines, vocab_size=vocab_size, picky_threshold=tau,
                   special_tokens=SPECIALS, callback=on_event, trace=10**9, **options)
    return tok, got


def oracle_events(ref: ReferencePicky) -> list[tuple[Any, ...]]:
    return [e if e[0] == "merge" else (e[0], e[1], e[3]) for e in ref.readable_events()]


def file_events(tok: ts.Tokenizer) -> list[Any]:
    return json.loads(tok.to_str(pretty=False))["model"]["events"]


def byte_string(raw: bytes) -> str:
    """A token in the GPT-2 byte-level alphabet (as ``tokenizer.json`` writes it)."""
    table = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    chars = {b: chr(b) for b in table}
    extra = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + extra)
            extra += 1
    return "".join(chars[b] for b in raw)


def written_events(ref: ReferencePicky) -> list[Any]:
    out: list[Any] = []
    for e in ref.readable_events():
        if e[0] == "merge":
            out.append([byte_string(e[1]), byte_string(e[2])])
        else:
            out.append({"remove": byte_string(e[1]), "into": [byte_string(p) for p in e[2]]})
    return out


def assert_same_encodings(tok: ts.Tokenizer, ref: ReferencePicky, texts: list[str]) -> None:
    for text in texts:
        ids = tok.encode(text, allowed_special="all")
        assert ids == ref.encode(text, allowed_special="all"), text[:80]
        assert tok.decode(ids) == text


@pytest.mark.parametrize("tau", [0.5, 0.8, 1.0])
def test_events_and_encodings_match_the_oracle_on_built_text(tau: float) -> None:
    lines = built_lines(1, 300)
    tok, got = traced_train(lines, 700, tau)
    ref = train_picky_bpe(lines, 700, tau, special_tokens=SPECIALS)
    want = oracle_events(ref)
    assert any(e[0] == "remove" for e in want), "the text must make removals"
    assert got == want
    assert file_events(tok) == written_events(ref)
    assert tok.vocab_size == len(ref.vocab) + 1
    held_out = built_lines(2, 40) + ADVERSARIAL + ["<|endoftext|>".join(built_lines(3, 3))]
    assert_same_encodings(tok, ref, held_out)


def test_events_and_encodings_match_the_oracle_on_english() -> None:
    text = corpus_file("en.txt").read_text(encoding="utf-8")[:60_000]
    lines = [line for line in text.split("\n") if line]
    train, held_out = lines[:-60], lines[-60:]
    tok, got = traced_train(train, 600, 0.7)
    ref = train_picky_bpe(train, 600, 0.7, special_tokens=SPECIALS)
    assert sum(e[0] == "remove" for e in got) >= 5
    assert got == oracle_events(ref)
    assert_same_encodings(tok, ref, held_out + ["\n".join(held_out)])


def test_options_limit_the_oracle_too() -> None:
    lines = built_lines(4, 200)
    tok, got = traced_train(lines, 500, 0.6, min_frequency=3, max_token_length=6)
    ref = train_picky_bpe(lines, 500, 0.6, special_tokens=SPECIALS, min_frequency=3,
                          max_token_length=6)
    assert got == oracle_events(ref)
    assert all(len(e[1]) + len(e[2]) <= 6 for e in got if e[0] == "merge")
    assert all(e[3] >= 3 for e in got if e[0] == "merge")
    assert_same_encodings(tok, ref, built_lines(5, 20))


def test_a_removed_token_comes_back_with_its_id() -> None:
    # at τ 0.5 "ab" goes when (ab, c) takes half of it; the "ab" left split into
    # a, b, which merge again: the event list holds ab's merge twice
    lines = ["abc abd"] * 10
    tok, got = traced_train(lines, 258 + 1, 0.5)
    ref = train_picky_bpe(lines, 259, 0.5, special_tokens=SPECIALS)
    assert got == oracle_events(ref)
    merges_of_ab = [e for e in got if e[0] == "merge" and e[1] + e[2] == b"ab"]
    assert len(merges_of_ab) == 2
    assert ("remove", b"ab", 0.5) in got
    assert tok.encode("ab abc abd") == ref.encode("ab abc abd")


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    lines = built_lines(6, 200)
    tok = ts.train(texts=lines, vocab_size=600, picky_threshold=0.8)
    with pytest.warns(PortabilityWarning, match="PickyBPE"):
        path = tok.save(tmp_path / "tokenizer.json")
    again = ts.load(path)
    assert again._core.model_type == "PickyBPE"
    assert again.get_vocab() == tok.get_vocab()
    held_out = built_lines(7, 30) + ADVERSARIAL
    for text in held_out:
        assert again.encode(text) == tok.encode(text)
    assert again.to_str() == tok.to_str()
    copy = pickle.loads(pickle.dumps(tok))
    assert [copy.encode(t) for t in held_out] == [tok.encode(t) for t in held_out]


def test_an_inconsistent_file_is_refused(tmp_path: Path) -> None:
    tok = ts.train(texts=built_lines(6, 200), vocab_size=600, picky_threshold=0.8)
    doc = json.loads(tok.to_str())
    removal = next(e for e in doc["model"]["events"] if isinstance(e, dict))
    removal["into"] = removal["into"][:1]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(TokenizerFormatError, match="removal"):
        ts.load(path)


@pytest.fixture(scope="module")
def picky() -> ts.Tokenizer:
    tok = ts.train(texts=built_lines(8, 200), vocab_size=600, picky_threshold=0.8)
    assert tok._core.model_type == "PickyBPE"
    return tok


@pytest.mark.parametrize(("name", "fmt"), [("x.tiktoken", "tiktoken"),
                                           ("x.model", "SentencePiece .model"),
                                           ("tekken.json", "tekken"),
                                           ("vocab.txt", "vocab.txt")])
def test_exports_that_cannot_express_it_are_refused(picky: ts.Tokenizer, tmp_path: Path,
                                                   name: str, fmt: str) -> None:
    with pytest.raises(UnsupportedComponentError, match=fmt.replace(".", r"\.")):
        picky.save(tmp_path / name)
    assert not (tmp_path / name).exists()


def test_vocab_merges_export_is_refused(picky: ts.Tokenizer, tmp_path: Path) -> None:
    with pytest.raises(UnsupportedComponentError, match=r"vocab\.json \+ merges\.txt.*removed"):
        picky.save_vocab_merges(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_convert_refuses_too(picky: ts.Tokenizer, tmp_path: Path) -> None:
    from tokensmith.convert import convert

    with pytest.raises(UnsupportedComponentError, match="tiktoken"):
        convert(picky, tmp_path / "x.tiktoken")


def test_no_removal_gives_an_ordinary_bpe_that_exports(tmp_path: Path) -> None:
    lines = [make_text(seed, 60) for seed in range(100)]
    tok, got = traced_train(lines, 270, 1.0)
    assert not any(e[0] == "remove" for e in got)
    assert tok._core.model_type == "BPE"
    plain = ts.train(texts=lines, vocab_size=270, special_tokens=SPECIALS)
    assert tok.to_str() == plain.to_str()
    held_out = built_lines(10, 20) + ADVERSARIAL
    vocab, merges = tok.save_vocab_merges(tmp_path)
    from tokensmith.formats.gpt2 import load_vocab_merges

    again = load_vocab_merges(vocab, merges)
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a reference library")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no PortabilityWarning: a plain BPE file)
        path = tok.save(tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(path))
    for text in held_out:
        ids = tok.encode(text)
        assert again.encode(text) == ids
        assert hf.encode(text, add_special_tokens=False).ids == ids


@pytest.mark.parametrize("bad", [0, 0.0, -0.5, 1.01, 2, float("nan"), float("inf"), "0.9",
                                 True])
def test_bad_thresholds_are_typed_errors(bad: Any) -> None:
    with pytest.raises(ConfigError, match="picky_threshold"):
        ts.train(texts=["some text"], vocab_size=300, picky_threshold=bad)


@pytest.mark.parametrize(("options", "names"), [
    ({"byte_level": False}, "byte_level"),
    ({"superword_start": 280}, "superword_start"),
    ({"parity_measure": "bytes"}, "parity"),
])
def test_unsupported_combinations_are_typed_errors(options: dict[str, Any], names: str) -> None:
    with pytest.raises(ConfigError, match=f"picky_threshold.*{names}|{names}.*picky"):
        ts.train(texts=["some text"], vocab_size=300, picky_threshold=0.9, **options)


def test_other_models_do_not_take_it() -> None:
    with pytest.raises(UnknownOptionError, match="picky_threshold"):
        ts.train(texts=["some text"], model="wordpiece", vocab_size=300,  # type: ignore[call-overload]
                 picky_threshold=0.9)


def test_trace_lists_each_removal() -> None:
    import io

    out = io.StringIO()
    lines = built_lines(11, 200)
    removals: list[tuple[Any, ...]] = []
    merges: dict[int, tuple[bytes, bytes]] = {}

    def on_event(kind: str, data: tuple[Any, ...]) -> None:
        if kind == "removal":
            removals.append(data)
        elif kind == "merge":
            merges[data[0]] = (data[1], data[2])

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ts.train(texts=lines, vocab_size=600, picky_threshold=0.8, verbose=True, trace=10**6,
                 stream=out, progress=False, callback=on_event)
    assert removals
    for index, token, ios, left, right, merge in removals:
        assert ios >= 0.8
        assert token in (left, right)
        assert merges[merge] == (left, right)
        assert f"remove {token!r} (IoS {ios:.3f}) after merge {merge} " in out.getvalue()
        assert index > merge
    assert f"with {len(removals):,} removals" in out.getvalue()


def test_fewer_residues_than_plain_bpe_on_real_text() -> None:
    text = corpus_file("en.txt").read_text(encoding="utf-8")[:2_000_000]
    cut = text.rindex("\n", 0, int(len(text) * 0.9))
    train, held_out = text[:cut].split("\n"), text[cut + 1:].split("\n")
    plain = ts.train(texts=train, vocab_size=3000)
    picky = ts.train(texts=train, vocab_size=3000, picky_threshold=0.9)
    assert picky._core.model_type == "PickyBPE"
    assert picky.vocab_size == plain.vocab_size
    found_plain = ts.diagnose(plain, texts=held_out).residues or []
    found_picky = ts.diagnose(picky, texts=held_out).residues or []
    assert len(found_picky) < len(found_plain)


def test_batches_and_offsets_agree_with_single_encodes(picky: ts.Tokenizer) -> None:
    texts = built_lines(12, 60) + ADVERSARIAL
    singles = [picky.encode(t) for t in texts]
    assert picky.encode_batch(texts) == singles
    assert picky.encode_batch(texts) == singles  # (now from the chunk cache)
    for text, ids in zip(texts, singles, strict=True):
        assert picky.encode_full(text).ids == ids
    ascii_text = "the construction of national stations, reductions..."
    offsets = picky.encode_full(ascii_text).offsets
    assert "".join(ascii_text[a:b] for a, b in offsets) == ascii_text
