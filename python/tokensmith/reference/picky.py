"""PickyBPE in plain Python, written to be read.

After Chizhov, Arnett, Korotkova, Yamshchikov 2024 ("BPE Gets Picky: Efficient
Vocabulary Refinement During Tokenizer Training"). This is the oracle for tokensmith's
Rust trainer and encoder (``tokensmith.train(..., picky_threshold=τ)``): on the same
texts and options it makes the same events in the same order, and it encodes text to
the same ids. Every step recounts everything.

Training: byte-level BPE (see :mod:`tokensmith.reference.bpe`), and after each merge
``(x1, x2) -> x3`` that consumed ``n`` occurrences of the pair:

1. for ``x1``, then ``x2`` (once when they are the same token), if it is a learned
   token (not a byte) still in the vocabulary: ``c`` = how many of its occurrences
   the merge consumed (``n``; ``2n`` when ``x1 == x2``), ``f`` = how many are left in
   the words now, ``IoS = c / (c + f)``;
2. at ``IoS >= τ`` it is removed: every occurrence left becomes the tokens it was
   made of (its first merge's two parts, each split again where it is itself
   removed), and it leaves the vocabulary;
3. a merge whose token exists already takes that token's id (a removed one comes
   back into the vocabulary).

Training stops when the vocabulary (bytes and present learned tokens) reaches
``vocab_size`` minus the special tokens, when no pair occurs ``min_frequency`` times
(at least once), or after 4 merges per learned slot (a guard against a low τ
removing and remaking the same tokens for ever).

Encoding a pre-tokenized piece replays the events in order on its bytes: a merge
replaces each adjacent pair left to right, a removal splits each instance of its
token; no event applies twice. The ids are the present tokens numbered in the order
they were first made, after the 256 bytes; the special tokens follow.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import patterns
from .bpe import Word, best_pair, count_pairs, count_words, merge_word, split_specials, split_text

__all__ = ["ReferencePicky", "train_picky_bpe"]

#: Merges per learned slot before training gives up (as the Rust trainer).
MAX_MERGES_PER_SLOT = 4


@dataclass
class ReferencePicky:
    """A trained PickyBPE model in symbols: ``tokens[s]`` is symbol ``s``'s bytes
    (the 256 bytes, then every token ever made), ``events`` in order:
    ``("merge", a, b, new, count)`` or ``("remove", x, parts, ios)``."""

    tokens: list[bytes]
    events: list[tuple[Any, ...]]
    present: list[bool]
    pattern: str = patterns.CL100K
    special_tokens: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        kept = [s for s, p in enumerate(self.present) if p]
        self.ids: dict[int, int] = {s: i for i, s in enumerate(kept)}
        self.vocab: dict[int, bytes] = {i: self.tokens[s] for s, i in self.ids.items()}

    def readable_events(self) -> list[tuple[Any, ...]]:
        """The events with tokens as bytes: ``("merge", left, right, count)`` and
        ``("remove", token, parts, ios)``."""
        t = self.tokens
        return [("merge", t[e[1]], t[e[2]], e[4]) if e[0] == "merge"
                else ("remove", t[e[1]], [t[p] for p in e[2]], e[3]) for e in self.events]

    def replay(self, piece: bytes) -> list[int]:
        """The symbols of a piece after every event, one event at a time."""
        syms: Word = tuple(piece)
        for event in self.events:
            if event[0] == "merge":
                syms = merge_word(syms, (event[1], event[2]), event[3])
            else:
                x, parts = event[1], event[2]
                syms = tuple(p for s in syms for p in (parts if s == x else (s,)))
        return list(syms)

    def encode_piece(self, piece: bytes) -> list[int]:
        return [self.ids[s] for s in self.replay(piece)]

    def encode(self, text: str, allowed_special: Iterable[str] | str = ()) -> list[int]:
        wanted = self.special_tokens if allowed_special == "all" else set(allowed_special)
        allowed = sorted(s for s in wanted if s in self.special_tokens)
        ids: list[int] = []
        for chunk, is_special in split_specials(text, allowed):
            if is_special:
                ids.append(self.special_tokens[chunk])
                continue
            for piece in split_text(chunk, self.pattern):
                ids.extend(self.encode_piece(piece.encode("utf-8")))
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        return b"".join(self.vocab[i] for i in ids).decode("utf-8", errors="replace")


def _token_counts(words: dict[Word, int]) -> Counter[int]:
    counts: Counter[int] = Counter()
    for word, n in words.items():
        for s in word:
            counts[s] += n
    return counts


def _parts(x: int, made_of: dict[int, tuple[int, int]], present: list[bool]) -> list[int]:
    """The present tokens ``x`` splits into: its two parts, each split again where it
    is itself removed."""
    out: list[int] = []
    for y in made_of[x]:
        out.extend([y] if y < 256 or present[y] else _parts(y, made_of, present))
    return out


def train_picky_bpe(
    texts: Sequence[str],
    vocab_size: int,
    threshold: float,
    *,
    pattern: str = patterns.CL100K,
    min_frequency: int = 0,
    max_token_length: int | None = None,
    special_tokens: Sequence[str] = (),
) -> ReferencePicky:
    """Learn PickyBPE from ``texts`` (each pre-tokenized on its own)."""
    regex_source = patterns.resolve(pattern)
    words: dict[Word, int] = {tuple(piece): n
                              for piece, n in count_words(texts, regex_source).items()}
    tokens = [bytes([b]) for b in range(256)]
    by_bytes = {t: i for i, t in enumerate(tokens)}
    present = [True] * 256
    made_of: dict[int, tuple[int, int]] = {}
    events: list[tuple[Any, ...]] = []
    specials = list(dict.fromkeys(special_tokens))
    target = vocab_size - len(specials)
    merges = 0
    while sum(present) < target and merges < (target - 256) * MAX_MERGES_PER_SLOT:
        pairs = count_pairs(words)
        if max_token_length is not None:
            pairs = Counter({(a, b): n for (a, b), n in pairs.items()
                             if len(tokens[a]) + len(tokens[b]) <= max_token_length})
        if not pairs:
            break
        pair, count = best_pair(pairs)
        if count < max(min_frequency, 1):
            break
        a, b = pair
        merged = tokens[a] + tokens[b]
        if merged not in by_bytes:
            by_bytes[merged] = len(tokens)
            tokens.append(merged)
            present.append(False)
            made_of[by_bytes[merged]] = pair
        t = by_bytes[merged]
        present[t] = True
        before = _token_counts(words)
        words = {merge_word(w, pair, t): n for w, n in words.items()}
        after = _token_counts(words)
        merges += 1
        events.append(("merge", a, b, t, count))
        for x in dict.fromkeys(pair):
            consumed = before[x] - after[x]
            if x < 256 or not present[x] or consumed <= 0:
                continue
            ios = consumed / (consumed + _token_counts(words)[x])
            if ios >= threshold:
                present[x] = False
                parts = _parts(x, made_of, present)
                words = {tuple(p for s in w for p in (parts if s == x else (s,))): n
                         for w, n in words.items()}
                events.append(("remove", x, parts, ios))
    kept = sum(present)
    return ReferencePicky(tokens, events, present, regex_source,
                          {s: kept + i for i, s in enumerate(specials)})
