"""Measure a tokenizer on text: what it costs, how it cuts words, how fair it is.

>>> import tokensmith as ts
>>> from tokensmith.evaluate import evaluate
>>> tok = ts.train(texts=["the cat sat on the mat. "] * 50, vocab_size=280)
>>> report = evaluate(tok, ["the cat sat on the mat."])
>>> report.compression.tokens > 0
True

Every metric is a function of its own (``compression``, ``fertility``,
``coverage``, ``vocabulary_use``, ``length_distribution``,
``term_fragmentation``, ``parity``, ``renyi_efficiency``) and
:func:`evaluate` runs them all from one encoding pass. Definitions:

compression
    ``bytes_per_token`` = UTF-8 bytes of the text / tokens;
    ``chars_per_token`` = Unicode code points / tokens;
    ``tokens_per_1k_chars`` = 1000 × tokens / code points. Higher bytes per
    token means cheaper text.
fertility
    After Rust et al. 2021 ("How Good is Your Tokenizer?", ACL): fertility is
    the mean number of tokens per word, and the *proportion of continued
    words* is the share of words cut into two or more tokens. A token counts
    for every word its character span overlaps (tokens made only of spaces
    or punctuation count for no word). Words are found by :func:`words`.
words
    A word is a maximal run of letters, combining marks and digits (Unicode
    categories L*, M*, N*; the underscore and punctuation end a word), except
    that every Han ideograph, Hiragana and Katakana character is a word by
    itself, since Chinese and Japanese put no spaces between words. Scripts
    without spaces that are not Han or kana (Thai, Lao, Khmer, Myanmar) get
    one "word" per space-separated run, so their fertility is not comparable
    with other languages; pass ``segmenter=`` (any callable returning the
    words of a text, e.g. ``jieba.lcut``) for a real word segmentation.
coverage
    ``unknown_rate`` = unknown tokens (the model's ``unk`` token) / tokens;
    ``byte_fallback_rate`` = byte-fallback tokens (``<0xE5>``-style pieces of
    SentencePiece-style models) / tokens.
vocabulary use
    ``share_used`` = distinct ordinary tokens produced / ordinary tokens in
    the vocabulary (special and added tokens excluded); ``never_produced`` =
    the ordinary tokens never produced; ``longest`` = the longest tokens
    produced, in whole characters of their text (word markers such as ``##``
    removed, bytes of a split character not counted).
length distribution
    Tokens per document: mean, and the 50th, 95th and 99th percentiles by the
    nearest-rank method (the smallest length that at least p% of documents
    do not exceed), the maximum, and how many documents have more tokens than
    ``context_length``.
term fragmentation
    Each term is encoded as it appears inside a sentence, after a space
    (``prefix=" "``); the tokens that overlap the term itself are its pieces.
parity
    After Petrov et al. 2023 ("Language Model Tokenizers Introduce Unfairness
    Between Languages", NeurIPS): on line-aligned parallel text, the
    *tokenizer premium* of a language is its total token count divided by the
    pivot language's. ``spread`` is the largest premium divided by the
    smallest; ``std`` their standard deviation.
Rényi efficiency
    After Zouhar et al. 2023 ("Tokenization and the Noiseless Channel", ACL):
    ``H_α(p) / log |V|`` where ``p`` is the unigram distribution of the
    tokens produced, ``H_α(p) = log(Σ p_i^α) / (1 - α)`` (Shannon entropy for
    α = 1) and ``|V|`` the number of ordinary tokens in the vocabulary;
    α = 2.5 by default, the value the paper found to predict downstream BLEU
    best. ``efficiency_observed`` divides by the log of the number of distinct
    tokens produced instead (the default of the authors' tokenization-scorer).

Text is encoded as ordinary text: strings that spell a special token are
measured as the characters they are, and post-processor tokens (BOS/EOS,
``[CLS]``/``[SEP]``) are not added, so counts are those of the text itself.
"""

from __future__ import annotations

import bisect
import json
import math
import os
import re
import sys as _sys
import types as _types
import unicodedata
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from .errors import EmptyTextError, ParallelTextError
from .tokenizer import Tokenizer

__all__ = [
    "Compression",
    "Fertility",
    "Coverage",
    "VocabularyUse",
    "LengthStats",
    "TermResult",
    "TermFragmentation",
    "LanguageParity",
    "Parity",
    "RenyiEfficiency",
    "Evaluation",
    "evaluate",
    "compression",
    "fertility",
    "coverage",
    "vocabulary_use",
    "length_distribution",
    "term_fragmentation",
    "parity",
    "renyi_efficiency",
    "words",
    "split_documents",
    "percentile",
    "token_text",
    "show_piece",
    "bracketed",
    "tokenizer_name",
    "describe",
    "coverage_warnings",
    "DEFAULT_ALPHA",
]

DEFAULT_ALPHA = 2.5
"""Rényi order used by :func:`renyi_efficiency` (Zouhar et al. 2023)."""

Segmenter = Callable[[str], Iterable[str]]
TokenizerLike = Tokenizer | str | os.PathLike[str]


# ------------------------------------------------------------------ results


@dataclass
class Compression:
    """How much text one token carries."""

    bytes: int
    characters: int
    tokens: int
    bytes_per_token: float
    chars_per_token: float
    tokens_per_1k_chars: float


@dataclass
class Fertility:
    """Tokens per word and the share of words cut into pieces (Rust et al. 2021)."""

    words: int
    word_tokens: int
    fertility: float
    continued_words: int
    proportion_continued: float


@dataclass
class Coverage:
    """Unknown and byte-fallback tokens."""

    tokens: int
    unknown_tokens: int
    unknown_rate: float
    byte_fallback_tokens: int
    byte_fallback_rate: float
    unknown_characters: list[str] = field(default_factory=list)
    """Up to 20 distinct characters that came out as the unknown token."""


@dataclass
class VocabularyUse:
    """Which part of the vocabulary the text uses."""

    vocab_size: int
    used: int
    share_used: float
    never_produced: int
    never_produced_sample: list[str]
    longest: list[tuple[str, int, int]]
    """``(token text, length in characters, times produced)``, longest first."""


@dataclass
class LengthStats:
    """Tokens per document."""

    documents: int
    mean: float
    p50: int
    p95: int
    p99: int
    max: int
    context_length: int | None = None
    over_context: int | None = None
    lengths: list[int] = field(default_factory=list, repr=False)

    def histogram(self, bins: int = 20, upper: int | None = None) -> list[tuple[int, int, int]]:
        """``(low, high, count)`` bins of equal width covering ``0 … upper`` (default max)."""
        return histogram(self.lengths, bins, upper)


@dataclass
class TermResult:
    term: str
    pieces: list[str]
    """The term's tokens as text (``<0xE5>`` for bytes that are not a whole character)."""
    unknown: bool = False
    """Some of the term came out as the unknown token."""

    @property
    def tokens(self) -> int:
        return len(self.pieces)

    @property
    def split(self) -> bool:
        return len(self.pieces) > 1


@dataclass
class TermFragmentation:
    """How a list of terms is cut."""

    terms: list[TermResult]
    tokens_per_term: float
    split_terms: int
    split_share: float
    warnings: list[str] = field(default_factory=list)


@dataclass
class LanguageParity:
    language: str
    tokens: int
    premium: float
    unknown_tokens: int = 0
    """Unknown tokens among ``tokens``: a run of text the tokenizer cannot represent can
    become a single unknown token, which makes the premium look smaller than it is."""


@dataclass
class Parity:
    """Token counts of the same content in several languages (Petrov et al. 2023)."""

    pivot: str
    lines: int
    languages: list[LanguageParity]
    spread: float
    std: float
    warnings: list[str] = field(default_factory=list)

    def premium(self, language: str) -> float:
        for lp in self.languages:
            if lp.language == language:
                return lp.premium
        raise KeyError(language)


@dataclass
class RenyiEfficiency:
    """Rényi efficiency of the unigram token distribution (Zouhar et al. 2023)."""

    alpha: float
    entropy_bits: float
    efficiency: float
    efficiency_observed: float


@dataclass
class Evaluation:
    """Everything :func:`evaluate` measured; ``None`` where nothing could be measured."""

    name: str
    model: str
    vocab_size: int
    documents: int = 0
    compression: Compression | None = None
    fertility: Fertility | None = None
    coverage: Coverage | None = None
    vocabulary: VocabularyUse | None = None
    lengths: LengthStats | None = None
    renyi: RenyiEfficiency | None = None
    terms: TermFragmentation | None = None
    parity: Parity | None = None
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON (document lengths are summarised as a histogram)."""
        out = _plain(asdict(self))
        if self.lengths is not None:
            out["lengths"].pop("lengths", None)
            out["lengths"]["histogram"] = [list(b) for b in self.lengths.histogram()]
        if self.terms is not None:
            for row, term in zip(out["terms"]["terms"], self.terms.terms, strict=True):
                row["tokens"] = term.tokens
                row["split"] = term.split
        return out

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)

    def summary(self) -> str:
        """A short multi-line text for the terminal."""
        lines = [f"{self.name}  ({self.model}, {self.vocab_size:,} tokens)"]
        if self.compression is not None:
            c = self.compression
            lines.append(
                f"  compression   {c.tokens:,} tokens for {c.characters:,} characters: "
                f"{c.bytes_per_token:.2f} bytes/token, {c.chars_per_token:.2f} chars/token, "
                f"{c.tokens_per_1k_chars:.1f} tokens/1k chars"
            )
        if self.fertility is not None:
            f = self.fertility
            lines.append(
                f"  fertility     {f.fertility:.3f} tokens/word over {f.words:,} words; "
                f"{100 * f.proportion_continued:.1f}% of words split"
            )
        if self.coverage is not None:
            v = self.coverage
            lines.append(
                f"  coverage      unknown {100 * v.unknown_rate:.2f}% "
                f"({v.unknown_tokens:,} tokens), byte fallback {100 * v.byte_fallback_rate:.2f}%"
            )
        if self.vocabulary is not None:
            u = self.vocabulary
            longest = ", ".join(repr(t) for t, _, _ in u.longest[:5])
            lines.append(
                f"  vocabulary    {u.used:,} of {u.vocab_size:,} tokens used "
                f"({100 * u.share_used:.1f}%); longest: {longest}"
            )
        if self.lengths is not None:
            s = self.lengths
            over = ""
            if s.context_length is not None:
                over = f"; {s.over_context:,} over {s.context_length:,} tokens"
            lines.append(
                f"  documents     {s.documents:,}: mean {s.mean:.1f} tokens, p50 {s.p50}, "
                f"p95 {s.p95}, p99 {s.p99}, max {s.max}{over}"
            )
        if self.renyi is not None:
            r = self.renyi
            lines.append(
                f"  Rényi         efficiency {r.efficiency:.3f} (α={r.alpha:g}; "
                f"{r.efficiency_observed:.3f} over the tokens seen)"
            )
        if self.terms is not None:
            t = self.terms
            lines.append(
                f"  terms         {t.tokens_per_term:.2f} tokens/term; "
                f"{t.split_terms} of {len(t.terms)} split"
            )
            for term in t.terms:
                if term.split or term.unknown:
                    lines.append(f"                  {term.term}  {bracketed(term.pieces)}")
        if self.parity is not None:
            p = self.parity
            langs = ", ".join(f"{lp.language} {lp.premium:.2f}" for lp in p.languages)
            lines.append(f"  parity        premium vs {p.pivot}: {langs}; spread {p.spread:.2f}")
        for w in self.warnings:
            lines.append(f"  warning: {w}")
        return "\n".join(lines)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# --------------------------------------------------------- what a token is


@dataclass
class _TokenKinds:
    """Facts about a tokenizer's vocabulary that the metrics need."""

    model: str
    unknown: frozenset[int]
    byte_fallback: dict[int, int]  # id -> the byte it stands for
    special: frozenset[int]
    ordinary: int  # ordinary (not special/added) tokens in the vocabulary
    prefix: str  # continuing-subword prefix ("##") or ""
    suffix: str  # end-of-word suffix ("</w>") or ""
    byte_level: bool


_KINDS: weakref.WeakKeyDictionary[Tokenizer, _TokenKinds] = weakref.WeakKeyDictionary()
_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def _kinds(tok: Tokenizer) -> _TokenKinds:
    cached = _KINDS.get(tok)
    if cached is not None:
        return cached
    model_type = str(getattr(tok._core, "model_type", "BPE"))
    model: dict[str, Any] = {}
    # A byte-level BPE can encode every string without an unknown token; reading its model
    # section would serialise the whole vocabulary for nothing.
    if not (tok.is_byte_level and model_type == "BPE"):
        try:
            model = json.loads(tok.to_str(pretty=False)).get("model") or {}
        except (ValueError, AttributeError):
            model = {}
    unknown: set[int] = set()
    unk_token = model.get("unk_token")
    if isinstance(unk_token, str):
        i = tok.token_to_id(unk_token)
        if i is not None:
            unknown.add(i)
    unk_id = model.get("unk_id")
    if isinstance(unk_id, int) and unk_id >= 0:
        unknown.add(unk_id)
    vocab = tok.get_vocab()
    byte_fallback: dict[int, int] = {}
    if model.get("byte_fallback"):
        for token, i in vocab.items():
            m = _BYTE_TOKEN.fullmatch(token)
            if m:
                byte_fallback[i] = int(m.group(1), 16)
    special = frozenset(i for _, i, _ in tok._core.added_tokens())
    ordinary = sum(1 for i in vocab.values() if i not in special)
    kinds = _TokenKinds(
        model=model_type,
        unknown=frozenset(unknown),
        byte_fallback=byte_fallback,
        special=special,
        ordinary=ordinary,
        prefix=str(model.get("continuing_subword_prefix") or ""),
        suffix=str(model.get("end_of_word_suffix") or ""),
        byte_level=tok.is_byte_level,
    )
    _KINDS[tok] = kinds
    return kinds


def describe(tok: Tokenizer) -> str:
    """``"byte-level BPE"``, ``"WordPiece"``, ``"Unigram"`` …"""
    kinds = _kinds(tok)
    if kinds.model == "BPE" and kinds.byte_level:
        return "byte-level BPE"
    if kinds.model == "BPE" and kinds.byte_fallback:
        return "BPE (byte fallback)"
    return kinds.model


def token_text(tok: Tokenizer, token_id: int) -> bytes:
    """The UTF-8 bytes of the text a token stands for, word markers removed.

    Byte-level tokens give their bytes (``Ġthe`` is ``b" the"``), byte-fallback
    tokens their byte, ``▁`` becomes a space, and the continuing-subword prefix
    (``##``) and end-of-word suffix (``</w>``) are dropped. Special tokens give
    their text. The bytes may be part of a character (byte-level tokenizers).
    """
    kinds = _kinds(tok)
    if token_id in kinds.byte_fallback:
        return bytes([kinds.byte_fallback[token_id]])
    raw = tok.id_to_bytes(token_id)
    if raw is None:
        return b""
    if kinds.byte_level or token_id in kinds.special:
        return raw
    text = raw.decode("utf-8", "replace").replace("\u2581", " ")
    if kinds.prefix and text.startswith(kinds.prefix) and len(text) > len(kinds.prefix):
        text = text[len(kinds.prefix) :]
    if kinds.suffix and text.endswith(kinds.suffix) and len(text) > len(kinds.suffix):
        text = text[: -len(kinds.suffix)]
    return text.encode("utf-8")


def bracketed(pieces: Iterable[str]) -> str:
    """``[␣Ku][ber][net][es]``: pieces in brackets, spaces drawn as ``␣``."""
    return "".join(f"[{p.replace(' ', '␣')}]" for p in pieces)


def show_piece(data: bytes) -> str:
    """Bytes as text; bytes that are not part of a whole character become ``<0xE5>``."""
    text = data.decode("utf-8", "surrogateescape")
    return "".join(
        f"<0x{ord(ch) - 0xDC00:02X}>" if 0xDC80 <= ord(ch) <= 0xDCFF else ch for ch in text
    )


# ------------------------------------------------------------------ words

_HAN_KANA = (
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # halfwidth Katakana
    "\U00020000-\U0003134f"  # CJK extensions B-G
)
_WORD_RE: re.Pattern[str] | None = None


def _word_re() -> re.Pattern[str]:
    """Letters, marks and digits: ``\\w`` without ``_``, plus the combining marks."""
    global _WORD_RE
    if _WORD_RE is None:
        ranges: list[str] = []
        start = -1
        # Combining marks live in planes 0 and 1 and in plane 14 (variation selectors);
        # planes 2 and 3 are ideographs, the rest unassigned or private use.
        for cp in [*range(0x20000), *range(0xE0000, 0xE1000)]:
            is_mark = unicodedata.category(chr(cp)).startswith("M")
            if is_mark and start < 0:
                start = cp
            elif not is_mark and start >= 0:
                ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(cp - 1))}")
                start = -1
        marks = "".join(ranges)
        _WORD_RE = re.compile(
            f"[{_HAN_KANA}]|(?:(?![{_HAN_KANA}])(?:[^\\W_]|[{marks}]))+"
        )
    return _WORD_RE


def words(text: str, segmenter: Segmenter | None = None) -> list[tuple[int, int]]:
    """The ``(start, end)`` character spans of the words of ``text``.

    By default a word is a run of letters, combining marks and digits, and
    each Han ideograph or kana is a word on its own (see the module's
    documentation). ``segmenter`` is any callable that returns the words of a
    text (``jieba.lcut``, ``fugashi``, a whitespace split …); its words are
    found in ``text`` left to right, and whitespace-only words are ignored.
    """
    if segmenter is None:
        return [m.span() for m in _word_re().finditer(text)]
    spans: list[tuple[int, int]] = []
    pos = 0
    for w in segmenter(text):
        w = str(w)
        if not w.strip():
            continue
        at = text.find(w, pos)
        if at < 0:
            stripped = w.strip()
            at = text.find(stripped, pos)
            if at < 0:
                continue
            w = stripped
        spans.append((at, at + len(w)))
        pos = at + len(w)
    return spans


def split_documents(
    text: str, how: Literal["paragraphs", "lines", "file"] = "paragraphs"
) -> list[str]:
    """Cut a file's text into documents without losing a character.

    ``"paragraphs"`` cuts after each blank line, ``"lines"`` after each line
    break, ``"file"`` keeps one document. Whitespace-only pieces are joined to
    the document before them, so ``"".join(result) == text``.
    """
    if how == "file":
        pieces = [text]
    elif how == "lines":
        pieces = text.splitlines(keepends=True)
    elif how == "paragraphs":
        pieces, start = [], 0
        for m in re.finditer(r"\n(?:[^\S\n]*\n)+", text):
            pieces.append(text[start : m.end()])
            start = m.end()
        pieces.append(text[start:])
    else:
        raise ValueError(f"how must be 'paragraphs', 'lines' or 'file', not {how!r}")
    docs: list[str] = []
    for p in pieces:
        if not p:
            continue
        if docs and not p.strip():
            docs[-1] += p
        elif docs and not docs[-1].strip():
            docs[-1] += p
        else:
            docs.append(p)
    return docs


# ------------------------------------------------------------- statistics


def percentile(sorted_values: Sequence[int], p: float) -> int:
    """Nearest-rank percentile: the smallest value that at least ``p``% of values do not exceed."""
    if not sorted_values:
        return 0
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def histogram(
    values: Sequence[int], bins: int = 20, upper: int | None = None
) -> list[tuple[int, int, int]]:
    """``(low, high, count)``: ``bins`` integer bins of equal width from 0 to ``upper``.

    A value ``v`` falls in the bin with ``low <= v < high`` (the last bin also
    holds ``upper`` and anything above it).
    """
    if not values:
        return []
    top = max(values) if upper is None else upper
    width = max(1, math.ceil((top + 1) / bins))
    n = max(1, math.ceil((top + 1) / width))
    counts = [0] * n
    for v in values:
        counts[min(v // width, n - 1)] += 1
    return [(i * width, (i + 1) * width, c) for i, c in enumerate(counts)]


# ---------------------------------------------------------------- encoding


@dataclass
class _Encoded:
    """One pass over the documents: ids and character offsets of each."""

    texts: list[str]
    ids: list[list[int]]
    offsets: list[list[tuple[int, int]]]


def _as_tokenizer(tokenizer: TokenizerLike) -> Tokenizer:
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    from ._loading import load

    return load(tokenizer)


def _documents(texts: str | Iterable[str]) -> tuple[list[str], int]:
    """The non-empty documents, and how many empty ones were dropped."""
    docs = [texts] if isinstance(texts, str) else [str(t) for t in texts]
    kept = [d for d in docs if d]
    return kept, len(docs) - len(kept)


def _encode(tok: Tokenizer, docs: Sequence[str]) -> _Encoded:
    ids: list[list[int]] = []
    offsets: list[list[tuple[int, int]]] = []
    for doc in docs:
        enc = tok.encode_full(doc, disallowed_special=(), add_special_tokens=False)
        ids.append(enc.ids)
        offsets.append(enc.offsets)
    return _Encoded(list(docs), ids, offsets)


def _need_text(texts: str | Iterable[str], what: str) -> list[str]:
    docs, _ = _documents(texts)
    if not docs:
        raise EmptyTextError(f"no text to measure {what} on: every text given is empty")
    return docs


# ----------------------------------------------------------------- metrics


def _compression(enc: _Encoded) -> Compression:
    n_bytes = sum(len(t.encode("utf-8", "surrogatepass")) for t in enc.texts)
    n_chars = sum(len(t) for t in enc.texts)
    n_tokens = sum(len(i) for i in enc.ids)
    return Compression(
        bytes=n_bytes,
        characters=n_chars,
        tokens=n_tokens,
        bytes_per_token=n_bytes / n_tokens if n_tokens else math.nan,
        chars_per_token=n_chars / n_tokens if n_tokens else math.nan,
        tokens_per_1k_chars=1000 * n_tokens / n_chars if n_chars else math.nan,
    )


def compression(tokenizer: TokenizerLike, texts: str | Iterable[str]) -> Compression:
    """Bytes per token, characters per token and tokens per 1,000 characters."""
    tok = _as_tokenizer(tokenizer)
    return _compression(_encode(tok, _need_text(texts, "compression")))


def _tokens_per_word(spans: Sequence[tuple[int, int]],
                     offsets: Sequence[tuple[int, int]]) -> list[int]:
    """How many tokens overlap each word: a token ``[s, e)`` counts for every
    word from the first one ending after ``s`` to the last one starting before
    ``e``. Vectorized with numpy when it is installed (a difference array over
    the words either way)."""
    if offsets:
        try:
            import numpy as np
        except ImportError:  # pragma: no cover - numpy is a test dependency
            pass
        else:
            starts = np.fromiter((s for s, _ in spans), dtype=np.int64, count=len(spans))
            ends = np.fromiter((e for _, e in spans), dtype=np.int64, count=len(spans))
            tok = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
            tok = tok[tok[:, 1] > tok[:, 0]]
            first = np.searchsorted(ends, tok[:, 0], side="right")
            last = np.searchsorted(starts, tok[:, 1], side="left")
            keep = last > first
            diff = np.zeros(len(spans) + 1, dtype=np.int64)
            np.add.at(diff, first[keep], 1)
            np.add.at(diff, last[keep], -1)
            return np.cumsum(diff[:-1]).tolist()
    starts_l = [s for s, _ in spans]
    ends_l = [e for _, e in spans]
    delta = [0] * (len(spans) + 1)
    for s, e in offsets:
        if e <= s:
            continue
        first_i = bisect.bisect_right(ends_l, s)  # first word ending after s
        last_i = bisect.bisect_left(starts_l, e)  # words starting before e
        if last_i > first_i:
            delta[first_i] += 1
            delta[last_i] -= 1
    per_word, running = [], 0
    for d in delta[:-1]:
        running += d
        per_word.append(running)
    return per_word


def _fertility(enc: _Encoded, segmenter: Segmenter | None) -> Fertility:
    n_words = n_tokens = continued = 0
    for text, offsets in zip(enc.texts, enc.offsets, strict=True):
        spans = words(text, segmenter)
        if not spans:
            continue
        per_word = _tokens_per_word(spans, offsets)
        n_words += len(spans)
        n_tokens += sum(per_word)
        continued += sum(1 for c in per_word if c >= 2)
    return Fertility(
        words=n_words,
        word_tokens=n_tokens,
        fertility=n_tokens / n_words if n_words else math.nan,
        continued_words=continued,
        proportion_continued=continued / n_words if n_words else math.nan,
    )


def fertility(
    tokenizer: TokenizerLike, texts: str | Iterable[str], *, segmenter: Segmenter | None = None
) -> Fertility:
    """Tokens per word and the proportion of words split into 2+ tokens (Rust et al. 2021)."""
    tok = _as_tokenizer(tokenizer)
    return _fertility(_encode(tok, _need_text(texts, "fertility")), segmenter)


def _coverage(tok: Tokenizer, enc: _Encoded) -> Coverage:
    kinds = _kinds(tok)
    total = unk = fallback = 0
    chars: dict[str, None] = {}
    for text, ids, offsets in zip(enc.texts, enc.ids, enc.offsets, strict=True):
        total += len(ids)
        for i, (s, e) in zip(ids, offsets, strict=True):
            if i in kinds.unknown:
                unk += 1
                for ch in text[s:e]:
                    if len(chars) < 20 and not ch.isspace():
                        chars.setdefault(ch)
            elif i in kinds.byte_fallback:
                fallback += 1
    return Coverage(
        tokens=total,
        unknown_tokens=unk,
        unknown_rate=unk / total if total else math.nan,
        byte_fallback_tokens=fallback,
        byte_fallback_rate=fallback / total if total else math.nan,
        unknown_characters=list(chars),
    )


def coverage(tokenizer: TokenizerLike, texts: str | Iterable[str]) -> Coverage:
    """Rates of unknown tokens and of byte-fallback tokens among all tokens produced."""
    tok = _as_tokenizer(tokenizer)
    return _coverage(tok, _encode(tok, _need_text(texts, "coverage")))


def _vocabulary_use(tok: Tokenizer, enc: _Encoded, top: int) -> VocabularyUse:
    kinds = _kinds(tok)
    counts: Counter[int] = Counter()
    for ids in enc.ids:
        counts.update(ids)
    used = [i for i in counts if i not in kinds.special]
    vocab = tok.get_vocab()
    never = sorted(i for i in vocab.values() if i not in kinds.special and i not in counts)

    def length(i: int) -> int:  # whole characters; bytes of a split character count 0
        return len(token_text(tok, i).decode("utf-8", "ignore"))

    longest = sorted(used, key=lambda i: (-length(i), i))[:top]
    return VocabularyUse(
        vocab_size=kinds.ordinary,
        used=len(used),
        share_used=len(used) / kinds.ordinary if kinds.ordinary else math.nan,
        never_produced=len(never),
        never_produced_sample=[show_piece(token_text(tok, i)) for i in never[:top]],
        longest=[(show_piece(token_text(tok, i)), length(i), counts[i]) for i in longest],
    )


def vocabulary_use(
    tokenizer: TokenizerLike, texts: str | Iterable[str], *, top: int = 10
) -> VocabularyUse:
    """Share of the vocabulary produced, tokens never produced, and the longest tokens seen."""
    tok = _as_tokenizer(tokenizer)
    return _vocabulary_use(tok, _encode(tok, _need_text(texts, "vocabulary use")), top)


def _lengths(enc: _Encoded, context_length: int | None) -> LengthStats:
    lengths = [len(i) for i in enc.ids]
    ordered = sorted(lengths)
    over = None
    if context_length is not None:
        over = sum(1 for n in lengths if n > context_length)
    return LengthStats(
        documents=len(lengths),
        mean=sum(lengths) / len(lengths) if lengths else math.nan,
        p50=percentile(ordered, 50),
        p95=percentile(ordered, 95),
        p99=percentile(ordered, 99),
        max=ordered[-1] if ordered else 0,
        context_length=context_length,
        over_context=over,
        lengths=lengths,
    )


def length_distribution(
    tokenizer: TokenizerLike, texts: Iterable[str], *, context_length: int | None = None
) -> LengthStats:
    """Tokens per document (mean, p50, p95, p99, max) and how many exceed ``context_length``."""
    tok = _as_tokenizer(tokenizer)
    return _lengths(_encode(tok, _need_text(texts, "document lengths")), context_length)


def _renyi(tok: Tokenizer, enc: _Encoded, alpha: float) -> RenyiEfficiency:
    counts: Counter[int] = Counter()
    for ids in enc.ids:
        counts.update(ids)
    total = sum(counts.values())
    if not total:
        return RenyiEfficiency(alpha, math.nan, math.nan, math.nan)
    probs = [c / total for c in counts.values()]
    if alpha == 1:
        h = -sum(p * math.log2(p) for p in probs)
    else:
        h = math.log2(sum(p**alpha for p in probs)) / (1 - alpha)
    h = max(0.0, h) + 0.0  # one token type: 0 bits, not -0.0 from rounding
    v = max(_kinds(tok).ordinary, len(counts))
    seen = len(counts)
    return RenyiEfficiency(
        alpha=alpha,
        entropy_bits=h,
        efficiency=h / math.log2(v) if v > 1 else math.nan,
        efficiency_observed=h / math.log2(seen) if seen > 1 else math.nan,
    )


def renyi_efficiency(
    tokenizer: TokenizerLike, texts: str | Iterable[str], *, alpha: float = DEFAULT_ALPHA
) -> RenyiEfficiency:
    """Rényi entropy of the token distribution over the log of the vocabulary size."""
    if alpha < 0:
        raise ValueError("alpha must be >= 0")
    tok = _as_tokenizer(tokenizer)
    return _renyi(tok, _encode(tok, _need_text(texts, "Rényi efficiency")), alpha)


def term_fragmentation(
    tokenizer: TokenizerLike, terms: Iterable[str], *, prefix: str = " "
) -> TermFragmentation:
    """How each term is cut: encoded after ``prefix`` (a space: as inside a sentence).

    Blank terms are skipped and repeated terms measured once, each with a
    warning in the result; no terms at all raise :class:`EmptyTextError`.
    """
    tok = _as_tokenizer(tokenizer)
    warnings: list[str] = []
    seen: dict[str, None] = {}
    blank = repeated = 0
    for raw in terms:
        term = str(raw).strip()
        if not term:
            blank += 1
        elif term in seen:
            repeated += 1
        else:
            seen[term] = None
    if blank:
        warnings.append(f"{blank} blank term{'s' if blank > 1 else ''} skipped")
    if repeated:
        warnings.append(f"{repeated} repeated term{'s' if repeated > 1 else ''} measured once")
    if not seen:
        raise EmptyTextError("no terms to measure: the term list is empty or only blank lines")
    results: list[TermResult] = []
    for term in seen:
        text = prefix + term
        enc = tok.encode_full(text, disallowed_special=(), add_special_tokens=False)
        lo, hi = len(prefix), len(text)
        ids = [
            i
            for i, (s, e) in zip(enc.ids, enc.offsets, strict=True)
            if e > lo and s < hi and e > s
        ]
        unknown = any(i in _kinds(tok).unknown for i in ids)
        results.append(TermResult(term, _pieces(tok, ids), unknown))
    n_split = sum(1 for r in results if r.split)
    return TermFragmentation(
        terms=results,
        tokens_per_term=sum(r.tokens for r in results) / len(results),
        split_terms=n_split,
        split_share=n_split / len(results),
        warnings=warnings,
    )


def _pieces(tok: Tokenizer, ids: Sequence[int]) -> list[str]:
    kinds = _kinds(tok)
    out: list[str] = []
    for i in ids:
        if i in kinds.unknown:
            out.append(tok.id_to_token(i) or "<unk>")
        else:
            out.append(show_piece(token_text(tok, i)))
    return out


def _parallel_lines(parallel: Mapping[str, str | Sequence[str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for lang, value in parallel.items():
        if isinstance(value, str):
            out[str(lang)] = value.splitlines()
        else:
            out[str(lang)] = [str(line).rstrip("\r\n") for line in value]
    return out


def parity(
    tokenizer: TokenizerLike,
    parallel: Mapping[str, str | Sequence[str]],
    *,
    pivot: str = "en",
    on_mismatch: Literal["warn", "error"] = "warn",
) -> Parity:
    """Each language's token count relative to ``pivot`` on line-aligned text.

    ``parallel`` maps a language to its lines (a list, or one string cut at
    line breaks); line *i* must be the same content in every language. When
    the languages have different numbers of lines, only the first lines that
    all of them have are compared and a warning is recorded
    (``on_mismatch="error"`` raises :class:`ParallelTextError` instead). A
    missing pivot raises :class:`ParallelTextError`.
    """
    tok = _as_tokenizer(tokenizer)
    lines = _parallel_lines(parallel)
    if not lines:
        raise ParallelTextError("no parallel texts given")
    if pivot not in lines:
        raise ParallelTextError(
            f"the pivot language {pivot!r} is not among the parallel texts "
            f"({', '.join(lines)}); pass pivot= one of them"
        )
    warnings: list[str] = []
    sizes = {lang: len(v) for lang, v in lines.items()}
    n = min(sizes.values())
    if len(set(sizes.values())) > 1:
        detail = ", ".join(f"{lang}: {k}" for lang, k in sizes.items())
        message = (
            f"the parallel texts have different numbers of lines ({detail}); line i must be "
            f"the same sentence in every language"
        )
        if on_mismatch == "error":
            raise ParallelTextError(message)
        warnings.append(f"{message}. Only the first {n} lines of each were compared.")
    if n == 0:
        raise ParallelTextError("the parallel texts have no lines in common")
    unknown_ids = _kinds(tok).unknown
    counts: dict[str, int] = {}
    unknown: dict[str, int] = {}
    for lang, v in lines.items():
        batch = tok.encode_batch(v[:n], disallowed_special=(), add_special_tokens=False)
        counts[lang] = sum(len(ids) for ids in batch)
        unknown[lang] = (
            sum(1 for ids in batch for i in ids if i in unknown_ids) if unknown_ids else 0
        )
        if counts[lang] and unknown[lang] / counts[lang] >= 0.01:
            warnings.append(
                f"{lang}: {100 * unknown[lang] / counts[lang]:.0f}% of the tokens are unknown; "
                f"the tokenizer cannot represent this language, and its premium understates "
                f"the cost"
            )
    base = counts[pivot]
    if base == 0:
        raise ParallelTextError(f"the pivot language {pivot!r} has no tokens: its lines are empty")
    langs = [LanguageParity(lang, c, c / base, unknown[lang]) for lang, c in counts.items()]
    premiums = [lp.premium for lp in langs]
    mean = sum(premiums) / len(premiums)
    smallest = min(premiums)
    return Parity(
        pivot=pivot,
        lines=n,
        languages=langs,
        spread=max(premiums) / smallest if smallest > 0 else math.inf,
        std=math.sqrt(sum((p - mean) ** 2 for p in premiums) / len(premiums)),
        warnings=warnings,
    )


# -------------------------------------------------------------- everything


def evaluate(
    tokenizer: TokenizerLike,
    texts: str | Iterable[str] | None = None,
    *,
    terms: Iterable[str] | None = None,
    parallel: Mapping[str, str | Sequence[str]] | None = None,
    pivot: str = "en",
    context_length: int | None = None,
    segmenter: Segmenter | None = None,
    alpha: float = DEFAULT_ALPHA,
    top: int = 10,
    name: str | None = None,
) -> Evaluation:
    """Every metric of this module from one encoding pass over ``texts``.

    ``texts`` is one string or an iterable of documents. ``terms`` is a list
    of words to check for fragmentation; ``parallel`` maps languages to
    line-aligned texts for parity against ``pivot``. Problems with the input
    (empty documents, blank terms, unequal parallel texts, unknown tokens)
    become ``warnings`` in the result, and whatever can be measured is;
    :class:`EmptyTextError` is raised only when there is nothing to measure
    at all.
    """
    tok = _as_tokenizer(tokenizer)
    kinds = _kinds(tok)
    result = Evaluation(
        name=name or _default_name(tokenizer), model=describe(tok), vocab_size=kinds.ordinary
    )
    docs, empty = _documents(texts if texts is not None else [])
    if empty:
        result.warnings.append(
            f"{empty} empty document{'s' if empty > 1 else ''} skipped"
        )
    if not docs and terms is None and parallel is None:
        raise EmptyTextError("no text to measure: every text given is empty")
    if docs:
        enc = _encode(tok, docs)
        result.documents = len(docs)
        result.compression = _compression(enc)
        result.fertility = _fertility(enc, segmenter)
        result.coverage = _coverage(tok, enc)
        result.vocabulary = _vocabulary_use(tok, enc, top)
        result.lengths = _lengths(enc, context_length)
        result.renyi = _renyi(tok, enc, alpha)
        result.warnings.extend(coverage_warnings(result.coverage))
    elif texts is not None:
        result.warnings.append("no text to measure: every text given is empty")
    if terms is not None:
        try:
            result.terms = term_fragmentation(tok, terms)
            result.warnings.extend(result.terms.warnings)
        except EmptyTextError as e:
            result.warnings.append(str(e))
    if parallel is not None:
        try:
            result.parity = parity(tok, parallel, pivot=pivot)
            result.warnings.extend(result.parity.warnings)
        except ParallelTextError as e:
            result.warnings.append(f"parity not measured: {e}")
    return result


def coverage_warnings(cov: Coverage, where: str = "") -> list[str]:
    """A warning when the tokenizer produced unknown tokens: it cannot represent the text."""
    if not cov.unknown_tokens:
        return []
    sample = " ".join(cov.unknown_characters[:10])
    at = f" on {where}" if where else ""
    return [
        f"{100 * cov.unknown_rate:.2f}% of the tokens{at} are unknown ({cov.unknown_tokens:,} "
        f"unknown token{'s' if cov.unknown_tokens > 1 else ''}): the tokenizer cannot "
        f"represent some of this text"
        + (f", e.g. {sample}" if sample else "")
    ]


def _default_name(tokenizer: TokenizerLike) -> str:
    if isinstance(tokenizer, Tokenizer):
        return "tokenizer"
    return tokenizer_name(tokenizer)


def tokenizer_name(source: str | os.PathLike[str]) -> str:
    """A short name for a tokenizer given by path or name.

    ``…/gpt2/tokenizer.json`` → ``gpt2``; ``…/cl100k_base.tiktoken`` →
    ``cl100k_base``; a name stays as it is.
    """
    path = os.fspath(source).rstrip("/\\")
    base = os.path.basename(path)
    stem, ext = os.path.splitext(base)
    generic = {"tokenizer", "vocab", "spiece", "sentencepiece", "merges", "model"}
    if ext and stem.lower() in generic or base.lower() in {"vocab.txt", "tokenizer.model"}:
        parent = os.path.basename(os.path.dirname(path))
        return parent or stem
    return stem if ext in {".json", ".tiktoken", ".model", ".txt"} else base


class _CallableModule(_types.ModuleType):
    """``tokensmith.evaluate(...)`` calls :func:`evaluate`; ``tokensmith.evaluate.<name>`` reads
    this module (so ``ts.evaluate(tok, texts)`` works as the design shows)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return evaluate(*args, **kwargs)


_sys.modules[__name__].__class__ = _CallableModule
