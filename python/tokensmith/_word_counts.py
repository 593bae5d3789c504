"""The :class:`WordCounts` type: distinct pieces of a corpus with their counts, how
they were counted, and their ``.counts`` file. :func:`tokensmith.count` makes them
(:mod:`tokensmith.counts`, which re-exports this); the trainers take them through
:func:`use_counts`. A module of its own because counting a corpus for training
(``corpus``) needs the type, and :func:`tokensmith.count` needs the trainers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from . import _core
from .errors import ConfigError, EmptyCorpusError, TokenizerFormatError

__all__ = ["WordCounts", "use_counts", "FORMAT"]


FORMAT = "tokensmith word counts"


class WordCounts:
    """Distinct pieces of a corpus with their counts, and how they were counted.

    Made by :func:`count`, :meth:`load`, ``+`` and :meth:`merge`, :meth:`filter`;
    given to :func:`tokensmith.train` as ``counts=``.
    """

    def __init__(self, counter: Any, components: dict[str, Any], model: str | None) -> None:
        self._counter = counter
        self._components = components
        self.model = model
        """The model name the counts were taken for (``None`` when not known)."""

    # ----------------------------------------------------------- inspection
    @property
    def components(self) -> dict[str, Any]:
        """The pipeline the text went through (``tokenizer.json`` components)."""
        return json.loads(json.dumps(self._components))

    def __len__(self) -> int:
        """The number of distinct pieces."""
        return int(self._counter.distinct)

    @property
    def total(self) -> int:
        """All pieces counted, repeats included."""
        return int(self._counter.total)

    @property
    def bytes_seen(self) -> int:
        """The bytes of text counted (summed over merged counts)."""
        return int(self._counter.bytes_seen)

    def most_common(self, n: int | None = 10) -> list[tuple[str, int]]:
        """The ``n`` most frequent pieces (all with ``None``), ties in byte order.

        A piece that is not whole UTF-8 (a byte-level piece can be) shows its bytes
        escaped."""
        k = len(self) if n is None else max(0, n)
        return [(p.decode("utf-8", "backslashreplace"), c)
                for p, c in self._counter.most_common(k)]

    def __repr__(self) -> str:
        return (f"<WordCounts {len(self):,} pieces, {self.total:,} counted"
                + (f", for {self.model}" if self.model else "") + ">")

    # ------------------------------------------------------------ combining
    def _empty(self) -> WordCounts:
        return WordCounts(_core.WordCounter(json.dumps(self._components)), self._components,
                          self.model)

    def copy(self) -> WordCounts:
        new = self._empty()
        new._counter.absorb(self._counter)
        return new

    def __add__(self, other: WordCounts) -> WordCounts:
        if not isinstance(other, WordCounts):
            return NotImplemented
        return WordCounts.merge([self, other])

    @classmethod
    def merge(cls, parts: Iterable[WordCounts]) -> WordCounts:
        """The counts of all ``parts`` added up (they must be counted the same way); the
        result does not depend on their order."""
        items = list(parts)
        if not items:
            raise ConfigError("merge needs at least one WordCounts")
        first = items[0]
        for i, other in enumerate(items[1:], 1):
            if not isinstance(other, WordCounts):
                raise ConfigError(f"part {i} is a {type(other).__name__}, not WordCounts")
            _check_same(first._components, other._components, f"part {i}")
        out = first.copy()
        for other in items[1:]:
            out._counter.absorb(other._counter)
        return out

    def filter(self, *, min_count: int = 1, top: int | None = None) -> WordCounts:
        """A copy with the pieces seen at least ``min_count`` times, and of those the
        ``top`` most frequent (ties in byte order)."""
        if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 0:
            raise ConfigError(f"min_count must be a non-negative integer, not {min_count!r}")
        if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 0):
            raise ConfigError(f"top must be a non-negative integer or None, not {top!r}")
        out = self.copy()
        out._counter.retain(min_count, top)
        return out

    # ---------------------------------------------------------------- files
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write a ``.counts`` file (atomically); returns its path."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        header = {
            "format": FORMAT, "components": self._components, "model": self.model,
            "distinct": len(self), "total": self.total, "bytes": self.bytes_seen,
        }
        self._counter.save_counts(str(p), json.dumps(header, ensure_ascii=False))
        return p

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> WordCounts:
        """Read a ``.counts`` file written by :meth:`save`."""
        p = str(Path(path))
        if not Path(p).is_file():
            raise FileNotFoundError(f"{p}: no such counts file")
        header = _header(p)
        counter = _core.WordCounter(json.dumps(header["components"]))
        got = json.loads(counter.load_counts(p))
        counter.add_counts([], int(got.get("bytes", 0)))
        out = cls(counter, header["components"], header.get("model"))
        if len(out) != header.get("distinct", len(out)):
            raise TokenizerFormatError(f"{p}: the header says {header['distinct']} pieces, "
                                       f"the file holds {len(out)}")
        return out


def _header(path: str) -> dict[str, Any]:
    try:
        header = json.loads(_core.read_counts_header(path))
    except json.JSONDecodeError as e:
        raise TokenizerFormatError(f"{path}: the counts header is not JSON ({e})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT or not isinstance(
            header.get("components"), dict):
        raise TokenizerFormatError(f"{path}: the header does not describe tokensmith word counts")
    return header


def _check_same(a: dict[str, Any], b: dict[str, Any], what: str) -> None:
    if json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True):
        raise ConfigError(
            f"{what} was counted with another pipeline ({_describe(b)}) than the first "
            f"({_describe(a)}); counts add up only when the text went through the same one"
        )


def _describe(components: dict[str, Any]) -> str:
    def name(c: Any) -> str:
        if not isinstance(c, dict):
            return "none"
        if c.get("type") == "Sequence":
            inner = c.get("pretokenizers") or c.get("normalizers") or []
            return "+".join(name(x) for x in inner)
        return str(c.get("type"))

    lines = ", one sentence a line" if components.get("lines") else ""
    normalizer = name(components.get("normalizer"))
    if normalizer == "SentencePiece":
        normalizer += f" ({components.get('normalization_rule_name', 'identity')} rules)"
    return (f"normalizer {normalizer}, pre-tokenizer "
            f"{name(components.get('pre_tokenizer'))}{lines}")


# ------------------------------------------------------------------ counting
class _Probe:
    """Given as ``counts=`` to a trainer: it stops at counting and says its pipeline."""


class _Probed(Exception):
    def __init__(self, components: dict[str, Any]) -> None:
        super().__init__("probe")
        self.components = components


_PROBE = _Probe()


def use_counts(counts: Any, components: dict[str, Any], files: Any, texts: Any) -> Any:
    """The counter a trainer trains on when it was given ``counts=`` (see
    :func:`tokensmith.corpus.count_corpus`)."""
    if counts is _PROBE:
        raise _Probed(components)
    if not isinstance(counts, WordCounts):
        raise ConfigError(f"counts must be WordCounts (from ts.count or WordCounts.load), "
                          f"not {type(counts).__name__}")
    if files is not None or texts is not None:
        raise ConfigError("give counts= or files/texts, not both (add them with "
                          "ts.count(...) + counts)")
    if json.dumps(counts._components, sort_keys=True) != json.dumps(components, sort_keys=True):
        raise ConfigError(
            f"these counts were taken with {_describe(counts._components)}, and this training "
            f"counts with {_describe(components)}: count with ts.count(..., model=...) and "
            f"the same pipeline options as the training"
        )
    if len(counts) == 0:
        raise EmptyCorpusError("the counts are empty: there is nothing to train on")
    return counts._counter
