"""Word counts as a stage of their own: count a corpus once (or in shards, on many
machines), keep the counts in a file, merge them, train any model from them.

>>> import tokensmith as ts
>>> a = ts.count(texts=["the cat sat on the mat"], model="bpe")
>>> b = ts.count(texts=["the dog sat on the log"], model="bpe")
>>> both = a + b                      # the same as counting both texts at once
>>> both.most_common(2)
[(' sat', 2), (' on', 2)]
>>> tok = ts.train(counts=both, model="bpe", vocab_size=270)

A :class:`WordCounts` holds each distinct piece of the corpus (the text after the
model's normalizer and pre-tokenizer) with its count, plus those settings, so that
training checks it counts the way the model would have. ``count(model=...)`` takes
the model's own options (``pattern=``, ``lowercase=``, ``add_dummy_prefix=`` …);
the SentencePiece models (``"unigram"``, ``"sentencepiece-bpe"``) count each line as
a sentence, split at spaces, without a pre-tokenizer of their own.

The ``.counts`` file (``docs/counts.md``): the signature ``TSCOUNTS``, a version, a
JSON header with the settings and totals, then the pieces in byte order with their
counts as varints; every length is checked on reading.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from . import _core
from .errors import ConfigError, EmptyCorpusError, TokenizerFormatError

__all__ = ["WordCounts", "count"]

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
    return (f"normalizer {name(components.get('normalizer'))}, pre-tokenizer "
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


def count(
    files: Any = None,
    *,
    texts: Iterable[str] | None = None,
    model: Literal["bpe", "wordpiece", "unigram", "sentencepiece-bpe", "wordlevel"] = "bpe",
    errors: Literal["strict", "replace", "skip"] = "strict",
    text_field: str = "text",
    verbose: bool = False,
    backend: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    part_bytes: int | None = None,
    memory_limit: int | None = None,
    min_count: int = 1,
    prune_below: int | None = None,
    spill_dir: str | None = None,
    like: Any = None,
    pre_tokenizer: dict[str, Any] | None = None,
    **options: Any,
) -> WordCounts:
    """Count the pieces of a corpus the way ``ts.train(model=model, **options)`` would.

    ``like=`` (a tokenizer, or a path or name ``ts.load`` takes) counts the pieces
    that tokenizer's normalizer and pre-tokenizer make instead, and
    ``pre_tokenizer=`` (with ``normalizer=``, both ``tokenizer.json`` components as
    dicts) those of a pipeline of one's own: counts for vocabulary surgery and
    evaluation, or for a trainer given the same pipeline.

    ``files`` and ``texts`` are as in :func:`tokensmith.train`; ``options`` are the
    training options that decide the pipeline (``pattern``, ``byte_level``,
    ``lowercase``, ``normalizer``, ``add_dummy_prefix`` …; the others are accepted and
    do not matter here). Train with ``ts.train(counts=..., model=model, **options)``.

    ``backend="ray"`` counts on Ray (``pip install 'tokensmith[ray]'``): every file, and
    every ``part_bytes`` (64 MB) of a large plain-text file, is a task, and the results
    merge in a tree of tasks; ``texts`` may be a Ray Dataset. The cluster is the one
    ``ray.init`` joined, else ``ray_address`` or ``RAY_ADDRESS``, else a local one.
    The counts equal those of ``backend="local"``.

    ``memory_limit=`` (bytes) bounds the table of distinct pieces while counting:
    past it, the table is written to disk as a sorted run (in ``spill_dir``, else the
    temporary folder) and the runs are added up at the end, exactly; with
    ``prune_below=k`` the pieces seen fewer than k times so far are dropped instead
    (approximate). ``min_count`` keeps only the pieces counted at least that often
    (applied while the runs are merged, so the result needs memory for those only).

    ``input_sentence_size=N`` or ``sample_bytes=B`` (with ``sample_seed=``) count a
    uniform random sample of the corpus's lines, as ``sentencepiece`` samples its
    input: the lines with the smallest random keys, N of them or as many as fit in B
    bytes, in memory for the sample only.
    """
    from ._line_sample import LineSample
    from .corpus import count_corpus
    from .trainers import _trainer, check_options

    sample = LineSample.of(options.pop("input_sentence_size", None),
                           options.pop("sample_bytes", None), options.pop("sample_seed", 0))
    model_name: str | None = None
    if like is not None or pre_tokenizer is not None:
        components = _pipeline_of(like, pre_tokenizer, options)
    else:
        trainer = _trainer(model)
        check_options(trainer, options, f"count(model={model!r})")
        for name in ("counts", "callback", "stream"):
            options.pop(name, None)
        components, model_name = _components(trainer, model, options), str(model)
    if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
        raise ConfigError(f"min_count must be a positive integer, not {min_count!r}")
    if memory_limit is not None:
        if backend != "local" or sample is not None:
            raise ConfigError("memory_limit= bounds counting in one process, on the whole "
                              "corpus: not with backend='ray' or sampling")
        from ._bounded_count import count_bounded

        counter, runs, pruned = count_bounded(
            components, files, texts, errors, text_field, memory_limit=memory_limit,
            min_count=min_count, prune_below=prune_below, spill_dir=spill_dir)
        if verbose:
            print(f"counted within {memory_limit:,} bytes: {runs} run(s) written to disk, "
                  f"{pruned:,} rare pieces pruned", file=sys.stderr)
        if counter.distinct == 0:
            raise EmptyCorpusError("the corpus is empty (or no piece reaches min_count)")
        return WordCounts(counter, components, model_name)
    if prune_below is not None:
        raise ConfigError("prune_below= applies when memory_limit= is reached: give both")
    if backend == "ray" and sample is not None:
        raise ConfigError("sampling (input_sentence_size=, sample_bytes=) reads the corpus "
                          "in one process: count with backend='local'")
    if backend == "ray":
        counter = _count_on_ray(components, files, texts, errors, text_field,
                                ray_address, part_bytes)
    elif backend == "local":
        counter = count_corpus(components, files, texts, errors, verbose=verbose,
                               text_field=text_field, sample=sample)
    else:
        raise ConfigError(f"backend={backend!r}: choose 'local' or 'ray'")
    if min_count > 1:
        counter.retain(min_count, None)
    return WordCounts(counter, components, model_name)


def _components(trainer: Any, model: str, options: dict[str, Any]) -> dict[str, Any]:
    """The pipeline a trainer counts through, learned by running it on the probe."""
    try:
        trainer(None, counts=_PROBE, **options)
    except _Probed as probed:
        return probed.components
    raise ConfigError(f"model={model!r} does not train from word counts")  # pragma: no cover


def _pipeline_of(like: Any, pre_tokenizer: dict[str, Any] | None,
                 options: dict[str, Any]) -> dict[str, Any]:
    """The counting pipeline of ``like`` (a tokenizer or what ``ts.load`` takes), or
    the ``pre_tokenizer`` (and ``normalizer``) given as ``tokenizer.json`` dicts."""
    from .formats.hf_json import document

    if like is not None and pre_tokenizer is not None:
        raise ConfigError("give like= or pre_tokenizer=, not both")
    if like is not None:
        if options:
            raise ConfigError(f"like= counts with the tokenizer's own pipeline; "
                              f"{', '.join(sorted(options))} would change it")
        from . import load
        from .tokenizer import Tokenizer

        doc = document(like if isinstance(like, Tokenizer) else load(like))
        normalizer, pre = doc.get("normalizer"), doc.get("pre_tokenizer")
    else:
        normalizer = options.pop("normalizer", None)
        pre = pre_tokenizer
        if options:
            raise ConfigError(f"pre_tokenizer= takes normalizer= alone; "
                              f"{', '.join(sorted(options))} do not apply")
        if not isinstance(pre, dict) or (normalizer is not None
                                         and not isinstance(normalizer, dict)):
            raise ConfigError("pre_tokenizer= (and normalizer=) are tokenizer.json components "
                              "as dicts, e.g. {'type': 'Whitespace'}")
    components: dict[str, Any] = {"normalizer": normalizer, "pre_tokenizer": pre}
    if isinstance(normalizer, dict) and normalizer.get("type") == "SentencePiece" and pre is None:
        # (a SentencePiece model: a sentence a line, words cut before each ▁, as it trains)
        suffix = bool(normalizer.get("treat_whitespace_as_suffix"))
        components["pre_tokenizer"] = {
            "type": "Split", "pattern": {"String": "\u2581"}, "invert": False,
            "behavior": "MergedWithPrevious" if suffix else "MergedWithNext"}
        components["lines"] = True
    return components


def _count_on_ray(components: dict[str, Any], files: Any, texts: Any, errors: str,
                  text_field: str, address: str | None, part_bytes: int | None) -> Any:
    from ._ray_count import PART_BYTES, count_with_ray

    if files is None and texts is None:
        raise ConfigError("give files (paths, folders or globs) or texts= to count")
    size = PART_BYTES if part_bytes is None else part_bytes
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ConfigError(f"part_bytes must be a positive integer, not {part_bytes!r}")
    counter = count_with_ray(components, files, texts, errors, text_field,
                             address=address, part_bytes=size)
    if counter.distinct == 0:
        raise EmptyCorpusError("the corpus is empty: there is no text to count")
    return counter
