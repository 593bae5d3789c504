"""Byte-level BPE in plain Python, written to be read.

This is the oracle for tokensmith's Rust trainer: on the same corpus and options it
learns the same merges in the same order, and it encodes text to the same ids. It is
slow (every merge step recounts every pair), which keeps each step easy to follow.

The algorithm, in four steps:

1. **Pre-tokenize.** A regex cuts each text into pieces (``" hello"``, ``","``, ``"\\n"``
   ...). Merges never cross a piece boundary. Identical pieces are counted once, with a
   count: ``{b" the": 1234, ...}``.
2. **Start from bytes.** Ids 0..255 are the 256 single bytes, so every piece is a list of
   byte ids and nothing is ever out of vocabulary.
3. **Merge.** Count every adjacent pair of ids over all pieces (weighted by the piece's
   count), give the most frequent pair a new id, rewrite every piece with it, repeat.
4. **Encode.** Cut new text the same way; in each piece, keep applying the learned merge
   with the lowest rank (the earliest learned) until no learned merge applies.

Example::

    >>> bpe = train_bpe(["low lower lowest"], vocab_size=258)
    >>> [bpe.vocab[i] for i in range(256, 258)]
    [b'lo', b'low']
    >>> bpe.decode(bpe.encode("slow")) == "slow"
    True
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from .. import patterns

Pair = tuple[int, int]
Word = tuple[int, ...]

__all__ = ["ReferenceBPE", "count_words", "split_text", "train_bpe"]


def _regex_module() -> Any:  # (the `regex` module: it has no type hints)
    """The third-party ``regex`` module (it knows ``\\p{L}``, ``\\p{N}`` and ``(?i:...)``
    groups, which ``re`` does not): the ``reference`` extra installs it."""
    try:
        import regex
    except ImportError:
        from ..errors import ConfigError

        raise ConfigError("tokensmith.reference needs the regex module: "
                          "pip install 'tokensmith[reference]' (or pip install regex)") from None
    return regex


def split_isolated(text: str, regex_source: str) -> list[tuple[str, bool]]:
    """Cut ``text`` at the matches of a regex, keeping the gaps ("Isolated" splitting).

    Returns ``(part, matched)`` for every match and for every stretch of text between two
    matches, in order: no character is dropped. Empty parts are skipped.
    """
    regex = _regex_module()
    parts: list[tuple[str, bool]] = []
    end = 0
    for match in regex.finditer(regex_source, text):
        if match.start() > end:
            parts.append((text[end : match.start()], False))  # the gap before this match
        if match.group():
            parts.append((match.group(), True))
        end = match.end()
    if end < len(text):
        parts.append((text[end:], False))  # the tail after the last match
    return parts


def split_text(text: str, pattern: str = patterns.CL100K) -> list[str]:
    """Pre-tokenize: the pieces of ``text`` (``"".join(split_text(t)) == t``).

    ``pattern`` is a regex or a name from :mod:`tokensmith.patterns` (``"gpt4"``,
    ``"gpt2"`` ...). Matches and the gaps between them are pieces alike.
    """
    return [part for part, _ in split_isolated(text, patterns.resolve(pattern))]


def count_words(texts: Iterable[str], pattern: str = patterns.CL100K) -> Counter[bytes]:
    """Count the UTF-8 bytes of every piece over all texts: ``{b" the": 1234, ...}``.

    Each text is split on its own: a piece never spans two texts.
    """
    counts: Counter[bytes] = Counter()
    for text in texts:
        counts.update(piece.encode("utf-8") for piece in split_text(text, pattern))
    return counts


def count_pairs(words: dict[Word, int]) -> Counter[Pair]:
    """How often each adjacent pair of ids occurs, each word weighted by its count.

    Overlaps count every time: the word ``(a, a, a)`` holds the pair ``(a, a)`` twice.
    """
    pairs: Counter[Pair] = Counter()
    for word, count in words.items():
        for pair in pairwise(word):
            pairs[pair] += count
    return pairs


def best_pair(pairs: Counter[Pair]) -> tuple[Pair, int]:
    """The most frequent pair and its count; a tie goes to the smallest (left, right).

    The tie rule makes training deterministic: it never depends on dict or hash order.
    """
    pair = min(pairs, key=lambda p: (-pairs[p], p))
    return pair, pairs[pair]


def merge_word(word: Word, pair: Pair, new_id: int) -> Word:
    """Replace each occurrence of ``pair`` in ``word`` by ``new_id``, left to right.

    Occurrences do not overlap: with ``pair == (a, a)``, ``(a, a, a)`` becomes
    ``(new_id, a)``.
    """
    out: list[int] = []
    i = 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


@dataclass
class ReferenceBPE:
    """A trained byte-level BPE model.

    ``merges[k]`` is the pair of ids that became id ``256 + k`` (its *rank* is ``k``);
    ``vocab`` maps every id, special tokens included, to its bytes.
    """

    merges: list[Pair]
    vocab: dict[int, bytes]
    pattern: str = patterns.CL100K
    special_tokens: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.ranks: dict[Pair, int] = {pair: k for k, pair in enumerate(self.merges)}

    def encode_piece(self, piece: bytes) -> list[int]:
        """Encode one pre-tokenized piece: apply the lowest-ranked merge until none applies.

        Among several places where that merge applies, the leftmost goes first.
        """
        ids = list(piece)
        while len(ids) > 1:
            ranked = [
                (self.ranks[pair], i)
                for i, pair in enumerate(pairwise(ids))
                if pair in self.ranks
            ]
            if not ranked:
                break
            rank, i = min(ranked)
            ids[i : i + 2] = [256 + rank]
        return ids

    def encode(self, text: str, allowed_special: Iterable[str] | str = ()) -> list[int]:
        """Encode text: cut out allowed special tokens, split the rest, encode each piece.

        ``allowed_special`` names the special tokens to recognise in the text (or
        ``"all"``); any other special-token text is encoded as ordinary text.
        """
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
        """Join the bytes of the ids and decode them as UTF-8 (bad bytes become U+FFFD)."""
        return b"".join(self.vocab[i] for i in ids).decode("utf-8", errors="replace")


def split_specials(text: str, specials: Sequence[str]) -> list[tuple[str, bool]]:
    """Cut ``text`` into ``(chunk, is_special)`` parts at occurrences of ``specials``.

    The earliest occurrence wins; at one position, the longest special token wins.
    """
    if not specials:
        return [(text, False)] if text else []
    regex = _regex_module()

    # Alternatives are tried in order, so longest first gives leftmost-longest matches.
    alternatives = sorted(specials, key=len, reverse=True)
    return split_isolated(text, "|".join(regex.escape(s) for s in alternatives))


def train_bpe(
    texts: Iterable[str],
    vocab_size: int,
    *,
    pattern: str = patterns.CL100K,
    min_frequency: int = 0,
    max_token_length: int | None = None,
    special_tokens: Sequence[str] = (),
) -> ReferenceBPE:
    """Learn byte-level BPE merges from ``texts``, exactly as tokensmith's trainer does.

    ``vocab_size`` counts everything: the 256 bytes, the learned tokens and the special
    tokens. Training stops early when the best pair occurs fewer than
    ``max(min_frequency, 1)`` times. A pair whose token would be longer than
    ``max_token_length`` bytes is never merged. ``pattern`` is a regex or a name from
    :mod:`tokensmith.patterns` (``"gpt4"``, ``"gpt2"`` ...).
    """
    specials = list(dict.fromkeys(special_tokens))  # drop repeats, keep the order
    if vocab_size < 256 + len(specials):
        raise ValueError(f"vocab_size={vocab_size} cannot hold 256 bytes + {len(specials)} "
                         f"special tokens")
    regex_source = patterns.resolve(pattern)
    vocab: dict[int, bytes] = {i: bytes([i]) for i in range(256)}
    words: dict[Word, int] = {
        tuple(piece): n for piece, n in count_words(texts, regex_source).items()
    }
    merges: list[Pair] = []
    while len(merges) < vocab_size - 256 - len(specials):
        pairs = count_pairs(words)
        if max_token_length is not None:
            # Too-long tokens are out of the running. (The Rust trainer drops such a pair when
            # it reaches the top; token lengths never change, so the result is the same.)
            pairs = Counter({
                (a, b): n for (a, b), n in pairs.items()
                if len(vocab[a]) + len(vocab[b]) <= max_token_length
            })
        if not pairs:
            break
        pair, count = best_pair(pairs)
        if count < max(min_frequency, 1):
            break
        new_id = 256 + len(merges)
        merges.append(pair)
        vocab[new_id] = vocab[pair[0]] + vocab[pair[1]]
        # Distinct words stay distinct (their bytes differ), so no counts need adding up.
        words = {merge_word(word, pair, new_id): n for word, n in words.items()}
    special_ids = {s: len(vocab) + i for i, s in enumerate(specials)}
    vocab.update({i: s.encode("utf-8") for s, i in special_ids.items()})
    return ReferenceBPE(merges, vocab, regex_source, special_ids)
