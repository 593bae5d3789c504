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

import sys
from collections.abc import Iterable
from typing import Any, Literal

from ._word_counts import _PROBE, WordCounts, _Probed
from ._word_counts import FORMAT as FORMAT
from ._word_counts import use_counts as use_counts
from .errors import ConfigError, EmptyCorpusError

__all__ = ["WordCounts", "count"]


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
    from ._options import check_options
    from .corpus import count_corpus
    from .trainers import _trainer

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
        from ._loading import load
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
