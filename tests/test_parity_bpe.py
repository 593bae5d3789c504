"""Parity-aware BPE (``train(languages=..., parity_dev=...)``): the Rust trainer against
the pure-Python oracle (``tokensmith.reference.parity``), the saved file against
``tokenizers``, the parity it buys on real parallel text, and its bad input."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

import pytest
import tokensmith as ts
from tokensmith.errors import (
    ConfigError,
    UnknownOptionError,
    UnsupportedComponentError,
    VocabShortfallWarning,
)
from tokensmith.reference import train_bpe
from tokensmith.reference.parity import train_parity_bpe

from .conftest import CORPUS

# --- a small multilingual corpus the tests build ---------------------------------------

# per language: letters to build words from, and how many training sentences it has
_LANGS = {
    "big": ("abcdefghiklmnoprstuvwy", 700),
    "acc": ("aàbcçdeéèfgiïlmnoôrsuü", 200),
    "cyr": ("абвгдежзиклмнопрстуфхцч", 80),
    "gre": ("αβγδεζηθικλμνξοπρστυφχψω", 50),
}
_CONCEPTS = 150


def _lexicon(letters: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    words: list[str] = []
    while len(words) < _CONCEPTS:
        word = "".join(rng.choice(letters) for _ in range(rng.randint(2, 8)))
        if word not in words:
            words.append(word)
    return words


def _sentences(rng: random.Random, n: int) -> list[list[int]]:
    weights = [1 / (k + 1) for k in range(_CONCEPTS)]
    return [rng.choices(range(_CONCEPTS), weights, k=rng.randint(4, 10)) for _ in range(n)]


def _render(lexicon: list[str], sentence: list[int]) -> str:
    return " ".join(lexicon[c] for c in sentence) + "."


class Corpus:
    """Training text per language (of different sizes), and parallel dev and test lines."""

    def __init__(self, folder: Path) -> None:
        lexicons = {lang: _lexicon(letters, i) for i, (lang, (letters, _)) in
                    enumerate(_LANGS.items())}
        rng = random.Random(7)
        dev, test = _sentences(rng, 40), _sentences(rng, 40)
        self.train: dict[str, str] = {}
        self.dev: dict[str, list[str]] = {}
        self.test: dict[str, list[str]] = {}
        self.train_files: dict[str, Path] = {}
        self.dev_files: dict[str, Path] = {}
        for lang, (_, size) in _LANGS.items():
            lines = [_render(lexicons[lang], s) for s in _sentences(rng, size)]
            self.train[lang] = "\n".join(lines) + "\n"
            self.dev[lang] = [_render(lexicons[lang], s) for s in dev]
            self.test[lang] = [_render(lexicons[lang], s) for s in test]
            self.train_files[lang] = folder / f"train.{lang}.txt"
            self.train_files[lang].write_text(self.train[lang], encoding="utf-8")
            self.dev_files[lang] = folder / f"dev.{lang}.txt"
            self.dev_files[lang].write_text("\n".join(self.dev[lang]) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return Corpus(tmp_path_factory.mktemp("parity"))


def _train(corpus: Corpus, vocab_size: int, **options: Any) -> tuple[ts.Tokenizer, list[tuple]]:
    """Train with every merge traced; returns the tokenizer and the merge events."""
    events: list[tuple] = []

    def callback(kind: str, data: tuple[Any, ...]) -> None:
        if kind == "merge":
            events.append(data)

    if "parity_measure" not in options:
        options["parity_dev"] = corpus.dev_files
    tok = ts.train(model="bpe", vocab_size=vocab_size, languages=corpus.train_files,
                   special_tokens=[], trace=vocab_size, callback=callback, **options)
    return tok, events


def _oracle(corpus: Corpus, vocab_size: int, **options: Any) -> tuple[Any, list[str | None]]:
    measure = options.pop("parity_measure", "dev")
    return train_parity_bpe({lang: [text] for lang, text in corpus.train.items()}, vocab_size,
                            dev=corpus.dev, measure=measure, **options)


def _assert_same(tok: ts.Tokenizer, events: list[tuple], oracle: Any,
                 chosen: list[str | None]) -> None:
    got = [(left, right) for _, left, right, _, _, _ in events]
    want = [(oracle.vocab[a], oracle.vocab[b]) for a, b in oracle.merges]
    assert got == want
    assert [e[5] for e in events] == chosen
    assert len(tok.merges) == len(oracle.merges)


# --- the Rust trainer against the oracle -----------------------------------------------


@pytest.mark.parametrize("parity_start", [0, 30])
def test_dev_parity_learns_the_oracles_merges(corpus: Corpus, parity_start: int) -> None:
    tok, events = _train(corpus, 256 + 160, parity_start=parity_start)
    oracle, chosen = _oracle(corpus, 256 + 160, parity_start=parity_start)
    _assert_same(tok, events, oracle, chosen)
    assert chosen[:parity_start] == [None] * parity_start
    # parity spreads the merges over the languages, and the small ones get some
    assert {"cyr", "gre"} <= set(chosen[parity_start:])
    # ... which classical BPE on the same text does not do
    classical = train_bpe(list(corpus.train.values()), 256 + 160)
    assert classical.merges != oracle.merges
    # the trained model encodes like the oracle's
    for lang in _LANGS:
        for line in corpus.test[lang][:10]:
            assert tok.encode(line) == oracle.encode(line)


@pytest.mark.parametrize("measure", ["bytes", "lines"])
def test_measures_on_training_text_learn_the_oracles_merges(corpus: Corpus, measure: str) -> None:
    tok, events = _train(corpus, 256 + 120, parity_measure=measure, parity_start=5)
    oracle, chosen = _oracle(corpus, 256 + 120, parity_measure=measure, parity_start=5)
    _assert_same(tok, events, oracle, chosen)
    assert len(set(chosen)) > 2


def test_limits_learn_the_oracles_merges(corpus: Corpus) -> None:
    # short tokens and a high floor: languages run out of pairs and pass their turn
    with pytest.warns(VocabShortfallWarning):
        tok, events = _train(corpus, 256 + 400, max_token_length=3, min_frequency=20)
    oracle, chosen = _oracle(corpus, 256 + 400, max_token_length=3, min_frequency=20)
    _assert_same(tok, events, oracle, chosen)
    assert len(oracle.merges) < 400
    assert all(len(oracle.vocab[256 + k]) <= 3 for k in range(len(oracle.merges)))
    assert all(e[4] >= 20 for e in events)


def test_trace_names_the_language(corpus: Corpus) -> None:
    out = io.StringIO()
    ts.train(languages=corpus.train_files, parity_dev=corpus.dev_files, parity_start=2,
             vocab_size=270, verbose=True, progress=False, trace=6, stream=out)
    _, chosen = _oracle(corpus, 270, parity_start=2)
    lines = [line for line in out.getvalue().splitlines() if line.startswith("merge ")]
    assert len(lines) == 6
    assert lines[0].endswith(" for all languages (classical)")
    assert lines[1].endswith(" for all languages (classical)")
    for line, lang in zip(lines[2:], chosen[2:6], strict=True):
        assert line.endswith(f" for {lang}"), line


def test_trace_ends_with_the_dev_tokens_the_tokenizer_gives(corpus: Corpus) -> None:
    out = io.StringIO()
    tok = ts.train(languages=corpus.train_files, parity_dev=corpus.dev_files, vocab_size=400,
                   verbose=True, progress=False, stream=out)
    report = next(line for line in out.getvalue().splitlines()
                  if line.startswith("tokens of the 40 dev lines: "))
    for lang in _LANGS:
        tokens = sum(len(tok.encode(line)) for line in corpus.dev[lang])
        assert f"{lang} {tokens:,} ({tokens / 40:.2f} per line)" in report


# --- the saved file --------------------------------------------------------------------


def test_saved_tokenizer_json_encodes_like_tokenizers(corpus: Corpus, tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    tok = ts.train(languages=corpus.train_files, parity_dev=corpus.dev_files,
                   vocab_size=256 + 200, parity_start=20)
    path = tok.save(tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(path))
    assert hf.get_vocab_size() == tok.vocab_size
    for lang in _LANGS:
        for line in corpus.test[lang]:
            assert hf.encode(line, add_special_tokens=False).ids == tok.encode(line), line
    # and the merges written are the ones learned, in order
    merges = json.loads(path.read_text(encoding="utf-8"))["model"]["merges"]
    assert [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges] == \
        [tuple(m) for m in tok.merges]


def test_saved_vocab_merges_load_back_and_tiktoken_refuses_as_for_any_bpe(
        corpus: Corpus, tmp_path: Path) -> None:
    tok = ts.train(languages=corpus.train_files, parity_measure="bytes", vocab_size=256 + 150)
    line = corpus.test["cyr"][0] + " " + corpus.test["gre"][0]
    tok.save_vocab_merges(tmp_path)
    again = ts.load(tmp_path / "vocab.json")
    assert again.merges == tok.merges
    assert again.encode(line) == tok.encode(line)
    # a merge-list BPE is not rank-equivalent: refused the same way as classical BPE
    classical = ts.train(list(corpus.train_files.values()), vocab_size=256 + 150)
    for trained in (classical, tok):
        with pytest.raises(UnsupportedComponentError, match="save it as tokenizer.json"):
            trained.save(tmp_path / "x.tiktoken")


# --- parity on real parallel text (PUD) -----------------------------------------------


def _pud() -> dict[str, list[str]]:
    folder = CORPUS / "parallel" / "pud"
    files = sorted(folder.glob("*.txt")) if folder.is_dir() else []
    if len(files) < 2:
        pytest.skip(f"{folder}/*.txt is not present (../shared/corpus is optional)")
    lines = {f.stem: f.read_text(encoding="utf-8").splitlines() for f in files}
    if any(len(v) < 1000 for v in lines.values()):
        pytest.skip(f"{folder}: expected 1000 aligned lines per language")
    return lines


def _spread(tok: ts.Tokenizer, test: dict[str, list[str]]) -> float:
    return ts.evaluate(tok, parallel=test, pivot="en").parity.spread  # type: ignore[union-attr]


def test_parity_spread_on_held_out_pud_is_lower(tmp_path: Path) -> None:
    pud = _pud()
    train, dev = {}, {}
    for lang, lines in pud.items():
        train[lang] = tmp_path / f"train.{lang}.txt"
        train[lang].write_text("\n".join(lines[:800]) + "\n", encoding="utf-8")
        dev[lang] = tmp_path / f"dev.{lang}.txt"
        dev[lang].write_text("\n".join(lines[800:900]) + "\n", encoding="utf-8")
    test = {lang: lines[900:1000] for lang, lines in pud.items()}
    vocab = 4096
    classical = ts.train([train[lang] for lang in pud], vocab_size=vocab)
    parity = ts.train(languages=train, parity_dev=dev, vocab_size=vocab)
    assert parity.vocab_size == classical.vocab_size == vocab
    before, after = _spread(classical, test), _spread(parity, test)
    assert after < before, (before, after)


# --- bad input -------------------------------------------------------------------------


def test_bad_parity_options_are_refused(corpus: Corpus, tmp_path: Path) -> None:
    files, dev = corpus.train_files, corpus.dev_files
    one = {"big": files["big"]}
    with pytest.raises(ConfigError, match="languages=.*1 language"):
        ts.train(languages=one, parity_dev={"big": dev["big"]})
    with pytest.raises(ConfigError, match="parity_dev= needs languages="):
        ts.train(files["big"], parity_dev=dev)
    with pytest.raises(ConfigError, match="parity_start= needs languages="):
        ts.train(files["big"], parity_start=3)
    with pytest.raises(ConfigError, match="parity_measure= needs languages="):
        ts.train(files["big"], parity_measure="bytes")
    with pytest.raises(ConfigError, match=r"give parity_dev=.*or parity_measure='bytes'"):
        ts.train(languages=files)
    with pytest.raises(ConfigError, match="parity_dev= must have the languages.*missing gre"):
        ts.train(languages=files, parity_dev={k: v for k, v in dev.items() if k != "gre"})
    with pytest.raises(ConfigError, match="parity_dev= must have.*not in languages=: xx"):
        ts.train(languages=files, parity_dev={**dev, "xx": dev["big"]})
    short = tmp_path / "short.txt"
    short.write_text("\n".join(corpus.dev["gre"][:-1]) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"parity_dev= texts are not line-aligned.*gre: 39"):
        ts.train(languages=files, parity_dev={**dev, "gre": short})
    for bad in (-1, 10_000, 2.5, True):
        with pytest.raises(ConfigError, match="parity_start"):
            ts.train(languages=files, parity_dev=dev, vocab_size=1000, parity_start=bad)
    with pytest.raises(ConfigError, match="parity_measure must be"):
        ts.train(languages=files, parity_measure="words")  # type: ignore[call-overload]
    with pytest.raises(ConfigError, match="parity_measure='bytes'.*drop parity_dev="):
        ts.train(languages=files, parity_dev=dev, parity_measure="bytes")
    with pytest.raises(ConfigError, match="drop files="):
        ts.train(files["big"], languages=files, parity_dev=dev)
    with pytest.raises(ConfigError, match="byte-level only"):
        ts.train(languages=files, parity_dev=dev, byte_level=False)
    with pytest.raises(ConfigError, match="languages= must map"):
        ts.train(languages=[files["big"], files["gre"]], parity_dev=dev)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="superword_start=.*two trainers"):
        ts.train(languages=files, parity_dev=dev, vocab_size=1000, superword_start=600)
    with pytest.raises(ConfigError, match="'lines'.*input_sentence_size"):
        ts.train(languages=files, parity_measure="lines", input_sentence_size=10)


@pytest.mark.parametrize("model", ["wordpiece", "unigram", "sentencepiece-bpe", "wordlevel"])
def test_parity_options_belong_to_bpe(corpus: Corpus, model: str) -> None:
    with pytest.raises(UnknownOptionError, match="languages.*model='bpe'"):
        ts.train(texts=["a b c"], model=model, languages=corpus.train_files)  # type: ignore[call-overload]
    with pytest.raises(UnknownOptionError, match="parity_start.*model='bpe'"):
        ts.train(texts=["a b c"], model=model, parity_start=1)  # type: ignore[call-overload]
