"""Unigram training (Kudo 2018) in plain Python, written to be read.

The oracle for tokensmith's Rust Unigram trainer: each step below is one
function, and the tests check that the Rust core computes the same seed
pieces, the same expected counts, the same pruning and the same vocabulary.
It is slow (dictionaries of every substring, one lattice at a time).

1. **Words.** Each line is normalized as SentencePiece's ``identity`` rule
   does (spaces at the ends dropped, runs of spaces made one, a space put in
   front, every space written ``▁``) and cut before every ``▁``:
   ``"Hello  world"`` → ``▁Hello``, ``▁world``. Identical words are counted.
2. **Characters.** The most frequent characters covering
   ``character_coverage`` of all characters are kept; the others can never
   be inside a piece (they encode as unknown).
3. **Seed.** Candidate pieces are the substrings (2 to ``max_piece_length``
   characters) that a suffix tree of the word list has as nodes: substrings
   occurring twice or more whose occurrences do not all continue with the
   same character (or that are ``max_piece_length`` long), and whole words
   seen twice or more. Each scores (summed word counts) × length; the
   characters score their counts. Scores become log probabilities.
4. **EM.** The E-step computes, for every word, the probability of each
   piece occurrence over all its segmentations (forward–backward on the
   lattice of pieces found at each position) and adds it, times the word's
   count, to the piece's expected count. The M-step drops pieces expected
   less than 0.5 times (characters stay) and scores each as
   ψ(count) − ψ(total).
5. **Prune.** For each piece, the best segmentation of the piece's own
   string without it is its replacement; the loss of removing it is
   ``F · (log p(piece) − Σ log p(replacement))`` with counts from the
   Viterbi segmentation of the corpus. The pieces with the smallest loss go
   until ``shrinking_factor`` of them are left (never fewer than 1.1 ×
   ``vocab_size``); a piece its own Viterbi split never uses goes at once.
6. **Finalize.** Repeat 4–5 until the vocabulary is within 1.1 × the target,
   then keep every character and the best-scoring pieces.

The one-script rule needs Unicode script properties, which Python's
``unicodedata`` does not have: :func:`script_of` reads them from character
names, which is exact for the scripts the tests use (Latin, Han, kana,
Cyrillic, Greek, digits, ASCII punctuation).
"""

from __future__ import annotations

import math
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

SPACE = "\u2581"
UNK_PENALTY = 10.0
MIN_EXPECTED = 0.5

__all__ = [
    "count_words",
    "kept_characters",
    "is_valid_piece",
    "seed_pieces",
    "e_step",
    "m_step",
    "prune",
    "train_unigram",
    "Lattice",
]


def normalize_line(line: str) -> str:
    """SentencePiece's ``identity`` normalization with its default whitespace handling."""
    words = [w for w in line.split(" ") if w]
    return "".join(SPACE + w for w in words)


def count_words(lines: Iterable[str]) -> Counter[str]:
    """``▁``-prefixed words of every line, counted."""
    counts: Counter[str] = Counter()
    for line in lines:
        for raw in line.split("\n"):
            text = normalize_line(raw.removesuffix("\r"))
            start = 0
            for i in range(1, len(text) + 1):
                if i == len(text) or text[i] == SPACE:
                    if i > start:
                        counts[text[start:i]] += 1
                    start = i
    return counts


def kept_characters(words: Counter[str], coverage: float) -> list[tuple[str, int]]:
    """The most frequent characters covering ``coverage`` of all characters."""
    freq: Counter[str] = Counter()
    for w, c in words.items():
        for ch in w:
            freq[ch] += c
    ranked = sorted(freq.items(), key=lambda kv: (-kv[1], kv[0]))
    total = sum(freq.values())
    kept, acc = [], 0
    for ch, c in ranked:
        kept.append((ch, c))
        acc += c
        if acc / total >= coverage:
            break
    return kept


def script_of(ch: str) -> str:
    """The Unicode script of a character, as the one-script rule uses it."""
    name = unicodedata.name(ch, "")
    cat = unicodedata.category(ch)
    if cat == "Mn" or cat == "Me":
        return "Inherited"
    for prefix, script in (("LATIN", "Latin"), ("CJK", "Han"), ("HIRAGANA", "Han"),
                           ("KATAKANA", "Han"), ("CYRILLIC", "Cyrillic"), ("GREEK", "Greek"),
                           ("ARABIC", "Arabic"), ("HEBREW", "Hebrew"), ("HANGUL", "Hangul"),
                           ("DEVANAGARI", "Devanagari"), ("THAI", "Thai")):
        if name.startswith(prefix):
            return script
    if ch == "\u30fc":
        return "Han"
    return "Common"


def is_valid_piece(piece: str, max_len: int = 16) -> bool:
    """At most ``max_len`` characters, ``▁`` only in front, one script
    (Hiragana, Katakana and Han count as one; combining marks join anything)."""
    if not piece or len(piece) > max_len:
        return False
    if len(piece) == 1:
        return True
    if all(c == SPACE for c in piece):
        return False
    prev = None
    for i, ch in enumerate(piece):
        if ch == SPACE:
            if i != 0:
                return False
            continue
        s = script_of(ch)
        if s == "Inherited":
            continue
        if prev is not None and prev != s:
            return False
        prev = s
    return True


def seed_pieces(words: Counter[str], kept: list[tuple[str, int]], max_len: int = 16,
                seed_size: int = 1_000_000) -> dict[str, float]:
    """Step 3: the seed vocabulary with log-probability scores."""
    keep = {ch for ch, _ in kept}
    occurrences: dict[str, list[tuple[int, object]]] = {}
    ordered = sorted(words.items())
    for wi, (w, c) in enumerate(ordered):
        for i in range(len(w)):
            for n in range(1, max_len + 1):
                if i + n > len(w):
                    break
                s = w[i:i + n]
                # what follows: the next character (all unknown ones alike), or the
                # end of this word (different from every other word's end)
                nxt: object = w[i + n] if i + n < len(w) else ("end", wi, i)
                if isinstance(nxt, str) and nxt not in keep:
                    nxt = "unknown"
                occurrences.setdefault(s, []).append((c, nxt))
    scores: dict[str, float] = {}
    for s, occ in occurrences.items():
        if len(s) < 2 or len(occ) < 2 or any(ch not in keep for ch in s):
            continue
        branching = len(s) == max_len or len({nxt for _, nxt in occ}) > 1
        if branching and is_valid_piece(s, max_len):
            scores[s] = float(sum(c for c, _ in occ) * len(s))
    for w, c in ordered:
        if c >= 2 and len(w) <= max_len and all(ch in keep for ch in w) and is_valid_piece(w,
                                                                                         max_len):
            scores[w] = max(scores.get(w, 0.0), float(c * len(w)))
    best = sorted(scores.items(), key=lambda kv: -kv[1])[: max(0, seed_size - len(kept))]
    seed = {ch: float(c) for ch, c in kept}
    seed.update(best)
    log_total = math.log(sum(seed.values()))
    return {p: math.log(s) - log_total for p, s in seed.items()}


@dataclass
class Lattice:
    """All pieces found at each position of a word: nodes ``(start, end, piece)``
    (``piece`` None for an unknown character), scored by the model."""

    word: str
    nodes: list[tuple[int, int, str | None, float]]

    @classmethod
    def build(cls, word: str, scores: dict[str, float], skip: str | None = None) -> Lattice:
        unk = min(scores.values()) - UNK_PENALTY
        max_len = max(len(p) for p in scores)
        nodes: list[tuple[int, int, str | None, float]] = []
        for i in range(len(word)):
            single = False
            for n in range(1, min(max_len, len(word) - i) + 1):
                p = word[i:i + n]
                if p in scores and p != skip:
                    nodes.append((i, i + n, p, scores[p]))
                    single |= n == 1
            if not single:
                nodes.append((i, i + 1, None, unk))
        return cls(word, nodes)

    def marginals(self) -> tuple[dict[str, float], float]:
        """Expected occurrences of each piece, and log Z (forward–backward)."""
        n = len(self.word)
        alpha = [-math.inf] * (n + 1)
        beta = [-math.inf] * (n + 1)
        alpha[0] = beta[n] = 0.0
        for s, e, _, sc in self.nodes:
            alpha[e] = _log_add(alpha[e], alpha[s] + sc)
        for s, e, _, sc in reversed(self.nodes):
            beta[s] = _log_add(beta[s], beta[e] + sc)
        z = alpha[n]
        out: dict[str, float] = {}
        for s, e, p, sc in self.nodes:
            if p is not None:
                out[p] = out.get(p, 0.0) + math.exp(alpha[s] + sc + beta[e] - z)
        return out, z

    def viterbi(self) -> tuple[list[str | None], float]:
        """The best segmentation and its score."""
        n = len(self.word)
        best: list[tuple[float, int]] = [(-math.inf, -1)] * (n + 1)
        best[0] = (0.0, -1)
        for k, (s, e, _, sc) in enumerate(self.nodes):
            if best[s][0] > -math.inf and best[s][0] + sc > best[e][0]:
                best[e] = (best[s][0] + sc, k)
        path, at = [], n
        while at > 0:
            s, _, p, _ = self.nodes[best[at][1]]
            path.append(p)
            at = s
        return path[::-1], best[n][0]


def _log_add(a: float, b: float) -> float:
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    hi, lo = max(a, b), min(a, b)
    return hi + math.log1p(math.exp(lo - hi))


def e_step(scores: dict[str, float], words: Counter[str]) -> tuple[dict[str, float], float, int]:
    """Expected piece counts over the corpus, -log-likelihood per word, tokens."""
    expected = dict.fromkeys(scores, 0.0)
    objective, tokens = 0.0, 0
    for w, c in sorted(words.items()):
        lattice = Lattice.build(w, scores)
        marg, z = lattice.marginals()
        for p, m in marg.items():
            expected[p] += c * m
        objective += c * z
        tokens += c * len(lattice.viterbi()[0])
    return expected, -objective / sum(words.values()), tokens


def digamma(x: float) -> float:
    """ψ(x) for x > 0 (recurrence up to 7, then the asymptotic series)."""
    result = 0.0
    while x < 7:
        result -= 1 / x
        x += 1
    x -= 0.5
    xx2 = 1 / (x * x)
    xx4 = xx2 * xx2
    return (result + math.log(x) + xx2 / 24 - 7 * xx4 / 960 + 31 * xx4 * xx2 / 8064
            - 127 * xx4 * xx4 / 30720)


def m_step(expected: dict[str, float], chars: set[str]) -> dict[str, float]:
    """New scores: ψ(count) − ψ(total); rare pieces dropped, characters kept."""
    kept = {p: (max(f, MIN_EXPECTED) if p in chars else f) for p, f in expected.items()
            if p in chars or f >= MIN_EXPECTED}
    log_total = digamma(sum(kept.values()))
    return {p: digamma(f) - log_total for p, f in kept.items()}


def prune(scores: dict[str, float], words: Counter[str], chars: set[str], target: int,
          shrinking_factor: float = 0.75) -> dict[str, float]:
    """Keep the pieces whose removal would cost the most likelihood."""
    freq = dict.fromkeys(scores, 0.0)
    for w, c in words.items():
        for p in Lattice.build(w, scores).viterbi()[0]:
            if p is not None:
                freq[p] += c
    total = sum(freq.values())
    keep: list[str] = []
    candidates: list[tuple[float, int, str]] = []
    for index, p in enumerate(scores):
        if p in chars:
            keep.append(p)
            continue
        with_it = Lattice.build(p, scores).viterbi()[0]
        if len(with_it) >= 2 or freq[p] == 0:
            continue  # never used whole: removable at no cost
        without, best = Lattice.build(p, scores, skip=p).viterbi()
        if best == -math.inf or None in without:
            keep.append(p)  # nothing can replace it
            continue
        f = freq[p] / total
        logprob = math.log(freq[p]) - math.log(total)
        log_alt_total = math.log(total + freq[p] * (len(without) - 1))
        logprob_alt = sum(math.log(freq[a] + freq[p]) - log_alt_total
                          for a in without if a is not None)
        candidates.append((f * (logprob - logprob_alt), index, p))
    size = max(target, int(shrinking_factor * len(scores)))
    for _, _, p in sorted(candidates, key=lambda t: (-t[0], t[1])):
        if len(keep) >= size:
            break
        keep.append(p)
    return {p: scores[p] for p in scores if p in set(keep)}


def train_unigram(lines: Iterable[str], vocab_size: int, *, character_coverage: float = 0.9995,
                  max_piece_length: int = 16, seed_size: int = 1_000_000,
                  shrinking_factor: float = 0.75,
                  num_sub_iterations: int = 2) -> list[tuple[str, float]]:
    """Learned pieces (characters included) with scores, best first.

    ``vocab_size`` counts learned pieces only (no ``<unk>`` or control pieces).
    """
    words = count_words(lines)
    kept = kept_characters(words, character_coverage)
    chars = {ch for ch, _ in kept}
    scores = seed_pieces(words, kept, max_piece_length, seed_size)
    desired = int(vocab_size * 1.1)
    while True:
        for _ in range(num_sub_iterations):
            expected, _, _ = e_step(scores, words)
            scores = m_step(expected, chars)
        if len(scores) <= desired:
            break
        before = len(scores)
        scores = prune(scores, words, chars, desired, shrinking_factor)
        if len(scores) >= before:
            break
    order = sorted(enumerate(scores.items()),
                   key=lambda t: (t[1][0] not in chars, -t[1][1], t[0]))[:vocab_size]
    return sorted(((p, s) for _, (p, s) in order), key=lambda t: (-t[1], t[0]))
