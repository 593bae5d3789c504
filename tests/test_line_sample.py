"""Sampling the corpus as ``sentencepiece`` does (``input_sentence_size=``), or by
bytes (``sample_bytes=``): the sample equals one recomputed here from the same
seeded keys, and training on it equals training on those lines."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest
import tokensmith as ts
from tokensmith.errors import ConfigError

from .conftest import make_text


def _corpus(tmp_path: Path) -> tuple[Path, list[str]]:
    text = "\n".join(make_text(seed, 40) for seed in range(400)) + "\nlast line without end"
    p = tmp_path / "corpus.txt"
    p.write_text(text, encoding="utf-8")
    return p, text.splitlines(keepends=True)


def _oracle(lines: list[str], seed: int, n: int | None = None,
            size: int | None = None) -> list[str]:
    """The lines with the smallest keys (n of them, or as many as fit in size bytes),
    in corpus order."""
    rng = random.Random(seed)
    keyed = sorted((rng.random(), i) for i in range(len(lines)))
    chosen, total = [], 0
    for _, i in keyed:
        b = len(lines[i].encode())
        if (n is not None and len(chosen) == n) or (size is not None and total + b > size):
            break
        chosen.append(i)
        total += b
    return [lines[i] for i in sorted(chosen)]


@pytest.mark.parametrize("seed", [0, 7])
def test_input_sentence_size_keeps_the_smallest_keys(tmp_path: Path, seed: int) -> None:
    p, lines = _corpus(tmp_path)
    got = ts.count(p, model="bpe", input_sentence_size=50, sample_seed=seed)
    want = ts.count(texts=_oracle(lines, seed, n=50), model="bpe")
    assert got.most_common(None) == want.most_common(None)
    other = ts.count(p, model="bpe", input_sentence_size=50, sample_seed=seed + 1)
    assert other.most_common(None) != got.most_common(None)


def test_sample_bytes_keeps_what_fits(tmp_path: Path) -> None:
    p, lines = _corpus(tmp_path)
    got = ts.count(p, model="bpe", sample_bytes=20_000, sample_seed=3)
    chosen = _oracle(lines, 3, size=20_000)
    assert got.bytes_seen == sum(len(s.encode()) for s in chosen) <= 20_000
    assert got.most_common(None) == ts.count(texts=chosen, model="bpe").most_common(None)


@pytest.mark.filterwarnings("ignore::tokensmith.errors.VocabShortfallWarning")
@pytest.mark.parametrize("model", ["bpe", "wordpiece", "unigram", "sentencepiece-bpe",
                                   "wordlevel"])
def test_every_trainer_samples(tmp_path: Path, model: str) -> None:
    p, lines = _corpus(tmp_path)
    out = io.StringIO()
    tok = ts.train(p, model=model, vocab_size=300, input_sentence_size=120, sample_seed=1,
                   verbose=True, stream=out)
    assert f"sampled 120 of {len(lines):,} lines" in out.getvalue()
    same = ts.train(texts=_oracle(lines, 1, n=120), model=model, vocab_size=300)
    assert tok.get_vocab() == same.get_vocab()


def test_bad_sampling_options(tmp_path: Path) -> None:
    p, _ = _corpus(tmp_path)
    for bad in ({"input_sentence_size": 0}, {"sample_bytes": -1},
                {"input_sentence_size": 1.5}, {"sample_seed": "x", "sample_bytes": 10}):
        with pytest.raises(ConfigError):
            ts.count(p, model="bpe", **bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="backend='local'"):
        ts.count(p, model="bpe", backend="ray", input_sentence_size=10)


def test_command_line_samples(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tokensmith.cli import main

    p, lines = _corpus(tmp_path)
    out = tmp_path / "out"
    assert main(["train", str(p), "--vocab-size", "300", "--input-sentence-size", "60",
                 "--sample-seed", "2", "--out", str(out)]) == 0
    assert f"sampled 60 of {len(lines):,} lines" in capsys.readouterr().err
    same = ts.train(texts=_oracle(lines, 2, n=60), model="bpe", vocab_size=300)
    assert ts.load(out).get_vocab() == same.get_vocab()

