"""What a tokenizer learned: merges over time, token lengths, scripts.

>>> import tokensmith as ts
>>> from tokensmith.diagnostics import diagnose
>>> tok = ts.train(texts=["low lower lowest 分词器 分词 " * 40], vocab_size=300)
>>> d = diagnose(tok)
>>> d.scripts["Han"] > 0
True

``tokensmith.diagnose`` is the same function: ``ts.diagnose(ts.train(...))``
after training, ``tokensmith diagnose TOKENIZER`` on the command line, and
:meth:`Diagnostics.save_html` for the plots.

Definitions:

token text
    The text a token stands for (:func:`tokensmith.evaluate.token_text`):
    byte-level tokens by their bytes, ``▁`` as a space, ``##`` and
    end-of-word suffixes removed. A token's *length* is the number of
    characters of that text, not counting one leading space (the word-start
    marker of byte-level and SentencePiece vocabularies), so lengths compare
    across tokenizer families. Byte-level tokens that hold only part of a
    character's UTF-8 bytes are *partial* and counted apart, and so are the
    256 byte-fallback pieces (``<0xE5>``) of SentencePiece-style models,
    which stand for bytes, not for anything learned.
merges over time
    For a BPE tokenizer (byte-level, character-level or SentencePiece BPE),
    the merges in rank order cut into ``buckets`` equal ranges; each range
    gives the mean length (characters and UTF-8 bytes) of the tokens its
    merges made (``nan`` when they made only parts of characters). Late
    merges making long tokens is the normal picture; a flat curve means the
    vocabulary went into short pieces (another script, numbers, code
    indentation …). WordPiece and Unigram have no merges: ``merges`` is 0,
    ``note`` says so, and the same curve is computed over the ordinary tokens
    in id order instead (``growth_basis == "token id"``; SentencePiece orders
    its pieces by score, WordPiece trainers by when a token was added).
script
    The script of a character is the first word of its Unicode name
    (``unicodedata.name``: "LATIN SMALL LETTER A" → Latin, "CYRILLIC …" →
    Cyrillic), with "CJK … IDEOGRAPH" → Han, "HANGUL …" → Hangul,
    "FULLWIDTH"/"HALFWIDTH" looked through, and names outside the known
    scripts → Other. Only letters (category L*) have a script. A token's
    script is the script of most of its letters (the first in the text on a
    tie); a token without letters (digits, punctuation, spaces, symbols,
    emoji) is Common; a partial-character token is Bytes; special tokens are
    left out; byte-fallback pieces are Bytes too. ``scripts`` counts tokens
    per script and ``script_share`` divides by all counted tokens; given
    ``texts``, ``corpus_scripts`` is the share of each script among the
    letters of those texts, to compare with,
    and a warning names each script that is at least 10% of the letters but
    less than a quarter of that share of the vocabulary (Bytes not counted,
    so that a small vocabulary's 256 byte tokens do not hide the picture).
"""

from __future__ import annotations

import json
import math
import os
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ._report import merge_phrase
from ._residues import Residue, residues
from .evaluate import TokenizerLike, _as_tokenizer, _kinds, describe, show_piece, token_text
from .tokenizer import Tokenizer

__all__ = [
    "Diagnostics", "GrowthBucket", "Residue", "diagnose", "letter_scripts", "script_of",
    "token_script",
]

_SCRIPTS = {
    "LATIN", "GREEK", "COPTIC", "CYRILLIC", "ARMENIAN", "HEBREW", "ARABIC", "SYRIAC",
    "THAANA", "NKO", "SAMARITAN", "MANDAIC", "DEVANAGARI", "BENGALI", "GURMUKHI",
    "GUJARATI", "ORIYA", "TAMIL", "TELUGU", "KANNADA", "MALAYALAM", "SINHALA", "THAI",
    "LAO", "TIBETAN", "MYANMAR", "GEORGIAN", "HANGUL", "ETHIOPIC", "CHEROKEE", "CANADIAN",
    "OGHAM", "RUNIC", "TAGALOG", "KHMER", "MONGOLIAN", "LIMBU", "TAI", "BUGINESE",
    "BALINESE", "SUNDANESE", "LEPCHA", "JAVANESE", "HIRAGANA", "KATAKANA", "BOPOMOFO",
    "YI", "VAI", "BAMUM", "TIFINAGH", "GLAGOLITIC", "GOTHIC", "CHAM", "OL", "ADLAM",
}
_NAMED = {"CJK": "Han", "NKO": "NKo", "CANADIAN": "Canadian Aboriginal", "OL": "Ol Chiki"}
_SCRIPT_CACHE: dict[str, str | None] = {}


def script_of(ch: str) -> str | None:
    """The script of a letter (``"Latin"``, ``"Han"`` …), ``None`` for a non-letter."""
    cached = _SCRIPT_CACHE.get(ch, "")
    if cached != "":
        return cached
    script: str | None
    if not unicodedata.category(ch).startswith("L"):
        script = None
    else:
        name = unicodedata.name(ch, "")
        first = name.split(" ", 1)[0]
        if first in {"FULLWIDTH", "HALFWIDTH"}:
            first = name.split(" ")[1] if " " in name else ""
        first = first.split("-", 1)[0]  # KATAKANA-HIRAGANA PROLONGED SOUND MARK
        if first == "CJK" or 0x4E00 <= ord(ch) <= 0x9FFF or 0x3400 <= ord(ch) <= 0x4DBF:
            script = "Han"
        elif first in _SCRIPTS:
            script = _NAMED.get(first, first.title())
        else:
            script = "Other"
    _SCRIPT_CACHE[ch] = script
    return script


def token_script(text: str) -> str:
    """The script of most of the letters of ``text``; ``Common`` without letters."""
    counts: Counter[str] = Counter()
    for ch in text:
        s = script_of(ch)
        if s is not None:
            counts[s] += 1
    if not counts:
        return "Common"
    return counts.most_common(1)[0][0]  # ties: the first seen (Counter keeps insertion order)


def letter_scripts(texts: Iterable[str]) -> dict[str, float]:
    """The share of each script among the letters of ``texts`` (largest first)."""
    chars: Counter[str] = Counter()
    for t in texts:
        chars.update(t)
    letters: Counter[str] = Counter()
    for ch, n in chars.items():
        s = script_of(ch)
        if s is not None:
            letters[s] += n
    total = sum(letters.values())
    return {s: c / total for s, c in letters.most_common()} if total else {}


@dataclass
class GrowthBucket:
    """Merges (or tokens) ``start`` … ``end - 1`` and the mean length of what they made."""

    start: int
    end: int
    mean_chars: float
    mean_bytes: float


@dataclass
class Diagnostics:
    """The result of :func:`diagnose`."""

    name: str
    model: str
    vocab_size: int
    special_tokens: int
    merges: int
    """Merge rules (as the saved ``tokenizer.json`` lists them)."""
    growth_basis: str
    growth: list[GrowthBucket]
    length_histogram: dict[int, int]
    """Token length in characters -> number of tokens (complete characters only)."""
    partial_tokens: int
    mean_length: float
    scripts: dict[str, int]
    script_share: dict[str, float]
    longest: list[tuple[str, int]]
    corpus_scripts: dict[str, float] | None = None
    warnings: list[str] = field(default_factory=list)
    byte_fallback_tokens: int = 0
    """Byte-fallback pieces (``<0x00>`` … ``<0xFF>``), counted apart like partial tokens."""
    note: str = ""
    """Why there is no merge curve (WordPiece, Unigram), or empty."""
    merged_tokens: int = 0
    """Tokens the merges make (fewer than ``merges`` for a tiktoken rank file, whose
    tokens can each be reached by several merge rules)."""
    residues: list[Residue] | None = None
    """With ``texts``: tokens met mostly inside longer tokens (:mod:`tokensmith._residues`),
    most inside first."""
    unused_tokens: int | None = None
    """With ``texts``: learned tokens (two characters or more) the texts never produced."""
    residue_threshold: float = 0.9

    def to_dict(self) -> dict[str, Any]:
        from .evaluate import _plain

        out = _plain(asdict(self))
        out["length_histogram"] = {str(k): v for k, v in self.length_histogram.items()}
        return out

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)

    def to_html(self, *, title: str = "tokensmith diagnostics") -> str:
        """A self-contained HTML page with the plots (see :mod:`tokensmith.report`)."""
        from ._report import render_diagnostics

        return render_diagnostics(self, title=title)

    def save_html(
        self, path: str | os.PathLike[str], *, title: str = "tokensmith diagnostics"
    ) -> Path:
        """Write :meth:`to_html` to ``path`` (atomically) and return the path."""
        from ._report import write_atomic

        return write_atomic(Path(path), self.to_html(title=title))

    def summary(self) -> str:
        out = [f"{self.name}  ({self.model}, {self.vocab_size:,} tokens, "
               f"{self.special_tokens} special, {merge_phrase(self.merges, self.merged_tokens)})"]
        if self.note:
            out.append(f"note: {self.note}")
        if self.growth:
            out.append(f"mean token length by {self.growth_basis} (characters):")
            for b in self.growth:
                if math.isnan(b.mean_chars):  # only parts of characters were made
                    out.append(f"  {b.start:>8,}-{b.end - 1:<8,}     -  (partial characters)")
                    continue
                bar = "#" * max(0, round(b.mean_chars * 4))
                out.append(f"  {b.start:>8,}-{b.end - 1:<8,} {b.mean_chars:5.2f}  {bar}")
        apart = f"{self.partial_tokens:,} partial-character tokens"
        if self.byte_fallback_tokens:
            apart += f" and {self.byte_fallback_tokens:,} byte-fallback pieces"
        out.append(f"token lengths (characters; {apart} apart), mean {self.mean_length:.2f}:")
        total = max(1, sum(self.length_histogram.values()))
        for n, c in sorted(self.length_histogram.items())[:16]:
            out.append(f"  {n:>3}  {c:>8,}  {100 * c / total:5.1f}%  "
                       + "#" * round(40 * c / total))
        longer = sum(c for n, c in self.length_histogram.items() if n > 16)
        if longer:
            out.append(f"  >16  {longer:>8,}")
        out.append("vocabulary by script:")
        width = max([12, *(len(s) for s in self.scripts)])
        for s, c in self.scripts.items():
            line = f"  {s:<{width}} {c:>8,}  {100 * self.script_share[s]:5.1f}%"
            if self.corpus_scripts is not None:
                line += f"   (letters of the text: {100 * self.corpus_scripts.get(s, 0.0):5.1f}%)"
            out.append(line)
        if self.longest:
            out.append("longest tokens: " + ", ".join(repr(t) for t, _ in self.longest))
        if self.residues is not None:
            out.append(f"residues on the text (IoS >= {self.residue_threshold:g}: met at least "
                       f"that share of the time inside longer tokens): {len(self.residues):,}; "
                       f"learned tokens never produced: {self.unused_tokens:,}")
            for r in self.residues[:10]:
                out.append(f"  {r.token!r:<24} id {r.id:>7}  IoS {r.ios:.3f}  "
                           f"({r.emitted:,} alone, {r.inside:,} inside)")
        for w in self.warnings:
            out.append(f"warning: {w}")
        return "\n".join(out)


def _surface(tok: Tokenizer, i: int) -> tuple[str | None, int]:
    """The token's text (None when it is part of a character) and its byte length."""
    raw = token_text(tok, i)
    try:
        return raw.decode("utf-8"), len(raw)
    except UnicodeDecodeError:
        return None, len(raw)


def _bpe_merges(tok: Tokenizer) -> list[tuple[str, str]]:
    """The merges of a BPE model in rank order.

    The core lists them for byte-level and character-level BPE; for other BPE
    variants (SentencePiece BPE, PickyBPE's merge events) they are read from the
    ``tokenizer.json`` text.
    """
    merges = list(tok.merges)
    if merges:
        return merges
    try:
        model = json.loads(tok.to_str(pretty=False)).get("model") or {}
    except (ValueError, AttributeError):
        return []
    out: list[tuple[str, str]] = []
    # (a PickyBPE's merges are its events that are pairs; removals are objects)
    for m in model.get("merges") or model.get("events") or []:
        if isinstance(m, str) and " " in m:
            a, b = m.split(" ", 1)
            out.append((a, b))
        elif isinstance(m, (list, tuple)) and len(m) == 2:
            out.append((str(m[0]), str(m[1])))
    return out


def _length(text: str) -> int:
    return len(text) - 1 if len(text) > 1 and text[0] == " " else len(text)


def diagnose(
    tokenizer: TokenizerLike,
    *,
    texts: Iterable[str] | None = None,
    buckets: int = 20,
    top: int = 10,
    name: str | None = None,
    residue_threshold: float = 0.9,
    residue_min_count: int = 10,
) -> Diagnostics:
    """What ``tokenizer`` learned; see the module documentation for the definitions.

    ``texts`` (optional) adds the share of each script among their letters,
    to compare the vocabulary's shares with, and the residues: tokens the
    texts meet at least ``residue_threshold`` of the time inside longer tokens
    (and at least ``residue_min_count`` times in all), see
    :mod:`tokensmith._residues`.
    """
    from .evaluate import _default_name

    tok = _as_tokenizer(tokenizer)
    kinds = _kinds(tok)
    vocab = tok.get_vocab()
    ids = sorted(i for i in vocab.values() if i not in kinds.special)
    info: dict[int, tuple[str | None, int]] = {i: _surface(tok, i) for i in ids}
    fallback = [i for i in ids if i in kinds.byte_fallback]
    learned = [i for i in ids if i not in kinds.byte_fallback]  # byte pieces stand for bytes

    hist: Counter[int] = Counter()
    scripts: Counter[str] = Counter()
    partial = 0
    if fallback:
        scripts["Bytes"] += len(fallback)
    for i in learned:
        text, _ = info[i]
        if text is None:
            partial += 1
            scripts["Bytes"] += 1
            continue
        hist[_length(text)] += 1
        scripts[token_script(text)] += 1
    complete = sum(hist.values())
    mean_length = sum(n * c for n, c in hist.items()) / complete if complete else 0.0

    merges = _bpe_merges(tok) if kinds.model in ("BPE", "PickyBPE") else []
    note = ""
    if merges:
        basis = "merge rank"
        made: list[int] = []
        seen: set[int] = set()  # tiktoken-derived merges can reach one token by two paths
        prefix = kinds.prefix
        for a, b in merges:
            merged = a + (b[len(prefix):] if prefix and b.startswith(prefix) else b)
            j = vocab.get(merged)
            if j is None:
                j = vocab.get(a + b)
            if j is not None and j not in seen:
                seen.add(j)
                made.append(j)
    else:
        basis = "token id"
        made = learned
        family = {"WordPiece": "WordPiece", "Unigram": "Unigram"}.get(kinds.model)
        what = (f"{family} has no merges" if family
                else f"this {kinds.model} tokenizer has no merges")
        order = ("SentencePiece orders its pieces by score" if kinds.model == "Unigram"
                 else "the order the vocabulary was built in")
        note = (f"{what}: merges over time cannot be shown, so token lengths are shown in "
                f"token id order instead ({order})")
    growth: list[GrowthBucket] = []
    if made:
        n_buckets = max(1, min(buckets, len(made)))
        size = len(made) / n_buckets
        for k in range(n_buckets):
            lo, hi = round(k * size), round((k + 1) * size)
            chunk = made[lo:hi]
            if not chunk:
                continue
            chars = [_length(t) for t, _ in (info.get(j) or _surface(tok, j) for j in chunk)
                     if t is not None]
            byte_lens = [(info.get(j) or _surface(tok, j))[1] for j in chunk]
            growth.append(GrowthBucket(
                start=lo, end=hi,
                mean_chars=sum(chars) / len(chars) if chars else math.nan,
                mean_bytes=sum(byte_lens) / len(byte_lens),
            ))

    longest_ids = sorted(
        (i for i in learned if info[i][0] is not None),
        key=lambda i: (-_length(info[i][0] or ""), i),
    )[:top]
    counted = sum(scripts.values())
    not_bytes = counted - scripts.get("Bytes", 0)
    ordered = dict(scripts.most_common())
    warnings: list[str] = []
    corpus: dict[str, float] | None = None
    found: list[Residue] | None = None
    unused: int | None = None
    if texts is not None:
        texts = [texts] if isinstance(texts, str) else list(texts)
        found, unused = residues(tok, texts, merges=merges, threshold=residue_threshold,
                                 min_count=residue_min_count)
        if found and len(found) >= kinds.ordinary / 100:
            warnings.append(
                f"{len(found):,} tokens ({100 * len(found) / kinds.ordinary:.1f}% of the "
                f"vocabulary) are met at least {100 * residue_threshold:g}% of the time inside "
                f"longer tokens: residues (their ids are rarely produced, so their embeddings are "
                f"rarely trained)")
        corpus = letter_scripts(texts)
        if corpus:
            for s, share in corpus.items():
                vocab_share = scripts.get(s, 0) / not_bytes if not_bytes else 0.0
                if share >= 0.1 and vocab_share < share / 4:
                    warnings.append(
                        f"{s} is {100 * share:.0f}% of the letters of the text but only "
                        f"{100 * vocab_share:.1f}% of the vocabulary"
                        + (" (byte tokens not counted)" if scripts.get("Bytes") else "")
                    )
        else:
            warnings.append("the texts given have no letters to compare scripts with")
    return Diagnostics(
        name=name or _default_name(tokenizer),
        model=describe(tok),
        vocab_size=kinds.ordinary,
        special_tokens=len(kinds.special),
        merges=len(merges),
        merged_tokens=len(made) if merges else 0,
        growth_basis=basis,
        growth=growth,
        length_histogram=dict(sorted(hist.items())),
        partial_tokens=partial,
        mean_length=mean_length,
        scripts=ordered,
        script_share={s: c / counted for s, c in ordered.items()} if counted else {},
        longest=[(show_piece(token_text(tok, i)), _length(info[i][0] or "")) for i in longest_ids],
        corpus_scripts=corpus,
        warnings=warnings,
        byte_fallback_tokens=len(fallback),
        note=note,
        residues=found,
        unused_tokens=unused,
        residue_threshold=residue_threshold,
    )
