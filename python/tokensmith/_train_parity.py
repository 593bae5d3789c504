"""Parity-aware BPE (Foroutan, Meister et al. 2025): the options that ask for it,
checked, and the counting per language that feeds the core trainer.

Before each merge the trainer measures every language's cost and merges the pair
most frequent in the training text of the language that costs most (see
``docs/parity.md`` for the formulas). The cost is read on a parallel dev set
(``parity_dev``, the paper's main setting) or on the training text itself, per byte
or per line (``parity_measure``). The first ``parity_start`` merges are classical:
the paper's hybrid variant.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from . import _core
from .corpus import Files, count_corpus, documents, feed_texts
from .errors import ConfigError

__all__ = ["ParityMeasure", "ParityPlan", "parity_plan", "train_parity"]

ParityMeasure = Literal["dev", "bytes", "lines"]
_MEASURES = ("dev", "bytes", "lines")


@dataclass(frozen=True)
class ParityPlan:
    """What parity-aware training reads: the training text and (for ``"dev"``) the
    dev text of each language, in the caller's order (which breaks ties)."""

    languages: dict[str, Files]
    dev: dict[str, Files] | None
    measure: ParityMeasure
    start: int


def parity_plan(
    languages: Mapping[str, Files] | None,
    parity_dev: Mapping[str, Files] | None,
    parity_measure: str | None,
    parity_start: int,
    *,
    merges: int,
    corpus_given: bool,
    byte_level: bool,
    sampled: bool,
) -> ParityPlan | None:
    """The checked parity options, or ``None`` for classical BPE. ``merges`` is how
    many merges the vocabulary leaves; ``corpus_given``: files, texts or counts were
    passed as well; ``sampled``: a line sample was asked for."""
    if languages is None:
        for name, value, unset in (("parity_dev", parity_dev, None),
                                   ("parity_measure", parity_measure, None),
                                   ("parity_start", parity_start, 0)):
            if value != unset:
                raise ConfigError(
                    f"{name}= needs languages={{'en': 'train.en.txt', 'de': ...}}: the "
                    f"training text labelled by language, two languages or more"
                )
        return None
    langs = _languages(languages, "languages")
    if corpus_given:
        raise ConfigError("languages= is the whole training corpus of parity-aware BPE; "
                          "drop files=, texts= and counts=")
    if not byte_level:
        raise ConfigError("languages=: parity-aware BPE is byte-level only; "
                          "drop byte_level=False")
    measure = _measure(parity_measure, parity_dev is not None)
    dev = None
    if measure == "dev":
        dev = _languages(parity_dev or {}, "parity_dev")
        if set(dev) != set(langs):
            missing = [lang for lang in langs if lang not in dev]
            extra = [lang for lang in dev if lang not in langs]
            detail = "; ".join(part for part in (
                f"missing {', '.join(missing)}" if missing else "",
                f"not in languages=: {', '.join(extra)}" if extra else "",
            ) if part)
            raise ConfigError(f"parity_dev= must have the languages of languages= "
                              f"({', '.join(langs)}): {detail}")
        dev = {lang: dev[lang] for lang in langs}
    elif measure == "lines" and sampled:
        raise ConfigError("parity_measure='lines' divides by every line of the training "
                          "text; it cannot be combined with input_sentence_size= or "
                          "sample_bytes= (use parity_measure='bytes')")
    if isinstance(parity_start, bool) or not isinstance(parity_start, int):
        raise ConfigError(f"parity_start must be an integer, not {parity_start!r}")
    if not 0 <= parity_start <= merges:
        raise ConfigError(f"parity_start={parity_start} must be between 0 and the {merges} "
                          f"merges the vocabulary leaves (vocab_size minus the 256 bytes "
                          f"and the special tokens)")
    return ParityPlan(langs, dev, measure, parity_start)


def _languages(value: Any, name: str) -> dict[str, Files]:
    """``{language: files}`` with at least two languages."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{name}= must map each language to its files "
                          f"({{'en': 'train.en.txt', ...}}), not {type(value).__name__}")
    out: dict[str, Files] = {}
    for lang, files in value.items():
        if not isinstance(lang, str) or not lang:
            raise ConfigError(f"{name}=: language labels must be non-empty strings, "
                              f"not {lang!r}")
        if not isinstance(files, (str, os.PathLike, list, tuple)):
            raise ConfigError(f"{name}[{lang!r}] must be a path, a glob or a list of paths, "
                              f"not {type(files).__name__}")
        out[lang] = files
    if len(out) < 2:
        raise ConfigError(f"{name}= has {len(out)} language(s): parity needs two or more "
                          f"(for one language, train classical BPE with files=)")
    return out


def _measure(value: str | None, has_dev: bool) -> ParityMeasure:
    if value is None:
        if has_dev:
            return "dev"
        raise ConfigError("languages= needs a cost to balance: give parity_dev= (a parallel "
                          "dev text per language) or parity_measure='bytes' or 'lines' "
                          "(measured on the training text)")
    if value not in _MEASURES:
        raise ConfigError(f"parity_measure must be 'dev', 'bytes' or 'lines', not {value!r}")
    if value == "dev" and not has_dev:
        raise ConfigError("parity_measure='dev' needs parity_dev= (a parallel dev text "
                          "per language)")
    if value != "dev" and has_dev:
        raise ConfigError(f"parity_measure={value!r} measures the training text; "
                          f"drop parity_dev= or use parity_measure='dev'")
    return value  # type: ignore[return-value]


def dev_lines(files: Files, errors: str, text_field: str) -> list[str]:
    """The lines of a dev text (records of ``.jsonl``/``.parquet`` files are lines)."""
    lines: list[str] = []
    for doc in documents(files, None, errors, text_field):
        parts = doc.split("\n")
        if doc.endswith("\n"):
            parts.pop()
        lines.extend(p.removesuffix("\r") for p in parts)
    return lines


def _line_count(files: Files, errors: str, text_field: str) -> int:
    """The non-empty lines of a training text."""
    return sum(1 for doc in documents(files, None, errors, text_field)
               for line in doc.split("\n") if line.strip("\r"))


def train_parity(
    plan: ParityPlan,
    components: dict[str, Any],
    *,
    errors: str,
    text_field: str,
    sample: Any,
    verbose: bool,
    out: Any,
    vocab_size: int,
    min_frequency: int,
    max_token_length: int | None,
    trace: int,
    events: Callable[[str, tuple[Any, ...]], None] | None,
) -> tuple[Any, list[str | None]]:
    """Count each language and train; returns the core's trained model and, per
    merge, the language it was chosen for (``None``: a classical merge)."""
    names = list(plan.languages)
    train = []
    for lang, files in plan.languages.items():
        if verbose:
            print(f"[{lang}] training text", file=out)
        train.append(count_corpus(components, files, None, errors, verbose=verbose, out=out,
                                  text_field=text_field, sample=sample))
    dev: list[Any] = []
    lines: list[int] = []
    dev_size = 0
    if plan.dev is not None:
        dev, dev_size = _count_dev(plan.dev, components, errors, text_field)
    elif plan.measure == "lines":
        lines = [_line_count(files, errors, text_field) for files in plan.languages.values()]

    def named(kind: str, data: tuple[Any, ...]) -> None:
        if events is not None:
            if kind == "merge":
                lang = data[5]
                data = (*data[:5], None if lang is None else names[lang])
            events(kind, data)

    trained, chosen, tokens = _core.train_parity_bpe(
        train, dev, lines, plan.measure, vocab_size, min_frequency, max_token_length,
        plan.start, trace, named if events is not None else None)
    if verbose:
        print(_final_tokens(names, tokens, plan.measure, dev_size), file=out)
    return trained, [None if i is None else names[i] for i in chosen]


def _final_tokens(names: list[str], tokens: list[int], measure: str, dev_size: int) -> str:
    """The trace's last word on parity: each language's tokens once trained."""
    if measure == "dev":
        each = ", ".join(f"{lang} {t:,} ({t / dev_size:.2f} per line)"
                         for lang, t in zip(names, tokens, strict=True))
        return f"tokens of the {dev_size:,} dev lines: {each}"
    each = ", ".join(f"{lang} {t:,}" for lang, t in zip(names, tokens, strict=True))
    return f"tokens of the training text: {each}"


def _count_dev(dev: dict[str, Files], components: dict[str, Any], errors: str,
               text_field: str) -> tuple[list[Any], int]:
    """One counter per language of its dev lines, each line a text of its own (as
    ``evaluate.parity`` encodes them), and the number of lines, which must be the
    same in every language."""
    import json

    texts = {lang: dev_lines(files, errors, text_field) for lang, files in dev.items()}
    sizes = {lang: len(v) for lang, v in texts.items()}
    if len(set(sizes.values())) > 1:
        detail = ", ".join(f"{lang}: {n}" for lang, n in sizes.items())
        raise ConfigError(f"parity_dev= texts are not line-aligned ({detail} lines): line i "
                          f"must be the same sentence in every language")
    if not any(sizes.values()):
        raise ConfigError("parity_dev= texts have no lines")
    counters = []
    for lines in texts.values():
        counter = _core.WordCounter(json.dumps(components))
        feed_texts(counter, [line for line in lines if line])
        counters.append(counter)
    return counters, next(iter(sizes.values()))
