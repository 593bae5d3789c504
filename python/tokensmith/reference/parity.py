"""Parity-aware byte-level BPE in plain Python, written to be read.

After Foroutan, Meister et al. 2025 ("Parity-aware Byte-Pair Encoding: Improving
Cross-lingual Fairness in Tokenization"). This is the oracle for tokensmith's Rust
trainer (``tokensmith.train(..., languages=...)``): on the same texts and options it
learns the same merges in the same order, each for the same language. Every step
recounts everything.

Each merge step:

1. **Measure each language's cost** (higher is worse):

   - ``"dev"``: the number of tokens of its dev lines (the dev texts are parallel:
     line *i* says the same thing in every language, so totals compare directly);
   - ``"bytes"``: tokens of its training text divided by the bytes of that text
     (the inverse of the paper's compression rate, bytes per token);
   - ``"lines"``: tokens of its training text divided by its non-empty lines.

2. **Pick the costliest language** (ties: the first in the given order) and merge
   the pair most frequent in *its* training words (ties: the smallest pair of ids).
   When it has no pair left that may merge (at least ``max(min_frequency, 1)``
   occurrences, not longer than ``max_token_length``), the next costliest picks.
3. **Apply the merge to every word** of every language, training and dev alike.

The first ``parity_start`` merges are classical (the most frequent pair over all
languages together): the paper's hybrid variant.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Literal

from .. import patterns
from .bpe import ReferenceBPE, Word, best_pair, count_pairs, count_words, merge_word

__all__ = ["train_parity_bpe"]


def _words(texts: Sequence[str], regex_source: str) -> dict[Word, int]:
    return {tuple(piece): n for piece, n in count_words(texts, regex_source).items()}


def _tokens(words: dict[Word, int]) -> int:
    return sum(len(w) * n for w, n in words.items())


def _lines(texts: Sequence[str]) -> int:
    return sum(1 for t in texts for line in t.split("\n") if line.strip("\r"))


def train_parity_bpe(
    languages: Mapping[str, Sequence[str]],
    vocab_size: int,
    *,
    dev: Mapping[str, Sequence[str]] | None = None,
    measure: Literal["dev", "bytes", "lines"] = "dev",
    parity_start: int = 0,
    pattern: str = patterns.CL100K,
    min_frequency: int = 0,
    max_token_length: int | None = None,
    special_tokens: Sequence[str] = (),
) -> tuple[ReferenceBPE, list[str | None]]:
    """Learn merges from ``languages`` (language -> its training texts; each text is
    pre-tokenized on its own); ``dev`` maps each language to its dev lines (each line
    pre-tokenized on its own). Returns the model and, per merge, the language it was
    chosen for (``None`` for the classical merges of the hybrid)."""
    regex_source = patterns.resolve(pattern)
    names = list(languages)
    train = {lang: _words(texts, regex_source) for lang, texts in languages.items()}
    dev_words = ({lang: _words([line for line in dev[lang] if line], regex_source)
                  for lang in names} if measure == "dev" and dev is not None else {})
    per = {lang: (1 if measure == "dev" else
                  _tokens(train[lang]) if measure == "bytes" else _lines(languages[lang]))
           for lang in names}
    vocab: dict[int, bytes] = {i: bytes([i]) for i in range(256)}
    merges: list[tuple[int, int]] = []
    chosen: list[str | None] = []
    target = vocab_size - 256 - len(dict.fromkeys(special_tokens))
    while len(merges) < target:
        if len(merges) < parity_start:
            total: dict[Word, int] = Counter()
            for words in train.values():
                total.update(words)
            candidates: list[tuple[str | None, dict[Word, int]]] = [(None, total)]
        else:
            def cost(lang: str) -> Fraction:
                words = dev_words[lang] if measure == "dev" else train[lang]
                return Fraction(_tokens(words), per[lang] or 1)
            order = sorted(names, key=lambda lang: (-cost(lang), names.index(lang)))
            candidates = [(lang, train[lang]) for lang in order]
        picked = None
        for lang, words in candidates:
            pairs = count_pairs(words)
            if max_token_length is not None:
                pairs = Counter({(a, b): n for (a, b), n in pairs.items()
                                 if len(vocab[a]) + len(vocab[b]) <= max_token_length})
            if not pairs:
                continue
            pair, count = best_pair(pairs)
            if count >= max(min_frequency, 1):
                picked = (lang, pair)
                break
        if picked is None:
            break
        lang, pair = picked
        new_id = 256 + len(merges)
        merges.append(pair)
        chosen.append(lang)
        vocab[new_id] = vocab[pair[0]] + vocab[pair[1]]
        for table in (train, dev_words):
            for key, words in table.items():
                table[key] = {merge_word(w, pair, new_id): n for w, n in words.items()}
    specials = list(dict.fromkeys(special_tokens))
    special_ids = {s: len(vocab) + i for i, s in enumerate(specials)}
    vocab.update({i: s.encode("utf-8") for s, i in special_ids.items()})
    return ReferenceBPE(merges, vocab, regex_source, special_ids), chosen
