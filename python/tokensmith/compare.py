"""Tokenizers side by side on the same texts.

>>> import tokensmith as ts
>>> from tokensmith.compare import compare
>>> a = ts.train(texts=["the cat sat on the mat. "] * 50, vocab_size=270)
>>> b = ts.train(texts=["the cat sat on the mat. "] * 50, vocab_size=300)
>>> result = compare({"small": a, "large": b}, {"cats": ["the cat sat on the mat."]})
>>> print(result.table())  # doctest: +SKIP

Any mix of trained tokenizers, files (``tokenizer.json``, ``*.tiktoken``,
``.model``, ``vocab.txt`` …) and names (``"cl100k_base"``) can be compared.
:class:`Comparison` prints as tables (:meth:`Comparison.table`), turns into
JSON (:meth:`Comparison.to_json`) and into a self-contained HTML report with
plots (:meth:`Comparison.save_html`, see :mod:`tokensmith.report`).

Vocabulary overlap between two tokenizers is the Jaccard index
``|A ∩ B| / |A ∪ B|`` of their sets of ordinary token texts
(:func:`tokensmith.evaluate.token_text` without one leading space, so that
GPT-2's ``Ġthe``, T5's ``▁the`` and BERT's ``the`` are the same string;
partial-character byte tokens compare by their bytes).

Problems with the input do not stop a comparison: a tokenizer that fails to
load, an empty text, a term list with blank lines, parallel texts of unequal
length become ``warnings`` and everything else is measured;
:class:`~tokensmith.errors.EvaluationError` is raised only when nothing at all
can be measured.
"""

from __future__ import annotations

import json
import os
import sys as _sys
import types as _types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .errors import EmptyTextError, EvaluationError, ParallelTextError, TokenizerError
from .evaluate import (
    DEFAULT_ALPHA,
    Evaluation,
    Parity,
    Segmenter,
    TermFragmentation,
    TokenizerLike,
    _kinds,
    bracketed,
    describe,
    evaluate,
    parity,
    show_piece,
    term_fragmentation,
    token_text,
    tokenizer_name,
)
from .tokenizer import Tokenizer

__all__ = ["Comparison", "compare", "vocabulary_overlap", "format_table"]

Texts = str | Iterable[str] | Mapping[str, str | Iterable[str]]


@dataclass
class Comparison:
    """The result of :func:`compare`: metrics per tokenizer and per text."""

    names: list[str]
    models: dict[str, str]
    vocab_sizes: dict[str, int]
    corpora: list[str]
    results: dict[str, dict[str, Evaluation]]
    """``results[tokenizer][text]``."""
    terms: dict[str, TermFragmentation] = field(default_factory=dict)
    parity: dict[str, Parity] = field(default_factory=dict)
    pivot: str | None = None
    overlap: list[list[float]] = field(default_factory=list)
    """Jaccard index of the token-text sets, in the order of ``names``."""
    shared: list[list[int]] = field(default_factory=list)
    """Number of token texts both tokenizers have."""
    diagnostics: dict[str, Any] = field(default_factory=dict)
    """``name -> tokensmith.diagnostics.Diagnostics`` when asked for."""
    warnings: list[str] = field(default_factory=list)
    unloaded: dict[str, str] = field(default_factory=dict)
    """``name -> why`` for each tokenizer that could not be loaded (left out above)."""

    # -------------------------------------------------------------- output
    def to_dict(self) -> dict[str, Any]:
        return {
            "tokenizers": [
                {"name": n, "model": self.models[n], "vocab_size": self.vocab_sizes[n]}
                for n in self.names
            ],
            "texts": self.corpora,
            "results": {
                n: {c: e.to_dict() for c, e in per.items()} for n, per in self.results.items()
            },
            "terms": {
                n: {
                    "tokens_per_term": t.tokens_per_term,
                    "split_terms": t.split_terms,
                    "split_share": t.split_share,
                    "terms": [
                        {"term": r.term, "tokens": r.tokens, "pieces": r.pieces,
                         "split": r.split, "unknown": r.unknown}
                        for r in t.terms
                    ],
                }
                for n, t in self.terms.items()
            },
            "parity": {
                n: {
                    "pivot": p.pivot,
                    "lines": p.lines,
                    "spread": p.spread,
                    "std": p.std,
                    "languages": {lp.language: {"tokens": lp.tokens, "premium": lp.premium,
                                                "unknown_tokens": lp.unknown_tokens}
                                  for lp in p.languages},
                }
                for n, p in self.parity.items()
            },
            "vocabulary_overlap": {
                "names": self.names, "jaccard": self.overlap, "shared": self.shared,
            },
            "diagnostics": {n: d.to_dict() for n, d in self.diagnostics.items()},
            "warnings": self.warnings,
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        from .evaluate import _plain

        return json.dumps(_plain(self.to_dict()), ensure_ascii=False, indent=indent)

    def to_html(self, *, title: str = "tokensmith comparison") -> str:
        """A self-contained HTML page (inline SVG plots, no scripts, no network)."""
        from ._report import render_comparison

        return render_comparison(self, title=title)

    def save_html(
        self, path: str | os.PathLike[str], *, title: str = "tokensmith comparison"
    ) -> Path:
        """Write :meth:`to_html` to ``path`` (atomically) and return the path."""
        from ._report import write_atomic

        return write_atomic(Path(path), self.to_html(title=title))

    def sections(self) -> list[tuple[str, list[str], list[list[str]]]]:
        """The tables of :meth:`table` as ``(title, headers, rows)`` of strings."""
        out: list[tuple[str, list[str], list[list[str]]]] = []
        if self.corpora:
            ctx = self._context_length()
            rows = []
            for n in self.names:
                for c in self.corpora:
                    e = self.results.get(n, {}).get(c)
                    if e is None or e.compression is None or e.lengths is None:
                        continue
                    k, s = e.compression, e.lengths
                    row = [n, c, f"{k.tokens:,}", _f(k.bytes_per_token, 2),
                           _f(k.chars_per_token, 2), _f(k.tokens_per_1k_chars, 1),
                           f"{s.documents:,}", _f(s.mean, 1), f"{s.p95:,}", f"{s.max:,}"]
                    if ctx is not None:
                        row.append(f"{s.over_context or 0:,}")
                    rows.append(row)
            head = ["tokenizer", "text", "tokens", "bytes/tok", "chars/tok", "tok/1k chars",
                    "docs", "mean len", "p95 len", "max len"]
            if ctx is not None:
                head.append(f"> {ctx:,} tok")
            out.append(("Cost: tokens for the same text (more bytes per token is cheaper; "
                        "lengths are tokens per document)", head, rows))
            rows = []
            for n in self.names:
                for c in self.corpora:
                    e = self.results.get(n, {}).get(c)
                    if e is None or e.fertility is None or e.coverage is None:
                        continue
                    f, v = e.fertility, e.coverage
                    u, r = e.vocabulary, e.renyi
                    rows.append([n, c, _f(f.fertility, 3), _pct(f.proportion_continued),
                                 _pct(v.unknown_rate, 2), _pct(v.byte_fallback_rate, 2),
                                 _pct(u.share_used) if u else "-",
                                 _f(r.efficiency, 3) if r else "-"])
            head = ["tokenizer", "text", "fertility", "words split", "unknown", "byte fallback",
                    "vocab used", "Rényi eff."]
            out.append(("Words and vocabulary (fertility: tokens per word)", head, rows))
        if self.parity:
            names = [n for n in self.names if n in self.parity]
            langs = [lp.language for lp in self.parity[names[0]].languages]
            rows = []
            for lang in langs:
                row = [lang]
                for n in names:
                    lp = next((x for x in self.parity[n].languages if x.language == lang), None)
                    if lp is None:
                        row.append("-")
                        continue
                    unk = lp.unknown_tokens / lp.tokens if lp.tokens else 0.0
                    row.append(f"{lp.premium:.2f} ({lp.tokens:,})"
                               + (f" unk {100 * unk:.0f}%" if unk >= 0.01 else ""))
                rows.append(row)
            rows.append(["spread (max/min)"] + [_f(self.parity[n].spread, 2) for n in names])
            lines = self.parity[names[0]].lines
            out.append((f"Parity: tokens relative to {self.pivot} on {lines:,} parallel lines "
                        f"(token count in brackets; unk: share of unknown tokens)",
                        ["language", *names], rows))
        if self.terms:
            names = [n for n in self.names if n in self.terms]
            first = self.terms[names[0]]
            rows = []
            for i, term in enumerate(first.terms):
                row = [term.term]
                for n in names:
                    t = self.terms[n].terms[i]
                    row.append(f"{t.tokens} {bracketed(t.pieces)}" + (" unk" if t.unknown else ""))
                rows.append(row)
            rows.append(["tokens/term"] + [_f(self.terms[n].tokens_per_term, 2) for n in names])
            rows.append(["split"] + [f"{self.terms[n].split_terms}/{len(first.terms)}"
                                     for n in names])
            out.append(("Terms: how each is cut", ["term", *names], rows))
        if len(self.names) > 1 and self.overlap:
            rows = [[a] + [_pct(self.overlap[i][j], 0) for j in range(len(self.names))]
                    for i, a in enumerate(self.names)]
            out.append(("Vocabulary overlap (Jaccard index of token texts)",
                        ["", *self.names], rows))
        if self.diagnostics:
            totals: dict[str, float] = {}
            for d in self.diagnostics.values():
                for sc, share in d.script_share.items():
                    totals[sc] = max(totals.get(sc, 0.0), share)
            scripts = [sc for sc, _ in sorted(totals.items(), key=lambda x: -x[1])[:8]]
            rows = [[n] + [_pct(d.script_share.get(sc, 0.0)) for sc in scripts]
                    for n, d in self.diagnostics.items()]
            out.append(("Vocabulary by script (share of ordinary tokens)",
                        ["tokenizer", *scripts], rows))
        return out

    def table(self, fmt: Literal["text", "markdown"] = "text") -> str:
        """The comparison as tables: cost, words and vocabulary, parity, terms, overlap,
        scripts, then the warnings."""
        parts = [_title(t, fmt) + format_table(h, r, fmt) for t, h, r in self.sections()]
        if self.warnings:
            parts.append(_title("Warnings", fmt) + "\n".join(f"- {w}" for w in self.warnings))
        return "\n\n".join(parts)

    def _context_length(self) -> int | None:
        for per in self.results.values():
            for e in per.values():
                if e.lengths is not None and e.lengths.context_length is not None:
                    return e.lengths.context_length
        return None

    def __str__(self) -> str:
        return self.table()


def _title(text: str, fmt: str) -> str:
    return f"### {text}\n\n" if fmt == "markdown" else f"{text}\n"


def _f(x: float | None, digits: int) -> str:
    if x is None or x != x or x in (float("inf"), float("-inf")):
        return "-"
    return f"{x:,.{digits}f}"


def _pct(x: float | None, digits: int = 1) -> str:
    if x is None or x != x:
        return "-"
    return f"{100 * x:.{digits}f}%"


def format_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], fmt: str = "text"
) -> str:
    """Rows of strings as an aligned text table or a Markdown table.

    The first column is left-aligned, the others right-aligned.
    """
    if fmt == "markdown":
        out = ["| " + " | ".join(headers) + " |",
               "|" + "|".join(["---"] + ["---:"] * (len(headers) - 1)) + "|"]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
        return "\n".join(out)
    widths = [len(h) for h in headers]
    for r in rows:
        for i, cell in enumerate(r):
            widths[i] = max(widths[i], _width(cell))

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, cell in enumerate(cells):
            pad = " " * (widths[i] - _width(cell))
            out.append(cell + pad if i == 0 else pad + cell)
        return "  ".join(out).rstrip()

    return "\n".join([line(headers), "  ".join("-" * w for w in widths)]
                     + [line(r) for r in rows])


def _width(text: str) -> int:
    """Display width: East Asian wide characters take two columns."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


# ---------------------------------------------------------------- helpers


def _token_texts(tok: Tokenizer) -> set[str]:
    kinds = _kinds(tok)
    out: set[str] = set()
    for i in tok.get_vocab().values():
        if i in kinds.special or i in kinds.unknown:
            continue
        raw = token_text(tok, i)
        text = show_piece(raw)
        if len(text) > 1 and text[0] == " ":
            text = text[1:]
        out.add(text)
    return out


def vocabulary_overlap(a: Tokenizer, b: Tokenizer) -> tuple[float, int]:
    """Jaccard index of two tokenizers' token texts, and how many texts they share."""
    sa, sb = _token_texts(a), _token_texts(b)
    union = len(sa | sb)
    both = len(sa & sb)
    return (both / union if union else 0.0), both


def _named_sources(
    tokenizers: Sequence[TokenizerLike] | Mapping[str, TokenizerLike],
    names: Sequence[str] | None,
) -> list[tuple[str, TokenizerLike]]:
    if isinstance(tokenizers, Mapping):
        pairs = [(str(k), v) for k, v in tokenizers.items()]
    else:
        items = list(tokenizers)
        if isinstance(tokenizers, (str, os.PathLike, Tokenizer)):
            items = [tokenizers]
        if names is not None:
            if len(names) != len(items):
                raise EvaluationError(
                    f"{len(names)} names for {len(items)} tokenizers: give one name each"
                )
            pairs = [(str(n), t) for n, t in zip(names, items, strict=True)]
        else:
            pairs = []
            for k, t in enumerate(items, 1):
                pairs.append((f"tokenizer {k}" if isinstance(t, Tokenizer)
                              else tokenizer_name(t), t))
    seen: dict[str, int] = {}
    out = []
    for n, t in pairs:
        if n in seen:
            seen[n] += 1
            n = f"{n} ({seen[n]})"
        else:
            seen[n] = 1
        out.append((n, t))
    return out


def _corpora(texts: Texts | None) -> dict[str, list[str]]:
    if texts is None:
        return {}
    if isinstance(texts, str):
        return {"text": [texts]}
    if isinstance(texts, Mapping):
        return {str(k): ([v] if isinstance(v, str) else [str(x) for x in v])
                for k, v in texts.items()}
    return {"text": [str(t) for t in texts]}


# ------------------------------------------------------------------ compare


def compare(
    tokenizers: Sequence[TokenizerLike] | Mapping[str, TokenizerLike],
    texts: Texts | None = None,
    *,
    terms: Iterable[str] | None = None,
    parallel: Mapping[str, str | Sequence[str]] | None = None,
    pivot: str = "en",
    context_length: int | None = None,
    segmenter: Segmenter | None = None,
    alpha: float = DEFAULT_ALPHA,
    diagnostics: bool = True,
    names: Sequence[str] | None = None,
    top: int = 10,
    baselines: Iterable[str] = (),
    baseline_vocab_size: int | None = None,
) -> Comparison:
    """Measure every tokenizer on the same texts.

    ``tokenizers`` is a list of :class:`~tokensmith.Tokenizer` objects, paths
    and names (or a mapping ``name -> tokenizer``). ``texts`` is one string,
    a list of documents, or a mapping ``text name -> documents`` (each
    measured apart: ``{"en": [...], "zh": [...]}``). ``terms``,
    ``parallel``/``pivot``, ``context_length``, ``segmenter`` and ``alpha``
    are as in :func:`tokensmith.evaluate.evaluate`; ``diagnostics`` adds
    :func:`tokensmith.diagnostics.diagnose` for each tokenizer (script shares,
    merges over time).

    ``baselines`` adds the pre-subword tokenizers of the textbooks, trained on the
    texts measured: ``"word"`` (a dictionary of space-separated words, ``[UNK]``
    for the rest) and ``"char"`` (a dictionary of characters), each with
    ``baseline_vocab_size`` entries (default: the largest vocabulary compared),
    so their unknown rate shows what a vocabulary that size misses.
    """
    warnings: list[str] = []
    unloaded: dict[str, str] = {}
    loaded: list[tuple[str, Tokenizer]] = []
    for name, source in _named_sources(tokenizers, names):
        if isinstance(source, Tokenizer):
            loaded.append((name, source))
            continue
        try:
            from ._loading import load

            loaded.append((name, load(source)))
        except (TokenizerError, OSError) as e:
            warnings.append(f"{name}: could not load {os.fspath(source)!r}: {e}")
            unloaded[name] = str(e)
    if not loaded:
        raise EvaluationError(
            "no tokenizer could be loaded" + (": " + "; ".join(warnings) if warnings else "")
        )
    corpora = _corpora(texts)
    kept: dict[str, list[str]] = {}
    for cname, docs in corpora.items():
        if any(docs):
            kept[cname] = docs
        else:
            warnings.append(f"text {cname!r} is empty: nothing measured on it")
    kinds = [str(b).strip().lower() for b in baselines if str(b).strip()]
    if kinds:
        loaded += _baselines(kinds, kept, baseline_vocab_size or max(
            _kinds(t).ordinary for _, t in loaded), warnings)
    term_list = None if terms is None else [str(t) for t in terms]
    if not kept and term_list is None and parallel is None:
        raise EmptyTextError("no text to measure: every text given is empty")

    result = Comparison(
        names=[n for n, _ in loaded],
        models={n: describe(t) for n, t in loaded},
        vocab_sizes={n: _kinds(t).ordinary for n, t in loaded},
        corpora=list(kept),
        results={},
        unloaded=unloaded,
    )
    for name, tok in loaded:
        per: dict[str, Evaluation] = {}
        for cname, docs in kept.items():
            ev = evaluate(tok, docs, context_length=context_length, segmenter=segmenter,
                          alpha=alpha, top=top, name=name)
            per[cname] = ev
            warnings.extend(f"{name} on {cname}: {w}" for w in ev.warnings)
        result.results[name] = per

    if term_list is not None:
        term_warnings: list[str] = []
        for name, tok in loaded:
            try:
                frag = term_fragmentation(tok, term_list)
            except EmptyTextError as e:
                term_warnings = [str(e)]
                break
            result.terms[name] = frag
            term_warnings = frag.warnings
        warnings.extend(f"terms: {w}" for w in term_warnings)

    if parallel is not None:
        langs = list(parallel)
        use_pivot = pivot
        if langs and pivot not in parallel:
            use_pivot = langs[0]
            warnings.append(f"parity: the pivot {pivot!r} is not among the parallel texts "
                            f"({', '.join(langs)}); {use_pivot!r} used instead")
        result.pivot = use_pivot
        seen: dict[str, list[str]] = {}  # warning -> tokenizers it came from
        for name, tok in loaded:
            try:
                p = parity(tok, parallel, pivot=use_pivot)
            except ParallelTextError as e:
                seen = {f"not measured: {e}": []}
                result.parity.clear()
                break
            result.parity[name] = p
            for w in p.warnings:
                seen.setdefault(w, []).append(name)
        for w, who in seen.items():
            if who and len(who) < len(loaded):
                warnings.append(f"parity ({', '.join(who)}): {w}")
            else:
                warnings.append(f"parity: {w}")

    sets = [_token_texts(t) for _, t in loaded]
    n = len(sets)
    result.overlap = [[0.0] * n for _ in range(n)]
    result.shared = [[0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i, n):
            both = len(sets[i] & sets[j])
            union = len(sets[i] | sets[j])
            result.overlap[i][j] = result.overlap[j][i] = both / union if union else 0.0
            result.shared[i][j] = result.shared[j][i] = both

    if diagnostics:
        from .diagnostics import diagnose

        for name, tok in loaded:
            letters = [d for docs in kept.values() for d in docs] if kept else None
            diag = diagnose(tok, texts=letters, name=name, top=top)
            result.diagnostics[name] = diag
            warnings.extend(f"{name}: {w}" for w in diag.warnings)
    result.warnings = warnings
    return result


BASELINES: dict[str, Literal["spaces", "characters"]] = {"word": "spaces", "char": "characters"}


def _baselines(kinds: list[str], texts: Mapping[str, list[str]], vocab_size: int,
               warnings: list[str]) -> list[tuple[str, Tokenizer]]:
    """WordLevel tokenizers of ``kinds`` (:data:`BASELINES`) trained on every text."""
    from ._train_wordlevel import train_wordlevel
    from .errors import ConfigError

    unknown = [k for k in kinds if k not in BASELINES]
    if unknown:
        raise ConfigError(f"baselines: {', '.join(map(repr, unknown))} unknown; choose from "
                          f"{', '.join(BASELINES)}")
    docs = [d for group in texts.values() for d in group if d]
    if not docs:
        warnings.append("baselines: no text to build them from; left out")
        return []
    return [(f"{kind}-level", train_wordlevel(texts=docs, split=BASELINES[kind],
                                              vocab_size=max(vocab_size, 2)))
            for kind in dict.fromkeys(kinds)]


class _CallableModule(_types.ModuleType):
    """``tokensmith.compare(...)`` calls :func:`compare`; ``tokensmith.compare.<name>`` reads
    this module (so ``ts.compare(tok, texts)`` works as the design shows)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return compare(*args, **kwargs)


_sys.modules[__name__].__class__ = _CallableModule
