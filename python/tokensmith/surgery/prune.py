"""Pruning: a smaller vocabulary that keeps the tokens some text uses, with an
id map from the old ids to the new ones.

:func:`prune` counts how often each token is produced on the given text,
removes the tokens used fewer than ``min_count`` times (or keeps the
``vocab_size`` most used) and returns a NEW tokenizer, built in the format the
old one came from (a ``.tiktoken`` rank file, a SentencePiece ``.model``, a
``tokenizer.json``), plus an :class:`IdMap`. The old tokenizer is untouched.

What is never removed: the byte tokens (the 256 single-byte tokens of a
byte-level model, SentencePiece's ``<0xXX>`` pieces and ``tokenizer.json``'s
byte-fallback tokens), the unknown token, special and added tokens
(SentencePiece control and user-defined pieces), the tokens in ``keep``, and,
where a missing character would become unknown (WordPiece, and models with no
byte fallback), every single-character token (with its ``##`` form).

The guarantee
-------------
For any text whose old encoding uses only kept tokens, the new encoding is the
old one mapped id for id through the id map. The closure is what makes it
hold for BPE; the other models need none:

* **BPE** encodes a pre-token (a word; for SentencePiece the whole normalized
  text) by starting from its characters or bytes and repeatedly merging the
  adjacent pair that comes first (lowest rank in a rank file, lowest merge
  rank in ``tokenizer.json``, highest piece score in SentencePiece; leftmost
  among equals) until no adjacent pair forms a token. Merges only join, so no
  merge crosses the boundary between two of the final tokens, and the merges
  made inside a final token ``T`` are the ones BPE makes on ``T``'s own bytes
  alone (without the whole-word shortcut): each was the first pair of the
  whole word at its step, hence the first pair inside ``T``, and merges
  outside ``T`` do not change what is inside it. The closure keeps, for every
  kept ``T``, the two parts of the last merge of that segmentation, and their
  parts, recursively, so every token formed on the way to a kept token is
  kept (a ``tokenizer.json`` keeps the merges whose two sides and result are
  kept, in their order). The new vocabulary is a subset of the old one in the
  same order; at each step the pair the old encoder merged still forms a
  token, and no pair ranked before it forms one (none did before), so the new
  encoder makes the same merge, and it stops where the old one stopped. A
  word that was not one token before is not one now, so the whole-word
  shortcut (rank files, ``ignore_merges``) answers as before; a token that
  BPE does not form from its own bytes comes only from that shortcut and
  needs no parts.
* **WordPiece** takes the longest token that starts each remaining part of a
  word: the old choice is kept, and a longer kept token would have been a
  longer old token, chosen before. (A word the old vocabulary could not cut
  at all, ``[UNK]``, stays unknown as long as every character it has keeps
  its token; every single character and its ``##`` form are kept.)
* **Unigram** takes the best-scoring segmentation: the old best one is still
  a segmentation of the smaller vocabulary, and every other one was already
  possible before, with the same score. (SentencePiece scores an unknown
  character from the lowest piece score, which pruning can raise: that moves
  every segmentation through an unknown character alike, unless a piece
  spans the character.)

Before returning, :func:`prune` checks the guarantee on a sample of the text
it counted; a difference raises :class:`~tokensmith.errors.PruneError` (a bug
to report) and nothing is returned.

The id map
----------
With ``keep_ids=False`` the kept ids are compacted in old-id order (old id
``i`` becomes the number of kept ids below ``i``); special and added tokens
keep their relative order and move down too. With ``keep_ids=True`` every
kept id stays what it was and every removed id is marked unused:
SentencePiece pieces become ``UNUSED`` (type 5); a ``tokenizer.json`` or rank
file gets, at the removed id, a special token named ``<|unused_{id}|>``
(``[unused{id}]`` for WordPiece, BERT's own convention), which text never
produces unless a call allows it. (SentencePiece's BPE still produces an unused
piece that is a single character, so with ``keep_ids=True`` its single
characters are kept.)

Example::

    import tokensmith as ts
    from tokensmith.surgery.prune import prune

    tok = ts.load("cl100k_base")
    small, id_map = prune(tok, files=["en/*.txt"], min_count=2)
    small.save("cl100k-en.tiktoken")
    id_map.save("cl100k-en.idmap.json")
    new_embeddings = id_map.resize_embeddings(old_embeddings)  # (new_size, dim)
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from .._io import atomic_write
from ..errors import (
    ConfigError,
    CorpusEncodingError,
    CorpusError,
    EmptyCorpusError,
    PruneError,
    TokenizerFormatError,
    UnknownIdError,
)
from . import _base

if TYPE_CHECKING:
    import numpy as np

    from ..corpus import Files
    from ..tokenizer import Tokenizer

__all__ = ["prune", "IdMap"]

Errors = Literal["strict", "replace", "skip"]

# SentencePiece piece types (tokensmith.formats.sentencepiece)
_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _UNUSED, _BYTE = 1, 2, 3, 4, 5, 6

_READ_BLOCK = 8 << 20  # bytes of a file read at once (cut after a line break)
_DOC_CHARS = 1 << 16  # long texts are cut at line breaks into documents of about this size
_BATCH_CHARS = 16 << 20  # characters encoded per call (with a block read: < 64 MB held)
_CHECK_CHARS = 256 << 10  # text kept to check the new tokenizer against the old one
_BYTE_FALLBACK = re.compile(r"<0x[0-9A-Fa-f]{2}>\Z")


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        raise ConfigError(
            "pruning counts token ids with numpy: pip install numpy "
            "(or pip install 'tokensmith[numpy]')"
        ) from None
    return numpy


# ====================================================================== IdMap


@dataclass(frozen=True)
class IdMap:
    """Where each old id went: ``old_to_new[i]`` is the new id of old id ``i``, or
    ``-1`` when it has none (a removed token, or an id that was never a token:
    cl100k_base has no ids 100261-100275).

    ``keep_ids`` says the ids were kept in place (``new_size == old_size``; the
    removed ids are unused tokens in the new vocabulary). ``gaps`` are the old
    ids that were never tokens (they are not in :meth:`removed`).
    """

    old_to_new: np.ndarray
    old_size: int
    new_size: int
    keep_ids: bool = False
    gaps: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        np = _numpy()
        arr = np.asarray(self.old_to_new, dtype=np.int64)
        if arr.ndim != 1 or len(arr) != self.old_size:
            raise ConfigError(
                f"IdMap.old_to_new must be a list of {self.old_size} ids (old_size), "
                f"got shape {arr.shape}"
            )
        if len(arr) and (arr.min() < -1 or arr.max() >= self.new_size):
            raise ConfigError(
                f"IdMap.old_to_new holds ids outside -1..{self.new_size - 1} (new_size)"
            )
        arr.setflags(write=False)
        object.__setattr__(self, "old_to_new", arr)
        gaps = tuple(sorted({int(g) for g in self.gaps}))
        if gaps and (gaps[0] < 0 or gaps[-1] >= self.old_size or (arr[list(gaps)] >= 0).any()):
            raise ConfigError("IdMap.gaps must be old ids that have no new id")
        object.__setattr__(self, "gaps", gaps)

    # ------------------------------------------------------------- lookups
    def new_id(self, old: int) -> int | None:
        """The new id of old id ``old``; ``None`` when it was removed."""
        if not 0 <= old < self.old_size:
            raise UnknownIdError(
                f"id {old} is not an id of the old vocabulary (0..{self.old_size - 1})", old
            )
        new = int(self.old_to_new[old])
        return None if new < 0 else new

    def map_ids(self, ids: Iterable[int]) -> list[int]:
        """Old ids as new ids; raises :class:`UnknownIdError` for a removed id."""
        np = _numpy()
        arr = np.asarray(ids if hasattr(ids, "__len__") else list(ids), dtype=np.int64)
        if arr.size == 0:
            return []
        bad = (arr < 0) | (arr >= self.old_size)
        if bad.any():
            i = int(arr[bad][0])
            raise UnknownIdError(f"id {i} is not an id of the old vocabulary", i)
        out = self.old_to_new[arr]
        if (out < 0).any():
            i = int(arr[out < 0][0])
            raise UnknownIdError(
                f"id {i} was removed by the prune; the new vocabulary has no id for it", i
            )
        return [int(x) for x in out]

    def removed(self) -> list[int]:
        """The old ids of the tokens the prune removed, in order (not the :attr:`gaps`)."""
        np = _numpy()
        gaps = set(self.gaps)
        return [int(i) for i in np.flatnonzero(self.old_to_new < 0) if int(i) not in gaps]

    @property
    def kept(self) -> int:
        """How many old ids have a new id."""
        return int((self.old_to_new >= 0).sum())

    # ---------------------------------------------------------- embeddings
    def resize_embeddings(self, matrix: Any) -> np.ndarray:
        """The rows of an ``(old_size, dim)`` embedding matrix (or any array whose
        first axis is the old vocabulary) for the new vocabulary: row ``new_id(i)``
        of the result is row ``i`` of ``matrix``; rows of removed ids are dropped.

        With ``keep_ids`` the result has the same shape; the rows of removed
        (now unused) ids keep their old values, which text never selects.
        """
        np = _numpy()
        m = np.asarray(matrix)
        if m.ndim < 1 or m.shape[0] != self.old_size:
            rows = m.shape[0] if m.ndim else 0
            raise ConfigError(
                f"the matrix has {rows} rows but the old vocabulary has {self.old_size} ids; "
                f"pass the embedding matrix of the tokenizer that was pruned (for a matrix "
                f"padded past the vocabulary, pass matrix[:{self.old_size}])"
            )
        if self.keep_ids:
            return m.copy()
        kept = np.flatnonzero(self.old_to_new >= 0)
        out = np.empty((self.new_size,) + m.shape[1:], dtype=m.dtype)
        out[self.old_to_new[kept]] = m[kept]
        return out

    # -------------------------------------------------------------- files
    def to_json(self) -> str:
        """The map as JSON text: ``{"format": "tokensmith.IdMap", ..., "old_to_new": [...]}``."""
        return json.dumps(
            {
                "format": "tokensmith.IdMap",
                "version": 1,
                "old_size": self.old_size,
                "new_size": self.new_size,
                "keep_ids": self.keep_ids,
                "gaps": list(self.gaps),
                "old_to_new": [int(x) for x in self.old_to_new],
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> IdMap:
        """The map of :meth:`to_json` text."""
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise TokenizerFormatError(f"not an id map: invalid JSON ({e})") from None
        if not isinstance(doc, dict) or doc.get("format") != "tokensmith.IdMap":
            raise TokenizerFormatError(
                'not an id map: expected a JSON object with "format": "tokensmith.IdMap"'
            )
        try:
            old_size, new_size = int(doc["old_size"]), int(doc["new_size"])
            ids, gaps = doc["old_to_new"], doc.get("gaps", [])
            for name, v in (("old_to_new", ids), ("gaps", gaps)):
                if not isinstance(v, list) or not all(type(x) is int for x in v):
                    raise TypeError(f"{name} is not a list of integers")
            return cls(
                ids, old_size, new_size, bool(doc.get("keep_ids", False)), tuple(gaps)
            )
        except (KeyError, TypeError, ValueError) as e:
            raise TokenizerFormatError(f"malformed id map: {e}") from None

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_json` to ``path`` (atomically)."""
        return atomic_write(path, self.to_json())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> IdMap:
        """An id map written by :meth:`save`."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise TokenizerFormatError(f"{p}: not an id map (not UTF-8 text)") from None
        try:
            return cls.from_json(text)
        except TokenizerFormatError as e:
            raise TokenizerFormatError(f"{p}: {e}") from None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IdMap):
            return NotImplemented
        return (
            (self.old_size, self.new_size, self.keep_ids, self.gaps)
            == (other.old_size, other.new_size, other.keep_ids, other.gaps)
            and bool((self.old_to_new == other.old_to_new).all())
        )

    def __hash__(self) -> int:
        return hash((self.old_size, self.new_size, self.keep_ids, self.old_to_new.tobytes()))

    def __repr__(self) -> str:
        how = "ids kept in place" if self.keep_ids else "compacted"
        return (
            f"<tokensmith IdMap {self.old_size} -> {self.new_size} ids, "
            f"{self.kept} kept, {how}>"
        )


# ============================================================ BPE closure

K = TypeVar("K", bound=Hashable)
_INF = float("inf")


def _bpe(
    symbols: list[K], merge: Callable[[K, K], tuple[float, K] | None]
) -> tuple[list[tuple[K, K, K]], bool]:
    """BPE on ``symbols`` with no whole-word shortcut: repeatedly merge the adjacent
    pair that ``merge`` ranks first (lowest first value; leftmost among equals).
    Returns the merges made, as (left, right, made), and whether one token is left."""
    syms = list(symbols)
    cand = [merge(syms[k], syms[k + 1]) for k in range(len(syms) - 1)]
    prio = [_INF if c is None else c[0] for c in cand]
    done: list[tuple[K, K, K]] = []
    while prio:
        best = min(prio)
        if best == _INF:
            break
        at = prio.index(best)
        made = cand[at][1]  # type: ignore[index]
        done.append((syms[at], syms[at + 1], made))
        syms[at : at + 2] = [made]
        del cand[at], prio[at]
        if at > 0:
            c = cand[at - 1] = merge(syms[at - 1], made)
            prio[at - 1] = _INF if c is None else c[0]
        if at < len(syms) - 1:
            c = cand[at] = merge(made, syms[at + 1])
            prio[at] = _INF if c is None else c[0]
    return done, len(syms) == 1


def _bpe_concat(symbols: list[K], table: Mapping[Any, float]) -> tuple[list[tuple[K, K, K]], bool]:
    """:func:`_bpe` where two neighbours merge into their concatenation, ranked by
    ``table`` (rank files: the rank; SentencePiece: minus the piece score)."""
    syms: list[Any] = list(symbols)
    get = table.get
    prio = [get(syms[k] + syms[k + 1], _INF) for k in range(len(syms) - 1)]
    done: list[tuple[K, K, K]] = []
    while prio:
        best = min(prio)
        if best == _INF:
            break
        at = prio.index(best)
        made = syms[at] + syms[at + 1]
        done.append((syms[at], syms[at + 1], made))
        syms[at : at + 2] = [made]
        del prio[at]
        if at > 0:
            prio[at - 1] = get(syms[at - 1] + made, _INF)
        if at < len(syms) - 1:
            prio[at] = get(made + syms[at + 1], _INF)
    return done, len(syms) == 1


# ================================================================== plans


class _Plan:
    """One tokenizer's vocabulary as pruning sees it, and how to rebuild it."""

    size: int
    exists: Any  # numpy bool array: ids that are tokens
    protected: set[int]
    why_protected: str

    def __init__(self, tok: Tokenizer, keep_ids: bool) -> None:
        self.tok = tok
        self.keep_ids = keep_ids
        self._parts: dict[int, tuple[int, int] | None] = {}

    def parts(self, i: int) -> tuple[int, int] | None:
        """The two tokens whose merge forms token ``i`` (None if it is not a BPE merge)."""
        if i not in self._parts:
            self._parts[i] = self._find_parts(i)
        return self._parts[i]

    def _find_parts(self, i: int) -> tuple[int, int] | None:
        return None

    def _length(self, i: int) -> int:
        return 0

    def longest_first(self, ids: Iterable[int]) -> list[int]:
        """``ids`` with the longest tokens first: BPE on a long token records the
        parts of the tokens formed on the way, which then need no BPE of their own."""
        return sorted((int(i) for i in ids), key=lambda i: (-self._length(i), i))

    def _simulate(
        self,
        i: int,
        symbols: list[K],
        merge: Callable[[K, K], tuple[float, K] | None] | Mapping[Any, float],
        id_of: Callable[[K], int | None],
    ) -> tuple[int, int] | None:
        """BPE on token ``i``'s own symbols: its last merge when that forms it. Every
        token formed on the way is recorded with its own last merge too (the merges
        inside it are its own segmentation: see the module documentation).
        ``merge`` is a merge rule, or a table of concatenations' ranks."""
        if isinstance(merge, Mapping):
            merges, whole = _bpe_concat(symbols, merge)
        else:
            merges, whole = _bpe(symbols, merge)
        for a, b, m in merges:
            mi, ai, bi = id_of(m), id_of(a), id_of(b)
            if mi is not None and ai is not None and bi is not None:
                self._parts.setdefault(mi, (ai, bi))
        return self._parts.get(i) if whole else None

    def build(self, kept: Any, old_to_new: Any) -> Tokenizer:
        raise NotImplementedError


def _unused_name(i: int, taken: set[str], wordpiece: bool = False) -> str:
    base = f"[unused{i}]" if wordpiece else f"<|unused_{i}|>"
    name, k = base, 1
    while name in taken:
        name = f"[unused{i}.{k}]" if wordpiece else f"<|unused_{i}.{k}|>"
        k += 1
    taken.add(name)
    return name


class _TiktokenPlan(_Plan):
    """A rank file: ranks are ids, merges are implied by the ranks."""

    def __init__(self, tok: Tokenizer, keep_ids: bool) -> None:
        super().__init__(tok, keep_ids)
        np = _numpy()
        src = tok._tiktoken  # type: ignore[attr-defined]
        self.pattern: str = src.pattern
        self.specials: dict[str, int] = dict(src.special_tokens)
        self.pairs = _base.ranks(tok)
        self.size = tok.vocab_size
        self.rank = {t: r for t, r in self.pairs}
        self.by_id = {r: t for t, r in self.pairs}
        self.exists = np.zeros(self.size, dtype=bool)
        self.exists[[r for _, r in self.pairs]] = True
        self.exists[list(self.specials.values())] = True
        self.protected = {r for t, r in self.pairs if len(t) == 1} | set(self.specials.values())
        self.why_protected = "the 256 byte tokens and the special tokens"

    def _length(self, i: int) -> int:
        return len(self.by_id.get(i, b""))

    def _find_parts(self, i: int) -> tuple[int, int] | None:
        t = self.by_id.get(i)
        if t is None or len(t) < 2:
            return None
        return self._simulate(i, [t[k : k + 1] for k in range(len(t))], self.rank, self.rank.get)

    def build(self, kept: Any, old_to_new: Any) -> Tokenizer:
        pairs = [(t, int(old_to_new[r])) for t, r in self.pairs if kept[r]]
        specials = {c: int(old_to_new[i]) for c, i in self.specials.items()}
        if self.keep_ids:
            taken = set(specials)
            for _, r in self.pairs:
                if not kept[r]:
                    specials[_unused_name(r, taken)] = r
        return _base.from_ranks(pairs, self.pattern, specials)


class _SentencePiecePlan(_Plan):
    """A SentencePiece ``.model``: pieces with scores and types."""

    def __init__(self, tok: Tokenizer, keep_ids: bool) -> None:
        super().__init__(tok, keep_ids)
        np = _numpy()
        from ..formats.sentencepiece import BPE, UNIGRAM

        self.proto = _base.model_proto(tok)
        spec = self.proto.trainer_spec
        self.rows = [(p.piece, float(p.score), int(p.type)) for p in self.proto.pieces]
        self.size = len(self.rows)
        self.exists = np.ones(self.size, dtype=bool)
        model_type = int(spec.model_type) if spec is not None else UNIGRAM
        if model_type not in (BPE, UNIGRAM):
            raise _unsupported(tok)
        self.is_bpe = model_type == BPE
        byte_fallback = bool(spec.byte_fallback) if spec is not None else False
        self.protected, self.why_protected = _sp_protected(
            self.rows, byte_fallback, single_chars=not byte_fallback or (self.is_bpe and keep_ids)
        )
        if spec is not None:
            for name in ("unk_id", "bos_id", "eos_id", "pad_id"):
                v = int(getattr(spec, name))
                if 0 <= v < self.size:
                    self.protected.add(v)
        self._sp_merge = _sp_merger(self.rows) if self.is_bpe else None

    def _length(self, i: int) -> int:
        return len(self.rows[i][0])

    def _find_parts(self, i: int) -> tuple[int, int] | None:
        if self._sp_merge is None:
            return None
        piece, ptype = self.rows[i][0], self.rows[i][2]
        if ptype != _NORMAL or len(piece) < 2:
            return None
        ids, merge = self._sp_merge
        return self._simulate(i, list(piece), merge, ids.get)

    def build(self, kept: Any, old_to_new: Any) -> Tokenizer:
        proto = self.proto
        if self.keep_ids:
            for i, p in enumerate(proto.pieces):
                if not kept[i]:
                    p.type = _UNUSED
        else:
            proto.pieces = [p for i, p in enumerate(proto.pieces) if kept[i]]
            spec = proto.trainer_spec
            if spec is not None:
                for name in ("unk_id", "bos_id", "eos_id", "pad_id"):
                    v = int(getattr(spec, name))
                    if 0 <= v < self.size:
                        setattr(spec, name, int(old_to_new[v]))
        # its samples were written for the old vocabulary
        proto.self_test_data = None
        return _base.from_model_proto(proto)


def _sp_protected(
    rows: Sequence[Sequence[Any]], byte_fallback: bool, single_chars: bool
) -> tuple[set[int], str]:
    fixed = (_UNKNOWN, _CONTROL, _USER_DEFINED, _BYTE)
    keep = {i for i, r in enumerate(rows) if int(r[2]) in fixed}
    why = "the unknown, control, user-defined and byte pieces"
    if single_chars:
        keep |= {i for i, r in enumerate(rows) if len(r[0]) == 1 and int(r[2]) == _NORMAL}
        why += " and the single characters"
    return keep, why


def _sp_merger(rows: Sequence[Sequence[Any]]) -> tuple[dict[str, int], dict[str, float]]:
    """SentencePiece BPE's merge rule: two neighbours merge when their concatenation
    is a piece (normal, user-defined or unused), highest score first. Returns
    piece -> id and piece -> minus its score (lowest first)."""
    ids: dict[str, int] = {}
    for i, (p, _, t) in enumerate(rows):
        if int(t) in (_NORMAL, _USER_DEFINED, _UNUSED):
            ids.setdefault(p, i)
    return ids, {p: -float(rows[i][1]) for p, i in ids.items()}


def _unsupported(tok: Tokenizer) -> Exception:
    from ..errors import UnsupportedComponentError

    return UnsupportedComponentError(
        f"pruning works on BPE, WordPiece and Unigram models; {tok!r} is not one"
    )


class _JsonPlan(_Plan):
    """A ``tokenizer.json`` document (everything that is not a rank file or a ``.model``)."""

    def __init__(self, tok: Tokenizer, keep_ids: bool) -> None:
        super().__init__(tok, keep_ids)
        np = _numpy()
        self.doc = _base.spec(tok)
        self.family = _base.family(tok, self.doc)
        model = self.doc.get("model") or {}
        self.model = model
        self.kind: str = model.get("type", "BPE")
        self.size = tok.vocab_size
        vocab = model.get("vocab")
        if self.kind == "Unigram":
            if not isinstance(vocab, list):
                raise TokenizerFormatError("model.vocab: expected a list of [piece, score]")
            self.names: dict[int, str] = {i: str(v[0]) for i, v in enumerate(vocab)}
        else:
            if not isinstance(vocab, dict):
                raise TokenizerFormatError("model.vocab: expected an object of token -> id")
            self.names = {int(i): str(t) for t, i in vocab.items()}
        self.ids = {t: i for i, t in self.names.items()}
        self.added = {int(a["id"]): str(a["content"]) for a in self.doc.get("added_tokens") or []}
        self.size = max(self.size, 1 + max(list(self.names) + list(self.added), default=-1))
        self.exists = np.zeros(self.size, dtype=bool)
        self.exists[list(self.names)] = True
        self.exists[list(self.added)] = True

        byte_fallback = bool(model.get("byte_fallback"))
        protected = set(self.added)
        why = ["the special and added tokens"]
        unk = model.get("unk_token") if self.kind != "Unigram" else None
        if isinstance(unk, str) and unk in self.ids:
            protected.add(self.ids[unk])
        if self.kind == "Unigram" and isinstance(model.get("unk_id"), int):
            protected.add(int(model["unk_id"]))
        if byte_fallback:
            protected |= {i for i, t in self.names.items() if _BYTE_FALLBACK.match(t)}
            why.append("the byte-fallback tokens")
        self.rows: list[list[Any]] | None = None
        self.piece_types: list[int] | None = None
        if self.family == "sp-bpe" and isinstance(model.get("sentencepiece"), list):
            self.rows = [list(r) for r in model["sentencepiece"]]
        elif self.kind == "Unigram" and isinstance(model.get("piece_types"), list):
            self.piece_types = [int(t) for t in model["piece_types"]]
        self.prefix: str = ""
        self.suffix: str = ""
        if self.kind == "WordPiece":
            self.prefix = str(model.get("continuing_subword_prefix") or "")
            protected |= {
                i for i, t in self.names.items()
                if len(t) == 1 or (t.startswith(self.prefix) and len(t) == len(self.prefix) + 1)
            }
            why.append("every single character and its ## form")
        elif self.family == "byte-bpe":
            protected |= {i for i, t in self.names.items() if len(t) == 1}
            why.append("the 256 byte tokens")
        elif self.family == "char-bpe":
            self.prefix = str(model.get("continuing_subword_prefix") or "")
            self.suffix = str(model.get("end_of_word_suffix") or "")
            if not byte_fallback:
                protected |= {i for i, t in self.names.items() if len(self._core_of(t)) == 1}
                why.append("the single characters")
        elif self.rows is not None:
            p, w = _sp_protected(self.rows, byte_fallback, single_chars=not byte_fallback)
            protected |= p
            why.append(w)
        elif self.kind == "Unigram":
            if self.piece_types is not None:
                rows = [(self.names[i], 0.0, t) for i, t in enumerate(self.piece_types)]
                protected |= _sp_protected(rows, byte_fallback, single_chars=False)[0]
            if not byte_fallback:
                protected |= {i for i, t in self.names.items() if len(t) == 1}
                why.append("the single characters")
        self.protected = protected
        self.why_protected = ", ".join(why[:-1]) + (" and " if len(why) > 1 else "") + why[-1]

        # how BPE forms a token: from the merge list, or (none given) from the ranks
        self._merge: Callable[[Any, Any], tuple[float, Any] | None] | None = None
        self._merges = [_merge_pair(m) for m in model.get("merges") or []]
        self._first: dict[str, tuple[str, str]] | None = None
        if self.rows is not None:
            self._sp = _sp_merger(self.rows)
        elif self.kind == "BPE" and self._merges:
            ranked: dict[tuple[str, str], tuple[float, str]] = {}
            for r, (a, b) in enumerate(self._merges):
                ranked.setdefault((a, b), (r, self._join(a, b)))
            self._merge = lambda a, b: ranked.get((a, b))
        elif self.kind == "BPE":
            # merges implied by the ids, as in a rank file
            raw = {i: tok.id_to_bytes(i) for i in self.names}
            rank = {t: i for i, t in sorted(raw.items(), reverse=True) if t is not None}
            self._raw, self._rank = raw, rank

    # ------------------------------------------------------------- BPE
    def _core_of(self, t: str) -> str:
        """A character-level BPE token without its ``##`` prefix and end-of-word suffix."""
        if self.prefix and t.startswith(self.prefix) and len(t) > len(self.prefix):
            t = t[len(self.prefix) :]
        if self.suffix and t.endswith(self.suffix) and len(t) > len(self.suffix):
            t = t[: -len(self.suffix)]
        return t

    def _join(self, a: str, b: str) -> str:
        """The token a merge forms (the prefix of the right side is dropped)."""
        if self.prefix and b.startswith(self.prefix):
            return a + b[len(self.prefix) :]
        return a + b

    def _symbols(self, t: str) -> list[str]:
        """The characters BPE starts from for a word that is exactly ``t``."""
        pre, suf = self.prefix, self.suffix
        body, first, last = t, True, False
        if pre and body.startswith(pre) and len(body) > len(pre):
            body, first = body[len(pre) :], False
        if suf and body.endswith(suf) and len(body) > len(suf):
            body, last = body[: -len(suf)], True
        syms = [c if (k == 0 and first) else pre + c for k, c in enumerate(body)]
        if last and syms:
            syms[-1] += suf
        return syms

    def _length(self, i: int) -> int:
        return len(self.names.get(i, ""))

    def _find_parts(self, i: int) -> tuple[int, int] | None:
        if self.kind != "BPE" or (i in self.added and i not in self.names):
            return None
        if self.rows is not None:
            if i >= len(self.rows) or self.rows[i][2] != _NORMAL or len(self.rows[i][0]) < 2:
                return None
            ids, sp_merge = self._sp
            return self._simulate(i, list(self.rows[i][0]), sp_merge, ids.get)
        t = self.names.get(i)
        if t is None:
            return None
        if self._merge is not None:
            found = self._simulate(i, self._symbols(t), self._merge, self.ids.get)
            if found is not None:
                return found
            # not formed from its own characters: the first merge that spells it
            if self._first is None:
                self._first = {}
                for a, b in self._merges:
                    self._first.setdefault(self._join(a, b), (a, b))
            lm = self._first.get(t)
            if lm is None or lm[0] not in self.ids or lm[1] not in self.ids:
                return None
            return self.ids[lm[0]], self.ids[lm[1]]
        raw = self._raw.get(i)
        if not raw or len(raw) < 2:
            return None
        rank = self._rank
        return self._simulate(i, [raw[k : k + 1] for k in range(len(raw))], rank, rank.get)

    # ----------------------------------------------------------- build
    def build(self, kept: Any, old_to_new: Any) -> Tokenizer:
        doc, model = self.doc, self.model

        def new(i: int) -> int:
            return int(old_to_new[i])

        rename: dict[int, str] = {}
        if self.keep_ids:
            # the names the new vocabulary keeps (a removed token's name is free)
            taken = {t for i, t in self.names.items() if kept[i]} | set(self.added.values())
            wordpiece = self.kind == "WordPiece"
            rename = {
                i: _unused_name(i, taken, wordpiece)
                for i in range(self.size)
                if self.exists[i] and not kept[i]
            }
        if self.kind == "Unigram":
            vocab = model["vocab"]
            if self.keep_ids:
                model["vocab"] = [
                    [rename[i], v[1]] if i in rename else v for i, v in enumerate(vocab)
                ]
                if self.piece_types is not None:
                    model["piece_types"] = [
                        _UNUSED if i in rename else t for i, t in enumerate(self.piece_types)
                    ]
            else:
                model["vocab"] = [v for i, v in enumerate(vocab) if kept[i]]
                if self.piece_types is not None:
                    model["piece_types"] = [t for i, t in enumerate(self.piece_types) if kept[i]]
                if isinstance(model.get("unk_id"), int):
                    model["unk_id"] = new(model["unk_id"])
        else:
            model["vocab"] = {
                rename.get(i, t): (i if self.keep_ids else new(i))
                for t, i in self.ids.items()
                if self.keep_ids or kept[i]
            }
        if self.rows is not None:
            if self.keep_ids:
                model["sentencepiece"] = [
                    [rename[i], r[1], _UNUSED] if i in rename else r
                    for i, r in enumerate(self.rows)
                ]
            else:
                model["sentencepiece"] = [r for i, r in enumerate(self.rows) if kept[i]]
        if self.kind == "BPE" and isinstance(model.get("merges"), list):
            ids = self.ids

            def keeps(a: str, b: str) -> bool:
                made = ids.get(self._join(a, b))
                return (
                    a in ids and b in ids and bool(kept[ids[a]]) and bool(kept[ids[b]])
                    and (made is None or bool(kept[made]))
                )

            model["merges"] = [
                m for m, (a, b) in zip(model["merges"], self._merges, strict=True) if keeps(a, b)
            ]
        added = [dict(a, id=new(int(a["id"]))) for a in doc.get("added_tokens") or []]
        for i, name in rename.items():
            added.append({
                "id": i, "content": name, "single_word": False, "lstrip": False,
                "rstrip": False, "normalized": False, "special": True,
            })
        doc["added_tokens"] = sorted(added, key=lambda a: a["id"])
        if doc.get("post_processor"):
            doc["post_processor"] = _remap_processor(doc["post_processor"], new)
        padding = doc.get("padding")
        if isinstance(padding, dict) and isinstance(padding.get("pad_id"), int):
            if 0 <= padding["pad_id"] < self.size and new(padding["pad_id"]) >= 0:
                padding["pad_id"] = new(padding["pad_id"])
        return _base.from_spec(doc)


def _merge_pair(m: Any) -> tuple[str, str]:
    if isinstance(m, str):
        a, _, b = m.partition(" ")
        return a, b
    return str(m[0]), str(m[1])


def _remap_processor(p: Any, new: Callable[[int], int]) -> Any:
    """A post-processor with the ids it names (template special tokens, BERT's and
    RoBERTa's ``cls``/``sep``) mapped to the new ids."""
    if isinstance(p, list):
        return [_remap_processor(x, new) for x in p]
    if not isinstance(p, dict):
        return p
    out = dict(p)
    kind = p.get("type")
    if kind == "TemplateProcessing" and isinstance(p.get("special_tokens"), dict):
        out["special_tokens"] = {
            name: dict(st, ids=[_mapped(i, new, name) for i in st.get("ids", [])])
            for name, st in p["special_tokens"].items()
        }
    for key in ("cls", "sep"):
        v = p.get(key)
        if isinstance(v, list) and len(v) == 2 and isinstance(v[1], int):
            out[key] = [v[0], _mapped(v[1], new, str(v[0]))]
    if isinstance(p.get("processors"), list):
        out["processors"] = [_remap_processor(x, new) for x in p["processors"]]
    return out


def _mapped(i: int, new: Callable[[int], int], name: str) -> int:
    try:
        j = new(i)
    except IndexError:
        j = -1
    if j < 0:
        raise PruneError(
            f"the post-processor adds {name!r} (id {i}), which is not a token of the "
            f"vocabulary; fix the tokenizer's post_processor before pruning"
        )
    return j


def _plan(tok: Tokenizer, keep_ids: bool) -> _Plan:
    kind = _base.origin(tok)
    if kind == "tiktoken":
        return _TiktokenPlan(tok, keep_ids)
    if kind == "sentencepiece":
        return _SentencePiecePlan(tok, keep_ids)
    return _JsonPlan(tok, keep_ids)


# =============================================================== counting


def _cut(text: str, size: int = _DOC_CHARS) -> Iterator[str]:
    """A long text as documents of about ``size`` characters, cut after a line break
    (after one followed by text, not inside a run of blank lines or indentation)."""
    start, n = 0, len(text)
    while n - start > size:
        end = start + size
        cut = text.rfind("\n", start, end)
        while cut > start and cut + 1 < n and text[cut + 1].isspace():
            cut = text.rfind("\n", start, cut)
        if cut <= start:
            cut = text.find("\n", end)
            if cut < 0:
                break
        yield text[start : cut + 1]
        start = cut + 1
    if start < n:
        yield text[start:]


def _file_texts(paths: list[Path], errors: Errors) -> Iterator[str]:
    """The text of each file in blocks cut after a line break (bounded memory)."""
    from .. import corpus

    mode = {"strict": "strict", "replace": "replace", "skip": "ignore"}[errors]
    for p in paths:
        if not corpus._is_plain(p):
            yield from corpus.file_texts(p, errors, "text")
            continue
        offset = 0
        with p.open("rb") as f:
            pending: list[bytes] = []  # read, no line break yet (joined once)
            while True:
                chunk = f.read(_READ_BLOCK)
                if not chunk:
                    break
                cut = _line_cut(chunk)
                if cut == 0:
                    pending.append(chunk)
                    continue
                data = b"".join(pending) + chunk[:cut]
                pending = [chunk[cut:]]
                yield _decode(data, mode, p, offset)
                offset += len(data)
            rest = b"".join(pending)
            if rest:
                yield _decode(rest, mode, p, offset)


def _line_cut(chunk: bytes) -> int:
    """Where to cut a block: after its last line break that text follows (not inside
    a run of blank lines or indentation, which pre-tokenizers keep together), else
    after its last line break; 0 when it has none."""
    end = len(chunk) - 1
    while True:
        at = chunk.rfind(b"\n", 0, end)
        if at < 0:
            return chunk.rfind(b"\n") + 1
        if chunk[at + 1] not in b" \t\r\n\x0b\x0c":
            return at + 1
        end = at


def _decode(data: bytes, mode: str, path: Path, offset: int) -> str:
    try:
        return data.decode("utf-8", mode)
    except UnicodeDecodeError as e:
        raise CorpusEncodingError(
            f"{path}: invalid UTF-8 at byte offset {offset + e.start}", str(path), offset + e.start
        ) from None


def _documents(
    texts: Iterable[str] | None, files: Files | None, errors: Errors
) -> Iterator[str]:
    if texts is not None:
        if isinstance(texts, (str, bytes)):
            raise ConfigError(
                "texts must be an iterable of strings, not one string; wrap it: texts=[text]"
            )
        for t in texts:
            if not isinstance(t, str):
                raise CorpusError(f"texts must be strings, got {type(t).__name__}")
            yield from _cut(t)
    if files is not None:
        from ..corpus import expand

        for block in _file_texts(expand(files), errors):
            yield from _cut(block)


@dataclass
class _Counts:
    counts: Any  # numpy int64, one per id
    chars: int = 0
    tokens: int = 0
    documents: int = 0
    sample: list[str] = field(default_factory=list)


def _count(tok: Tokenizer, size: int, docs: Iterable[str]) -> _Counts:
    np = _numpy()
    out = _Counts(np.zeros(size, dtype=np.int64))
    sample_chars = 0
    batch: list[str] = []
    chars = 0

    def flush() -> None:
        ids, _ = tok.encode_batch_to_numpy(batch, disallowed_special=(), add_special_tokens=False)
        if len(ids):
            out.counts += np.bincount(ids, minlength=size)[:size]
        out.tokens += len(ids)

    for d in docs:
        if not d:
            continue
        batch.append(d)
        chars += len(d)
        out.documents += 1
        if sample_chars < _CHECK_CHARS and len(batch) % 16 == 1:
            piece = d[:4096]
            out.sample.append(piece)
            sample_chars += len(piece)
        if chars >= _BATCH_CHARS:
            flush()
            out.chars += chars
            batch, chars = [], 0
    if batch:
        flush()
        out.chars += chars
    return out


# ================================================================ choosing


def _resolve_keep(tok: Tokenizer, plan: _Plan, keep: Iterable[str | int]) -> list[int]:
    """The ids of the ``keep`` tokens: vocabulary strings, their text, or ids."""
    if isinstance(keep, (str, bytes)):
        keep = [keep]  # type: ignore[list-item]
    out: list[int] = []
    by_bytes: dict[bytes, int] | None = None
    missing: list[str] = []
    for k in keep:
        if isinstance(k, bool) or not isinstance(k, (str, int)):
            raise ConfigError(f"keep: tokens are strings or ids, got {type(k).__name__}")
        if isinstance(k, int):
            if 0 <= k < plan.size and plan.exists[k]:
                out.append(k)
            else:
                missing.append(str(k))
            continue
        i = tok.token_to_id(k)
        if i is None and " " in k:
            i = tok.token_to_id(k.replace(" ", "\u2581"))
        if i is None:
            if by_bytes is None:
                by_bytes = {}
                for j, raw in sorted(_base.token_bytes(tok).items(), reverse=True):
                    by_bytes[raw] = j
            i = by_bytes.get(k.encode("utf-8"))
        if i is None or not (0 <= i < plan.size and plan.exists[i]):
            missing.append(repr(k))
        else:
            out.append(i)
    if missing:
        raise PruneError(
            f"keep: {', '.join(missing[:5])}{' …' if len(missing) > 5 else ''} "
            f"{'is' if len(missing) == 1 else 'are'} not in the vocabulary; pass tokens as "
            f"the vocabulary spells them (tok.get_vocab()), as their text, or as ids"
        )
    return out


class _Closure:
    """The kept set, grown with the parts every kept token is built from."""

    def __init__(self, plan: _Plan) -> None:
        np = _numpy()
        self.plan = plan
        self.kept = np.zeros(plan.size, dtype=bool)
        self.n = 0

    def missing(self, i: int) -> list[int]:
        """``i`` and the parts it needs that are not kept yet."""
        if self.kept[i]:
            return []
        out, seen, stack = [], {i}, [i]
        while stack:
            j = stack.pop()
            out.append(j)
            parts = self.plan.parts(j)
            if parts is not None:
                for q in parts:
                    if not self.kept[q] and q not in seen:
                        seen.add(q)
                        stack.append(q)
        return out

    def add(self, ids: Iterable[int]) -> None:
        for j in ids:
            if not self.kept[j]:
                self.kept[j] = True
                self.n += 1


@dataclass
class _Result:
    tokenizer: Tokenizer
    id_map: IdMap
    old_size: int
    old_tokens: int
    new_tokens: int
    chosen: int
    closure: int
    protected: int
    why_protected: str
    counted: _Counts
    seconds: float


def _prune(
    tok: Tokenizer,
    texts: Iterable[str] | None = None,
    files: Files | None = None,
    *,
    min_count: int = 1,
    vocab_size: int | None = None,
    keep_ids: bool = False,
    keep: Iterable[str | int] = (),
    errors: Errors = "strict",
) -> _Result:
    t0 = time.perf_counter()
    np = _numpy()
    if texts is None and files is None:
        raise ConfigError("give the text to count token use on: texts=[...] or files=[...]")
    if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 0:
        raise ConfigError(f"min_count must be an integer >= 0, got {min_count!r}")
    if vocab_size is not None and (
        isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 1
    ):
        raise ConfigError(f"vocab_size must be a positive integer, got {vocab_size!r}")
    if errors not in ("strict", "replace", "skip"):
        raise ConfigError(f"errors must be 'strict', 'replace' or 'skip', got {errors!r}")
    plan = _plan(tok, bool(keep_ids))
    keep_list = _resolve_keep(tok, plan, keep)

    counted = _count(tok, plan.size, _documents(texts, files, errors))
    if counted.chars == 0:
        raise EmptyCorpusError(
            "no text to count token use on: every text (and file) given is empty"
        )
    counts = counted.counts

    cl = _Closure(plan)
    base_ids = plan.longest_first(plan.protected | set(keep_list))
    for i in base_ids:
        cl.add(cl.missing(i))
    n_base = cl.n
    direct = set(base_ids)
    eligible = np.flatnonzero(plan.exists & (counts >= min_count) & ~cl.kept)
    if vocab_size is None:
        direct.update(int(i) for i in eligible)
        for i in plan.longest_first(eligible):
            cl.add(cl.missing(i))
    else:
        if n_base > vocab_size:
            raise PruneError(
                f"vocab_size={vocab_size} is too small: {plan.why_protected}"
                f"{' and the keep tokens' if keep_list else ''} (with the tokens they are "
                f"built from) are {n_base} tokens, which are never removed; pass "
                f"vocab_size >= {n_base}"
            )
        order = eligible[np.lexsort((eligible, -counts[eligible]))]
        for i in order:
            if cl.n >= vocab_size:
                break
            need = cl.missing(int(i))
            if need and cl.n + len(need) <= vocab_size:
                direct.add(int(i))
                cl.add(need)
    kept = cl.kept
    n_kept = int(kept.sum())
    if keep_ids:
        old_to_new = np.where(kept, np.arange(plan.size), -1)
        new_size = plan.size
    else:
        old_to_new = np.where(kept, np.cumsum(kept) - 1, -1)
        new_size = n_kept
    new_tok = plan.build(kept, old_to_new)
    if new_tok.vocab_size != new_size:
        raise PruneError(
            f"the pruned tokenizer has {new_tok.vocab_size} ids where {new_size} were expected "
            f"(this is a bug in tokensmith; please report it)"
        )
    gaps = tuple(int(i) for i in np.flatnonzero(~plan.exists))
    id_map = IdMap(old_to_new.astype(np.int64), plan.size, new_size, bool(keep_ids), gaps)
    _check(tok, new_tok, id_map, counted.sample)
    return _Result(
        tokenizer=new_tok,
        id_map=id_map,
        old_size=plan.size,
        old_tokens=int(plan.exists.sum()),
        new_tokens=n_kept,
        chosen=len(direct - set(plan.protected)),
        closure=n_kept - len(direct | set(plan.protected)),
        protected=len(plan.protected),
        why_protected=plan.why_protected,
        counted=counted,
        seconds=time.perf_counter() - t0,
    )


def _check(old: Tokenizer, new: Tokenizer, id_map: IdMap, sample: list[str]) -> None:
    """The guarantee, on a sample of the text counted: where the old ids are all
    kept, the new ids are the old ones mapped."""
    if not sample:
        return
    np = _numpy()
    before = old.encode_batch(sample, disallowed_special=(), add_special_tokens=False)
    after = new.encode_batch(sample, disallowed_special=(), add_special_tokens=False)
    table = id_map.old_to_new
    for text, a, b in zip(sample, before, after, strict=True):
        mapped = table[np.asarray(a, dtype=np.int64)] if a else np.zeros(0, dtype=np.int64)
        if (mapped < 0).any():
            continue
        if mapped.tolist() != b:
            raise PruneError(
                f"the pruned tokenizer encodes {text[:60]!r} … differently from the old one "
                f"(this is a bug in tokensmith; please report it with the tokenizer); "
                f"nothing was changed"
            )


def prune(
    tok: Tokenizer,
    texts: Iterable[str] | None = None,
    files: Files | None = None,
    *,
    min_count: int = 1,
    vocab_size: int | None = None,
    keep_ids: bool = False,
    keep: Iterable[str | int] = (),
    errors: Errors = "strict",
) -> tuple[Tokenizer, IdMap]:
    """A new tokenizer without the tokens ``texts``/``files`` rarely use, and the id
    map from old ids to new ones. ``tok`` is unchanged.

    Token use is counted on ``texts`` (strings, each a document) and ``files``
    (paths, folders or globs; ``.gz``/``.bz2``/``.xz`` and ``.jsonl`` with a
    ``"text"`` field are read too, in blocks, cut at line breaks). Tokens
    produced fewer than ``min_count`` times are removed; with ``vocab_size=V``
    the ``V`` most used are kept (ties to the lower id), where ``V`` counts every
    kept token, the protected ones and those the closure adds back included
    (tokens used fewer than ``min_count`` times still go; pass ``min_count=0``
    to fill up to ``V`` with unused tokens, lowest ids first).

    Never removed: byte tokens, the unknown token, special and added tokens,
    the tokens in ``keep`` (vocabulary strings such as ``"Ġthe"`` or ``"▁the"``,
    their text such as ``" the"``, or ids), and for WordPiece and models without
    byte fallback every single character; for BPE every token a kept token is
    built from (its merge closure). The guarantee: text whose old encoding uses
    only kept tokens is encoded to the same tokens, ids mapped through
    :attr:`IdMap.old_to_new`. See the module's documentation for why.

    ``keep_ids=True`` keeps ids in place and marks removed ids unused (see the
    module documentation); otherwise ids are compacted in old-id order.
    ``errors`` says what to do with invalid UTF-8 in files: ``"strict"`` (raise
    :class:`~tokensmith.errors.CorpusEncodingError`), ``"replace"`` or ``"skip"``.

    Raises :class:`~tokensmith.errors.PruneError` for a ``keep`` token not in the
    vocabulary and for a ``vocab_size`` below what can never be removed (the
    message names the minimum), :class:`~tokensmith.errors.EmptyCorpusError` when
    there is no text, :class:`~tokensmith.errors.ConfigError` for bad options
    (and when numpy, which counting needs, is missing).
    """
    r = _prune(
        tok, texts, files, min_count=min_count, vocab_size=vocab_size, keep_ids=keep_ids,
        keep=keep, errors=errors,
    )
    return r.tokenizer, r.id_map
