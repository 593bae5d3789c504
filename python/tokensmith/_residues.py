"""Residue tokens: tokens a text almost only meets inside longer tokens.

A BPE vocabulary keeps every intermediate token its merges made: ``"ucti"`` on the
way to ``"uction"``. Where nearly every occurrence of such a token in real text is
inside a longer token, its id is almost never produced, and its embedding almost
never trained (an under-trained token: PickyBPE, Chizhov et al. 2024, and the
glitch-token studies). :func:`residues` measures it on a text:

emitted
    how many times the token is a token of the text's encoding;
inside
    how many times it is part of a longer token of that encoding: for a BPE with
    merges, a node of that token's merge tree (``"ucti"`` in ``"uction"`` =
    ``"ucti" + "on"``), counted once per node; for WordPiece, Unigram and
    others, a substring of the longer token's text;
IoS
    intersection over self (PickyBPE's name): ``inside / (inside + emitted)``.

A token is a residue when it was met at least ``min_count`` times in all and its
IoS is at least ``threshold``. Bytes, characters, special tokens and
byte-fallback pieces are never residues.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

__all__ = ["Residue", "residues"]

#: Longest token text (characters) whose substrings are counted as ``inside``.
SUBSTRING_MAX = 64


@dataclass(frozen=True)
class Residue:
    """A token met mostly inside longer tokens (see the module text)."""

    id: int
    token: str
    """As :func:`tokensmith.evaluate.show_piece` shows it."""
    emitted: int
    inside: int
    ios: float


def residues(
    tok: Tokenizer,
    texts: Iterable[str],
    *,
    merges: Sequence[tuple[str, str]] = (),
    threshold: float = 0.9,
    min_count: int = 10,
) -> tuple[list[Residue], int]:
    """The residues of ``tok`` on ``texts`` (most inside first) and how many of
    its learned tokens the texts never produced. ``merges`` (a BPE's, in rank
    order) selects the merge-tree count; without them substrings are counted."""
    from .evaluate import _kinds, show_piece, token_text

    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
    if min_count < 1:
        raise ValueError(f"min_count must be at least 1, got {min_count!r}")
    kinds = _kinds(tok)
    emitted: Counter[int] = Counter()
    for ids in tok.encode_batch(list(texts), disallowed_special=(), add_special_tokens=False):
        emitted.update(ids)
    vocab = tok.get_vocab()
    learned = [i for i in sorted(set(vocab.values()))
               if i not in kinds.special and i not in kinds.byte_fallback
               and len(_chars(token_text(tok, i))) > 1]
    if merges:
        # (a PickyBPE's trees pass through the tokens it removed: they are nodes, but
        # not in the vocabulary)
        through = getattr(tok._core, "model_type", "") == "PickyBPE"
        inside = _inside_merge_trees(vocab, merges, emitted, kinds.prefix, through)
    else:
        inside = _inside_substrings(tok, learned, emitted)
    found = []
    for i in learned:
        e, n = emitted.get(i, 0), inside.get(i, 0)
        if e + n >= min_count and n / (e + n) >= threshold:
            # (a continuation piece by its own name: ``##tha`` is not ``tha``)
            shown = (tok.id_to_token(i) or "") if kinds.prefix else show_piece(token_text(tok, i))
            found.append(Residue(id=i, token=shown, emitted=e, inside=n, ios=n / (e + n)))
    found.sort(key=lambda r: (-r.ios, -r.inside, r.id))
    unused = sum(1 for i in learned if emitted.get(i, 0) == 0)
    return found, unused


def _chars(raw: bytes) -> str:
    """A token's text, or its bytes one per character where it is not whole characters."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _inside_merge_trees(vocab: dict[str, int], merges: Sequence[tuple[str, str]],
                        emitted: Counter[int], prefix: str,
                        through_unknown: bool = False) -> dict[int, int]:
    """Per token, the nodes it is in the merge trees of the emitted tokens: each
    merged token passes its count (its own and its trees') to its two parts, later
    merges first. With ``through_unknown``, tokens the vocabulary does not have (a
    PickyBPE's removed tokens) are nodes too, under ids of their own (negative)."""
    extra: dict[str, int] = {}

    def id_of(token: str) -> int | None:
        if token in vocab or not through_unknown:
            return vocab.get(token)
        return extra.setdefault(token, -1 - len(extra))

    parts: list[tuple[int, int, int]] = []
    seen: set[int] = set()
    for a, b in merges:
        merged = a + (b[len(prefix):] if prefix and b.startswith(prefix) else b)
        j = vocab.get(merged, vocab.get(a + b)) if merged in vocab or not through_unknown \
            else id_of(merged)
        ia, ib = id_of(a), id_of(b)
        if j is None or ia is None or ib is None or j in seen:
            continue  # a second path to a token (rank files): its first one counts
        seen.add(j)
        parts.append((j, ia, ib))
    total: Counter[int] = Counter(emitted)
    for j, ia, ib in reversed(parts):
        n = total.get(j, 0)
        if n:
            total[ia] += n
            total[ib] += n
    return {i: total[i] - emitted.get(i, 0) for i in total}


def _inside_substrings(tok: Tokenizer, learned: list[int],
                       emitted: Counter[int]) -> dict[int, int]:
    """Per learned token, how often its text occurs inside the emitted tokens' (longer)
    texts, weighted by how often each was emitted."""
    from .evaluate import token_text

    occurs: Counter[str] = Counter()
    for i, n in emitted.items():
        text = _chars(token_text(tok, i))[:SUBSTRING_MAX]
        for lo in range(len(text)):
            for hi in range(lo + 2, len(text) + 1):
                if hi - lo < len(text):
                    occurs[text[lo:hi]] += n
    out: dict[int, int] = {}
    for i in learned:
        n = occurs.get(_chars(token_text(tok, i)), 0)
        if n:
            out[i] = n
    return out
