"""The pure-Python Unigram trainer (tokensmith.reference.unigram) against the Rust core,
step by step: seed, E-step, M-step, pruning, and whole training runs."""

from __future__ import annotations

import json
import math
import random

import pytest
import tokensmith as ts
from tokensmith import _core
from tokensmith.reference import unigram as ref

LATIN = ("lower lowest newer newest wider widest token tokens tokenizer train trains "
         "trained model models the then there their other mother").split()
HAN = "分词器把文本切成模型能读的整数序列"
KANA = "ひらがなカタカナー"


def corpus(seed: int, n_lines: int = 60) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for _ in range(n_lines):
        parts = []
        for _ in range(rng.randrange(3, 12)):
            r = rng.random()
            if r < 0.7:
                parts.append(rng.choice(LATIN))
            elif r < 0.85:
                k = rng.randrange(len(HAN) - 3)
                parts.append(HAN[k:k + rng.randrange(2, 4)] + rng.choice(["", KANA[:3]]))
            elif r < 0.95:
                parts.append(str(rng.randrange(1000)) + rng.choice(["", ",", "."]))
            else:
                parts.append(rng.choice(["(x)", "a-b", "é", "Ωmega"]))
        lines.append("  ".join(parts) if rng.random() < 0.2 else " ".join(parts))
    return lines


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_steps_match(seed: int) -> None:
    lines = corpus(seed)
    words = ref.count_words(lines)
    kept = ref.kept_characters(words, 0.999)
    chars = "".join(ch for ch, _ in kept)
    word_list = sorted(words.items())

    # seed: the same pieces with the same scores
    ours = ref.seed_pieces(words, kept, 8, 10**6)
    rust = dict(_core._unigram_seed(word_list, 0.999, 8, 10**6))
    assert set(ours) == set(rust)
    assert all(close(ours[p], rust[p]) for p in ours)

    # one E-step and one M-step from the same pieces
    pieces = list(rust.items())
    scores = dict(pieces)
    expected, objective, tokens = ref.e_step(scores, words)
    r_expected, r_objective, r_tokens = _core._unigram_e_step(pieces, word_list, chars)
    assert tokens == r_tokens
    assert close(objective, r_objective)
    assert all(close(expected[p], e) for (p, _), e in zip(pieces, r_expected, strict=True))
    stepped = ref.m_step(expected, set(chars))
    r_stepped = _core._unigram_m_step(pieces, r_expected, chars)
    assert [p for p, _ in r_stepped] == list(stepped)
    assert all(close(stepped[p], s) for p, s in r_stepped)

    # one pruning round
    target = max(len(chars) + 5, len(stepped) // 3)
    pruned = ref.prune(stepped, words, set(chars), target)
    r_pruned = _core._unigram_prune(r_stepped, word_list, chars, target, 0.75)
    assert [p for p, _ in r_pruned] == list(pruned)


@pytest.mark.parametrize("seed", range(4))
def test_whole_training_matches(seed: int) -> None:
    lines = corpus(100 + seed, 80)
    learned = ref.train_unigram(lines, 60, character_coverage=0.999, max_piece_length=8)
    tok = ts.train(texts=lines, model="unigram", vocab_size=63, character_coverage=0.999,
                   max_piece_length=8)
    spec = tok.to_str(pretty=False)

    # the .model stores scores as 32-bit floats: same pieces, scores equal to float32
    # precision (pieces whose scores tie in exact arithmetic may be listed in either order)
    vocab = dict(json.loads(spec)["model"]["vocab"][3:])
    assert set(vocab) == {p for p, _ in learned}
    assert all(math.isclose(vocab[p], s, rel_tol=1e-6) for p, s in learned)


def test_reference_words_match_the_core() -> None:
    lines = ["  Hello   world  ", "a\tb c\r", "", "分词 器"]
    assert ref.count_words(lines) == {"▁Hello": 1, "▁world": 1, "▁a\tb": 1, "▁c": 1,
                                      "▁分词": 1, "▁器": 1}
    tok = ts.train(texts=["\n".join(lines)] * 3, model="unigram", vocab_size=40,
                   character_coverage=1.0, hard_vocab_limit=False)
    assert tok.token_to_id("▁Hello") is not None


def test_reference_piece_rules() -> None:
    assert ref.is_valid_piece("▁the") and ref.is_valid_piece("カタカナ分")
    assert not ref.is_valid_piece("a▁") and not ref.is_valid_piece("ab1")
    assert ref.is_valid_piece("12,") and not ref.is_valid_piece("▁▁")
