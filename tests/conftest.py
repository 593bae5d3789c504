"""Shared fixtures: generated text, a small trained tokenizer, and the
reference files in ../shared/ when they are there (tests that need them skip
with a reason, shown in the summary by ``-ra``)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import tokensmith as ts

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
ASSETS = SHARED / "assets"
CORPUS = SHARED / "corpus"

WORDS = (
    "the of and to in is that for it with as was on be by this are from at or an "
    "token tokenizer merge vocabulary byte pair encoding model text train language "
    "lower lowest newer newest wider widest running runner ran quick brown fox jumps"
).split()
ZH = "分词器把文本切成模型能读的整数序列每个词元对应一个编号训练语料越大词表越好"
CODE = [
    "def f(x):\n    return x + 1\n",
    "for i in range(10):\n\tprint(i, end=' ')\n",
    "class A:\n    '''Doc.'''\n    value: int = 42\n",
]


def make_text(seed: int, n_words: int = 400) -> str:
    """Deterministic mixed text: English-like words, Chinese, code, numbers, punctuation."""
    rng = random.Random(seed)
    parts: list[str] = []
    for _ in range(n_words):
        r = rng.random()
        if r < 0.70:
            w = rng.choice(WORDS)
            parts.append(w.capitalize() if rng.random() < 0.1 else w)
        elif r < 0.78:
            k = rng.randrange(len(ZH) - 4)
            parts.append(ZH[k : k + rng.randrange(2, 5)])
        elif r < 0.84:
            parts.append(str(rng.randrange(0, 10**rng.randrange(1, 8))))
        elif r < 0.90:
            parts.append(rng.choice([",", ".", "!", "?", ";", "'s", "'ll", "—", "(", ")"]))
        elif r < 0.93:
            parts.append(rng.choice(CODE))
        else:
            parts.append(rng.choice(["\n", "\n\n", "  ", "\t", "é", "naïve", "😀", "👍🏽"]))
    return " ".join(parts)


@pytest.fixture(scope="session")
def corpus_texts() -> list[str]:
    return [make_text(i) for i in range(60)]


@pytest.fixture(scope="session")
def trained(corpus_texts: list[str]) -> ts.Tokenizer:
    return ts.train(texts=corpus_texts, vocab_size=600, special_tokens=["<|endoftext|>", "<|pad|>"])


def asset(*parts: str) -> Path:
    p = ASSETS.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"reference file {p} is not present (../shared/assets is optional)")
    return p


def corpus_file(name: str) -> Path:
    p = CORPUS / name
    if not p.exists():
        pytest.skip(f"corpus file {p} is not present (../shared/corpus is optional)")
    return p
