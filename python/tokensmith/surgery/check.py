"""Proof that a changed tokenizer keeps the old one's promises: :func:`check_compatible`.

A vocabulary change (add tokens, extend by training, prune, merge, resize) is
only safe for a trained model when every id the model has learned still
means what it meant. :func:`check_compatible` compares the old tokenizer with
the new one and returns a :class:`CompatibilityReport`; ``report.ok`` is
False when any of these invariants is broken:

``old ids``
    Every id of the old tokenizer is in the new one and its token has the
    same bytes (``id_to_bytes``). Ids with no token in the old tokenizer are
    skipped. After a prune, pass its ``id_map``: old ids are then looked for
    at their new ids, and the ids it removed are counted, not failed. Without
    the map, ``removed_ok=True`` counts old ids that have no token any more,
    or that a prune with ``keep_ids=True`` marked unused (a special
    ``<|unused_N|>`` token, or a SentencePiece ``UNUSED`` piece).
``special tokens``
    Every special token of the old tokenizer is still special, with its id
    (the id the ``id_map`` gives it, when there is one).
``duplicates``
    No token string has two ids and no id has two token strings. Two ids
    whose tokens have the same bytes are only a warning (a SentencePiece
    byte piece ``<0x41>`` and a piece ``A`` legitimately do).
``id gaps``
    Every id below the new ``vocab_size`` has a token, except where the old
    tokenizer had the same gap, ids removed with ``removed_ok=True``, or
    with ``allow_gaps=True``.
``reachability``
    BPE only: every merge joins two tokens of the vocabulary into a token of
    the vocabulary, and every token longer than one symbol (byte, character,
    or character with its ``##`` prefix / ``</w>`` suffix) is made by some
    merge. Without a merge list (rank files, SentencePiece ``.model`` BPE),
    every such token splits into two tokens of the vocabulary. Added tokens,
    the unknown token, byte-fallback tokens and SentencePiece control,
    user-defined and unused pieces are not made by merges.
    Problems the old tokenizer already had are warnings, not failures.
    WordPiece and Unigram pieces are checked by encoding each piece's own
    text (``##`` removed, after an anchor character, for WordPiece
    continuations; ``▁`` as a space for SentencePiece); new pieces that are
    never produced are warnings, since a piece can be legitimately shadowed
    by a better segmentation.
``round trip``
    Every text (``texts`` plus, with ``adversarial=True``, the built-in
    suite of :func:`adversarial_texts`) that the old tokenizer round-trips,
    ``old.decode(old.encode(x)) == x``, the new one round-trips too. A
    normalizing tokenizer (BERT lowercases, T5 applies NFKC) does not
    round-trip every text; on those texts the new decoded text is expected
    to equal the old decoded text, and a difference is a warning.
``unchanged ids``
    A text whose new encoding uses no id that is new (that no old id with
    the same bytes became), and whose old encoding uses no removed or changed
    id, has exactly its old ids (mapped through ``id_map`` when one is
    given). The share of texts whose ids changed at all is reported, with the
    first differences.
``vocabulary size``
    ``new.vocab_size <= max_vocab`` when ``max_vocab`` is given (the number
    of embedding rows of the model).

Texts are encoded with ``disallowed_special=()`` (text that spells a special
token is ordinary text) and ``add_special_tokens=False``, and decoded with
``skip_special_tokens=False``. Bytes per token before and after are measured
on ``texts`` as :func:`tokensmith.evaluate.compression` measures them, and
per-language token counts on ``parallel`` line-aligned texts as
:func:`tokensmith.evaluate.parity` does (pivot ``"en"`` when present, else the
first language).

>>> import tokensmith as ts
>>> from tokensmith.surgery.check import check_compatible
>>> tok = ts.train(texts=["the cat sat on the mat. "] * 50, vocab_size=270)
>>> report = check_compatible(tok, tok, ["the cat sat on the mat."])
>>> report.ok, report.texts_changed
(True, 0)
"""

from __future__ import annotations

import math
import os
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import CompatibilityError, ConfigError, TokenizerError
from ..evaluate import _compression, _Encoded, _kinds, _TokenKinds, parity, show_piece

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer

__all__ = [
    "CheckResult",
    "FirstDifference",
    "ParityChange",
    "CompatibilityReport",
    "check_compatible",
    "adversarial_texts",
    "IdMapLike",
]

_MAX_DIFFERENCES = 10  # first differences kept in a report
_EXAMPLES = 3  # examples named in one failure line
_WINDOW_BEFORE, _WINDOW_AFTER = 2, 3  # ids shown around a first difference
_SPACE = "\u2581"  # SentencePiece's word marker


# ------------------------------------------------------------------ results


@dataclass(frozen=True)
class CheckResult:
    """One invariant: its name, whether it holds, and what was found."""

    name: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class FirstDifference:
    """Where one text's new ids first differ from its old ids.

    ``text_index`` indexes the ``texts`` given to :func:`check_compatible`, or
    :func:`adversarial_texts` when ``adversarial`` is True. ``position`` is the
    first token position that differs; ``old_ids``/``new_ids`` are the ids
    from two positions before it (``start``) to three after it, and
    ``old_tokens``/``new_tokens`` their texts (bytes that are not a whole
    character shown as ``<0xE5>``).
    """

    text_index: int
    position: int
    start: int
    old_ids: list[int]
    new_ids: list[int]
    old_tokens: list[str]
    new_tokens: list[str]
    adversarial: bool = False


@dataclass(frozen=True)
class ParityChange:
    """One language's token count on the parallel texts, before and after."""

    language: str
    tokens_before: int
    tokens_after: int
    premium_before: float
    premium_after: float


@dataclass(frozen=True)
class CompatibilityReport:
    """What :func:`check_compatible` found; true (``bool(report)``) when ``ok``.

    ``failures`` has one line per broken invariant, naming the problem, up to
    three examples and the fix; ``checks`` has every invariant with what was
    found. ``texts_checked``, ``texts_changed`` and ``changed_share`` count the
    ``texts`` given (not the adversarial suite); ``first_differences`` shows up
    to ten changed texts, given texts first. ``bytes_per_token_*`` and
    ``tokens_*`` are measured on the given texts (None and 0 without them);
    ``parity`` compares the per-language token counts of ``parallel`` texts
    relative to ``pivot``. ``removed_ids`` counts old ids the new tokenizer
    lacks; ``round_trip_failures`` the texts that stopped round-tripping.
    """

    ok: bool
    failures: list[str]
    warnings: list[str]
    checks: list[CheckResult]
    old_vocab_size: int
    new_vocab_size: int
    texts_checked: int
    texts_changed: int
    changed_share: float
    first_differences: list[FirstDifference]
    bytes_per_token_before: float | None
    bytes_per_token_after: float | None
    parity: list[ParityChange] | None = None
    pivot: str | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    adversarial_checked: int = 0
    removed_ids: int = 0
    max_vocab: int | None = None
    round_trip_failures: int = 0

    def __bool__(self) -> bool:
        return self.ok

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain JSON-able data (NaN and infinity become None)."""
        return _plain(asdict(self))

    def raise_for_failures(self) -> None:
        """Raise :class:`~tokensmith.errors.CompatibilityError` listing the failures,
        if there are any."""
        if self.ok:
            return
        lines = "\n".join(f"- {f}" for f in self.failures)
        raise CompatibilityError(
            f"the new tokenizer breaks {len(self.failures)} compatibility "
            f"invariant{'s' if len(self.failures) != 1 else ''} of the old one:\n{lines}\n"
            f"Fix the change that made it; report.format_table() shows every check."
        )

    # ------------------------------------------------------------ rendering
    def _summary_line(self) -> str:
        broken = sum(1 for c in self.checks if not c.passed)
        if self.ok:
            return f"compatible: all {len(self.checks)} checks passed"
        return f"NOT compatible: {broken} of {len(self.checks)} checks failed"

    def _size_rows(self) -> list[list[str]]:
        rows = [["vocabulary size", f"{self.old_vocab_size:,}", f"{self.new_vocab_size:,}"]]
        if self.texts_checked:
            rows.append(["tokens", f"{self.tokens_before:,}", f"{self.tokens_after:,}"])
            rows.append(["bytes per token", _num(self.bytes_per_token_before),
                         _num(self.bytes_per_token_after)])
        return rows

    def _texts_line(self) -> str:
        parts = []
        if self.texts_checked:
            parts.append(f"{_plural(self.texts_checked, 'text')} checked, "
                         f"{self.texts_changed:,} with changed ids "
                         f"({100 * self.changed_share:.1f}%)")
        else:
            parts.append("no texts given")
        if self.adversarial_checked:
            parts.append(f"{_plural(self.adversarial_checked, 'adversarial text')}")
        if self.removed_ids:
            parts.append(f"{_plural(self.removed_ids, 'old id')} removed")
        return "; ".join(parts)

    def _difference_rows(self) -> list[list[str]]:
        rows = []
        for d in self.first_differences:
            where = f"adversarial {d.text_index}" if d.adversarial else f"text {d.text_index}"
            rows.append([where, str(d.position),
                         " ".join(map(str, d.old_ids)) + "  " + _bracketed(d.old_tokens),
                         " ".join(map(str, d.new_ids)) + "  " + _bracketed(d.new_tokens)])
        return rows

    def _parity_rows(self) -> list[list[str]]:
        return [[p.language, f"{p.tokens_before:,}", f"{p.tokens_after:,}",
                 _num(p.premium_before), _num(p.premium_after)] for p in self.parity or []]

    def format_table(self) -> str:
        """The report as aligned text tables, for a terminal."""
        from ..compare import format_table

        out = [self._summary_line(),
               _left_table(["check", "result", "detail"],
                           [[c.name, "ok" if c.passed else "FAIL", c.detail]
                            for c in self.checks]),
               format_table(["", "before", "after"], self._size_rows()),
               self._texts_line()]
        if self.first_differences:
            out.append("First differences\n" + _left_table(
                ["text", "token", "old ids", "new ids"], self._difference_rows()))
        if self.parity:
            out.append(f"Parity (tokens relative to {self.pivot})\n" + format_table(
                ["language", "tokens before", "tokens after", "premium before",
                 "premium after"], self._parity_rows()))
        if self.failures:
            out.append("Failures\n" + "\n".join(f"- {f}" for f in self.failures))
        if self.warnings:
            out.append("Warnings\n" + "\n".join(f"- {w}" for w in self.warnings))
        return "\n\n".join(out)

    def __str__(self) -> str:
        return self.format_table()

    def to_html(self, *, title: str = "tokensmith compatibility check") -> str:
        """A self-contained HTML page (no scripts, no network) with the same content."""
        from .._report import _e, _legend, _page, _table, bar_chart

        colour = "#e6f4ea;border-left:4px solid #2e7d32" if self.ok else \
            "#fdecea;border-left:4px solid #c62828"
        body = [f"<h1>{_e(title)}</h1>",
                f'<p style="background:{colour};padding:.5rem 1rem">'
                f"<b>{_e(self._summary_line())}</b></p>"]
        if self.failures:
            items = "".join(f"<li>{_e(f)}</li>" for f in self.failures)
            body.append(f'<div class="warn"><b>Failures</b><ul>{items}</ul></div>')
        rows = "".join(
            f"<tr><td>{_e(c.name)}</td><td>{'ok' if c.passed else '<b>FAIL</b>'}</td>"
            f'<td style="text-align:left;white-space:normal">{_e(c.detail)}</td></tr>'
            for c in self.checks)
        body.append('<h2>Checks</h2><div class="scroll"><table><thead><tr><th>check</th>'
                    f'<th>result</th><th style="text-align:left">detail</th></tr></thead>'
                    f"<tbody>{rows}</tbody></table></div>")
        body.append("<h2>Vocabulary and text</h2>"
                    + _table(["", "before", "after"], self._size_rows())
                    + f'<p class="note">{_e(self._texts_line())}</p>')
        if self.first_differences:
            body.append("<h2>First differences</h2>"
                        + _table(["text", "token", "old ids", "new ids"],
                                 self._difference_rows(), pieces=True))
        if self.parity:
            body.append(f"<h2>Parity (tokens relative to {_e(self.pivot)})</h2>"
                        + _table(["language", "tokens before", "tokens after",
                                  "premium before", "premium after"], self._parity_rows()))
            body.append(_legend(["before", "after"]) + bar_chart(
                [p.language for p in self.parity],
                [("before", [p.premium_before for p in self.parity]),
                 ("after", [p.premium_after for p in self.parity])],
                y_label="tokens relative to " + (self.pivot or ""), reference=1.0))
        if self.warnings:
            items = "".join(f"<li>{_e(w)}</li>" for w in self.warnings)
            body.append(f'<div class="warn"><b>Warnings</b><ul>{items}</ul></div>')
        return _page(title, "\n".join(body))


# -------------------------------------------------------------- formatting


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _num(x: float | None, digits: int = 2) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:,.{digits}f}"


def _visible(piece: str) -> str:
    """A piece for one table cell: spaces as ``␣``, line breaks and other control
    characters as escapes."""
    out = []
    for ch in piece:
        if ch == " ":
            out.append("␣")
        elif unicodedata.category(ch) == "Cc" or ch in "\u2028\u2029":
            out.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out)


def _bracketed(pieces: Sequence[str]) -> str:
    return "".join(f"[{_visible(p)}]" for p in pieces)


def _left_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Like :func:`tokensmith.compare.format_table`, every column left-aligned (text)."""
    from ..compare import _width

    widths = [len(h) for h in headers]
    for r in rows:
        for i, cell in enumerate(r):
            widths[i] = max(widths[i], _width(cell))

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c + " " * (widths[i] - _width(c)) for i, c in enumerate(cells)).rstrip()

    return "\n".join([line(headers), "  ".join("-" * w for w in widths)]
                     + [line(r) for r in rows])


def _show(raw: bytes | None) -> str:
    return "" if raw is None else show_piece(raw)


def _examples(items: Sequence[str], total: int | None = None) -> str:
    total = len(items) if total is None else total
    shown = "; ".join(items[:_EXAMPLES])
    more = total - min(len(items), _EXAMPLES)
    return shown + (f"; and {more:,} more" if more > 0 else "")


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (plural or word + 's')}"


def _v(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


# --------------------------------------------------------- the adversarial suite


def adversarial_texts() -> list[str]:
    """Short texts that stress normalizers, pre-tokenizers, merges and decoders:
    combining marks, emoji sequences, CJK, right-to-left scripts, control and
    invisible characters, long runs, mixed whitespace and indentation, numbers,
    punctuation after tabs, and text that spells special tokens."""
    zwj = "\u200d"
    return [
        # combining marks, precomposed and decomposed forms
        "cafe\u0301 café nai\u0308ve Å Å A\u030a",
        "Z\u0351\u0352\u0353\u0354\u0355a\u0300\u0301\u0302\u0303\u0304lgo o\u0338 q\u0323\u0307",
        "\u0915\u094d\u0937\u0924\u094d\u0930\u093f\u092f \u0939\u093f\u0902\u0926\u0940 "
        "\u0e01\u0e34\u0e48\u0e07 \u0f66\u0f90\u0f51",
        # emoji: ZWJ sequences, skin tones, flags, keycaps, variation selectors, tags
        f"\U0001f469{zwj}\U0001f4bb \U0001f468{zwj}\U0001f469{zwj}\U0001f467{zwj}\U0001f466 "
        f"\U0001f9d1\U0001f3fe{zwj}\U0001f91d{zwj}\U0001f9d1\U0001f3fb",
        "\U0001f44b\U0001f3fb\U0001f44b\U0001f3fc\U0001f44b\U0001f3fd\U0001f44b\U0001f3fe"
        "\U0001f44b\U0001f3ff \U0001f1fa\U0001f1f3\U0001f1ef\U0001f1f5 "
        "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",
        "\u2764\ufe0f \u2764\ufe0e 1\ufe0f\u20e3 #\ufe0f\u20e3 \U0001f3f3\ufe0f\u200d\U0001f308",
        # CJK, full-width forms, astral ideographs and mathematical letters
        "東京は日本の首都です。漢字、ひらがな、カタカナ、ｶﾀｶﾅ。",
        "한국어 문장을 토큰으로 나눕니다. 中文：你好，世界！（全角）ＡＢＣ１２３",
        "\U00020000\U00020001\U0002a6a5 \U0001d518\U0001d52b\U0001d526\U0001d520\U0001d52c",
        # right-to-left scripts, bidirectional controls, ZWNJ
        "مرحبًا بكم في العالم ١٢٣ والسَّلامُ عَلَيْكُم",
        "\u202eשלום\u202c עולם \u200fעִבְרִית\u200e English فارسی\u200cنویسی",
        # control and invisible characters
        "\x00\x01\x02\x07\x08\x0b\x0c\x1b[31mred\x1b[0m\x7f end",
        "a\u0085b\u2028c\u2029d\u200be\u2060f\ufeffg\u00adh\ufffdi",
        # long runs of one character or pattern
        "a" * 5000,
        " " * 4000 + "end",
        "\n" * 1500,
        "é" * 2000,
        "ab" * 2500,
        "\U0001f600" * 1000,
        "9" * 3000,
        "-" * 4000,
        "中" * 2000,
        # whitespace: tabs, mixed runs, no-break and ideographic spaces, line endings
        "tab\there\t\tand  two  spaces   three\u00a0nbsp\u3000ideographic\r\nCRLF\rCR\n",
        "  \n \n\t\n   x \t \n\u2003\u2009\u202f y   ",
        "   leading and trailing   ",
        # indentation and code
        "def f(x):\n    if x:\n        return {\"k\": [1, 2]}\n\treturn None\n",
        "\n    \n        \n            deep\n                deeper\n",
        "\t-ilrsD",
        "\t%s",
        "printf(\"%d\\t%s\\n\", n, s);\n\t-ilrsD\n\t%s\n\t\t--flag=1 && ls -la",
        # numbers in several scripts and notations
        "0 12 345 6789 12345678901234567890 3.14159 -2.5e-10 1,000,000 0x1F ½ ² "
        "١٢٣٤ ৫৬ ௭ ๑๒๓ ０１２",
        # case, contractions, letters that change under case mapping
        "I'm you're he'S THEY'LL we'd don't DON'T 'tis İstanbul ıi IŞIK Straße ǅ ﬁ ẞ",
        # text that spells special tokens and markers of other tokenizers
        "<|endoftext|> <|im_start|>user\nhi<|im_end|> <s> </s> <unk> <pad> [CLS] [SEP] "
        "[MASK] [UNK] <0x41> \u2581 Ġ ##ing </w>",
        # a lone surrogate (encoders take it as U+FFFD)
        "before \ud800 after",
        "",
    ]


# ----------------------------------------------------------------- the check


def _tokenizer(tok: Any, which: str) -> Tokenizer:
    from ..tokenizer import Tokenizer

    if isinstance(tok, Tokenizer):
        return tok
    if isinstance(tok, (str, os.PathLike)):
        from .._loading import load

        return load(tok)
    raise ConfigError(f"{which} must be a tokensmith.Tokenizer, a path or a name, "
                      f"not {type(tok).__name__}")


def _texts(texts: Iterable[str] | None) -> list[str]:
    if texts is None:
        return []
    items = [texts] if isinstance(texts, str) else list(texts)
    for k, t in enumerate(items):
        if not isinstance(t, str):
            raise ConfigError(f"texts must be strings; item {k} is a {type(t).__name__}")
    return items


class IdMapLike(Protocol):
    """Where each old id went, as :class:`tokensmith.surgery.prune.IdMap` says it:
    ``old_to_new[i]`` is the new id of old id ``i``, ``-1`` when it was removed."""

    @property
    def old_to_new(self) -> Sequence[int] | Any: ...


class _Vocab:
    """One pass over a tokenizer's ids; what kind each token is, when asked."""

    def __init__(self, tok: Tokenizer) -> None:
        self.tok = tok
        self.size = n = tok.vocab_size
        self.raw: list[bytes | None] = [tok.id_to_bytes(i) for i in range(n)]
        self.tokens: list[str | None] = [tok.id_to_token(i) for i in range(n)]

    @cached_property
    def kinds(self) -> _TokenKinds:
        return _kinds(self.tok)  # reads the model section: not for every tokenizer

    @cached_property
    def piece_types(self) -> dict[int, int]:
        """A SentencePiece model's piece types other than NORMAL, by id (control,
        user-defined, unused, byte pieces); empty for other formats."""
        from ..formats.sentencepiece import NORMAL
        from ._base import model_proto, origin

        if origin(self.tok) != "sentencepiece":
            return {}
        try:
            pieces = model_proto(self.tok).pieces
        except TokenizerError:
            return {}
        return {i: int(p.type) for i, p in enumerate(pieces) if int(p.type) != NORMAL}

    def unused(self) -> set[int]:
        from ..formats.sentencepiece import UNUSED

        return {i for i, t in self.piece_types.items() if t == UNUSED}

    def show(self, i: int) -> str:
        raw = self.raw[i] if 0 <= i < self.size else None
        return f"id {i} {_show(raw)!r}"


@dataclass
class _TextResult:
    changed: int  # given texts whose ids changed
    differences: list[FirstDifference]
    old_ids: list[list[int]]  # of the given texts
    new_ids: list[list[int]]
    round_trip: int  # texts that stopped round-tripping


class _Checker:
    def __init__(self, old: Tokenizer, new: Tokenizer, id_map: list[int] | None,
                 removed_ok: bool) -> None:
        self.old, self.new = old, new
        self.ov, self.nv = ov, nv = _Vocab(old), _Vocab(new)
        self.map = id_map  # None: every old id is expected at the same id
        self.removed_ok = removed_ok
        self.checks: list[CheckResult] = []
        self.failures: list[str] = []
        self.warnings: list[str] = []
        # every old token: kept (same bytes at its new id), changed, or gone
        new_specials = set(new.special_tokens.values())
        old_specials = set(old.special_tokens.values())
        self.kept: dict[int, int] = {}  # old id -> new id
        self.changed: list[int] = []  # an old id whose new id holds other bytes
        self.missing: list[int] = []  # an old id whose new id holds no token
        self.dropped: list[int] = []  # an old id the id map removes
        self.retired: list[int] = []  # removed_ok: an old id marked unused now
        # a prune that kept the ids marks SentencePiece pieces UNUSED: same bytes, never used
        unused = nv.unused() - ov.unused() if removed_ok and id_map is None else set()
        for i, b in enumerate(ov.raw):
            if b is None:
                continue
            if i in unused:
                self.retired.append(i)
                continue
            j = i if id_map is None else id_map[i]
            nb = nv.raw[j] if 0 <= j < nv.size else None
            if j < 0:
                self.dropped.append(i)
            elif nb == b:
                self.kept[i] = j
            elif nb is None:
                self.missing.append(i)
            elif id_map is None and removed_ok and j in new_specials and i not in old_specials:
                self.retired.append(i)
            else:
                self.changed.append(i)
        # old ids whose text must encode differently now
        self.gone = set(self.changed) | set(self.missing) | set(self.dropped) | set(self.retired)
        # new ids that no old id became: new tokens (or an old id's new meaning)
        targets = set(self.kept.values())
        self.new_ids = {j for j, b in enumerate(nv.raw) if b is not None and j not in targets}

    def where(self, i: int) -> int:
        """The new id old id ``i`` should have."""
        return i if self.map is None else self.map[i]

    def record(self, name: str, problems: list[str], detail_ok: str,
               detail_bad: str | None = None) -> None:
        """A check: failed when ``problems`` (one failure line each) is not empty."""
        if problems:
            self.failures.extend(f"{name}: {p}" for p in problems)
        detail = (detail_bad or detail_ok) if problems else detail_ok
        self.checks.append(CheckResult(name, not problems, detail))

    @property
    def removed_count(self) -> int:
        """Old ids removed on purpose: by the id map, or allowed by ``removed_ok``."""
        missing = len(self.missing) if self.removed_ok and self.map is None else 0
        return len(self.dropped) + len(self.retired) + missing

    # ------------------------------------------------------------ 1. ids
    def old_ids(self) -> None:
        ov, nv = self.ov, self.nv
        changed, missing = self.changed, self.missing
        mapped = self.map is not None
        problems = []
        if changed:
            ex = [f"id {i} was {_show(ov.raw[i])!r} and "
                  + (f"its new id {self.where(i)} is " if mapped else "is now ")
                  + repr(_show(nv.raw[self.where(i)])) for i in changed[:_EXAMPLES]]
            problems.append(f"{_plural(len(changed), 'old id')} now "
                            f"{_v(len(changed), 'stands', 'stand')} for other bytes: "
                            + _examples(ex, len(changed))
                            + ". A token's id must never be given to another token")
        if missing and mapped:
            ex = [f"{ov.show(i)} -> id {self.where(i)}" for i in missing[:_EXAMPLES]]
            problems.append(f"the id map sends {_plural(len(missing), 'old id')} to new ids "
                            f"without a token: " + _examples(ex, len(missing))
                            + ". Pass the id map of the change that made this tokenizer")
        elif missing and not self.removed_ok:
            ex = [ov.show(i) for i in missing[:_EXAMPLES]]
            problems.append(f"{_plural(len(missing), 'old id')} "
                            f"{_v(len(missing), 'is', 'are')} missing from the new "
                            f"tokenizer: " + _examples(ex, len(missing))
                            + ". Pass removed_ok=True (--removed-ok) if they were pruned, "
                              "or the prune's id_map")
        detail = f"{len(self.kept):,} old ids decode to the same bytes"
        if mapped:
            moved = sum(1 for i, j in self.kept.items() if i != j)
            detail += f" ({moved:,} at another id, as the id map says)" if moved else ""
        if self.dropped:
            detail += f"; {len(self.dropped):,} removed by the id map"
        if self.retired:
            detail += f"; {len(self.retired):,} retired (unused special tokens now)"
        if missing:
            detail += f"; {len(missing):,} missing" + (
                " (allowed)" if self.removed_ok and not mapped else "")
        if changed:
            detail += f"; {len(changed):,} changed"
        self.record("old ids", problems, detail)

    def special_tokens(self) -> None:
        old_sp, new_sp = self.old.special_tokens, self.new.special_tokens
        moved: list[str] = []
        lost: list[str] = []
        for content, i in old_sp.items():
            j = new_sp.get(content)
            want = self.where(i) if i < self.ov.size else i
            if j == want:
                continue
            if j is not None:
                moved.append(f"{content!r} moved from id {i} to id {j}"
                             + (f" (the id map says {want})" if want != i else ""))
                continue
            k = self.new.token_to_id(content)
            lost.append(f"{content!r} (id {i}) is " + (f"an ordinary token (id {k})" if k
                                                       is not None else "not in the tokenizer"))
        problems = []
        if moved:
            problems.append(f"{_plural(len(moved), 'special token')} "
                            f"{_v(len(moved), 'has', 'have')} another id: " + _examples(moved)
                            + ". Keep every special token's id")
        if lost:
            problems.append(f"{_plural(len(lost), 'special token')} "
                            f"{_v(len(lost), 'is', 'are')} no longer special: " + _examples(lost)
                            + ". Keep the old special tokens as they were")
        added = len(set(new_sp) - set(old_sp))
        detail = (f"{_plural(len(old_sp), 'special token')} "
                  f"{_v(len(old_sp), 'keeps its id', 'keep their ids')}")
        if added:
            detail += f"; {added:,} new"
        self.record("special tokens", problems, detail,
                    f"{len(moved) + len(lost):,} of {len(old_sp):,} special tokens changed")

    def duplicates(self) -> None:
        nv = self.nv
        problems: list[str] = []

        def doubled(tokens: list[str | None]) -> list[tuple[str, int, int]]:
            first: dict[str, int] = {}
            out = []
            for i, t in enumerate(tokens):
                if t is not None and first.setdefault(t, i) != i:
                    out.append((t, first[t], i))
            return out

        twice = doubled(nv.tokens)
        inherited = 0
        if twice:  # a string the old vocabulary already had twice is not this change's doing
            before = {t for t, _, _ in doubled(self.ov.tokens)}
            inherited = sum(1 for t, _, _ in twice if t in before)
            fresh = [f"{t!r} is id {j} and id {i}" for t, j, i in twice if t not in before]
            if fresh:
                problems.append(f"{_plural(len(fresh), 'token string')} "
                                f"{_v(len(fresh), 'has', 'have')} two ids: " + _examples(fresh)
                                + ". Give an existing token its old id instead of a new one")
        vocab = self.new.get_vocab()
        if len(set(vocab.values())) != len(vocab):
            by_id: dict[int, list[str]] = {}
            for t, i in vocab.items():
                by_id.setdefault(i, []).append(t)
            shared = [f"id {i} is {' and '.join(map(repr, ts))}"
                      for i, ts in sorted(by_id.items()) if len(ts) > 1]
            problems.append(f"{_plural(len(shared), 'id')} "
                            f"{_v(len(shared), 'has', 'have')} two token strings: "
                            + _examples(shared) + ". Every token needs its own id")
        if inherited:
            self.warnings.append(f"duplicates: {_plural(inherited, 'token string')} already "
                                 f"had two ids in the old tokenizer")
        # the same bytes under two ids: a warning (byte pieces and pieces may share them)
        skip = nv.kinds.special | nv.kinds.unknown | set(nv.kinds.byte_fallback)
        seen: dict[bytes, int] = {}
        same: list[str] = []
        for i, b in enumerate(nv.raw):
            if b is None or i in skip:
                continue
            j = seen.setdefault(b, i)
            if j != i and (i in self.new_ids or j in self.new_ids):
                same.append(f"id {j} and id {i} are {_show(b)!r}")
        if same:
            self.warnings.append(f"duplicates: {_plural(len(same), 'new token')} "
                                 f"{_v(len(same), 'has', 'have')} the same bytes as another "
                                 f"token: " + _examples(same))
        n = sum(1 for t in nv.tokens if t is not None)
        self.record("duplicates", problems, f"{n:,} distinct token strings",
                    "token strings or ids used twice")

    def gaps(self, allow_gaps: bool) -> None:
        ov, nv = self.ov, self.nv
        reported = {self.where(i) for i in self.missing}  # under "old ids"
        image = set(self.map) if self.map is not None else set()
        gaps: list[int] = []
        inherited = 0
        for j, b in enumerate(nv.raw):
            if b is not None or j in reported:
                continue
            if j < ov.size and ov.raw[j] is None and j not in image:
                inherited += 1  # the old tokenizer had the same gap
            else:
                gaps.append(j)
        problems = []
        if gaps and not allow_gaps:
            problems.append(f"{_plural(len(gaps), 'id')} below the vocabulary size "
                            f"{nv.size:,} {_v(len(gaps), 'has', 'have')} no token: "
                            + _examples([f"id {i}" for i in gaps], len(gaps))
                            + ". Number new tokens from the first free id, or pass "
                              "allow_gaps=True (--allow-gaps)")
        detail = "every id has a token"
        if gaps:
            detail = f"{len(gaps):,} new ids without a token" + (" (allowed)" if allow_gaps else "")
            if inherited:
                detail += f"; {inherited:,} more as in the old tokenizer"
        elif inherited:
            detail = f"{_plural(inherited, 'id')} without a token, as in the old tokenizer"
        self.record("id gaps", problems, detail)

    # ---------------------------------------------------------- 2. reachability
    def reachability(self) -> None:
        model = self.nv.kinds.model
        if model == "BPE":
            self._bpe_reachability()
        elif model in ("WordPiece", "Unigram"):
            self._producible()
        else:
            self.checks.append(CheckResult("reachability", True,
                                           f"not checked for {model} models"))

    def _bpe_problems(self, tok: Tokenizer, v: _Vocab) -> tuple[list[str], str]:
        kinds = v.kinds
        vocab = tok.get_vocab()
        # not made by merges: special and added tokens, the unknown token, byte tokens,
        # and SentencePiece's control, user-defined and unused pieces
        skip = kinds.special | kinds.unknown | set(kinds.byte_fallback) | set(v.piece_types)
        prefix, suffix, byte_level = kinds.prefix, kinds.suffix, kinds.byte_level

        def multi(s: str) -> bool:  # made of more than one symbol of the alphabet
            if byte_level:
                return len(s) > 1
            if prefix and s.startswith(prefix) and len(s) > len(prefix):
                s = s[len(prefix):]
            if suffix and s.endswith(suffix) and len(s) > len(suffix):
                s = s[: -len(suffix)]
            return len(s) > 1

        candidates = [s for s, i in vocab.items() if i not in skip and multi(s)]
        merges = tok.merges
        problems: list[str] = []
        if merges:
            cut = len(prefix)

            def joined(a: str, b: str) -> str:
                return a + (b[cut:] if cut and b.startswith(prefix) else b)

            made = [joined(a, b) for a, b in merges]
            problems += [f"merge {a!r} + {b!r} uses a token that is not in the vocabulary"
                         for a, b in merges if a not in vocab or b not in vocab]
            problems += [f"merge {a!r} + {b!r} makes {m!r}, which is not in the vocabulary"
                         for (a, b), m in zip(merges, made, strict=True) if m not in vocab]
            produced = set(made)
            problems += [f"token {s!r} is made by no merge"
                         for s in candidates if s not in produced]
            how = f"{len(merges):,} merges"
        else:
            def splits(s: str) -> bool:
                return any(s[:k] in vocab and (s[k:] in vocab or prefix + s[k:] in vocab)
                           for k in range(1, len(s)))

            problems += [f"token {s!r} does not split into two tokens of the vocabulary"
                         for s in candidates if not splits(s)]
            how = "no merge list: every token splits into two tokens"
        return problems, f"{len(candidates):,} multi-symbol tokens reachable ({how})"

    def _bpe_reachability(self) -> None:
        problems, detail = self._bpe_problems(self.new, self.nv)
        # (messages name tokens, not ids, so that they compare across a renumbering)
        if problems:  # what the old tokenizer already had is not this change's doing
            before = set(self._bpe_problems(self.old, self.ov)[0])
            inherited = [p for p in problems if p in before]
            problems = [p for p in problems if p not in before]
            if inherited:
                self.warnings.append(
                    f"reachability: {_plural(len(inherited), 'problem')} the old tokenizer "
                    f"already had: " + _examples(inherited))
        failure = []
        if problems:
            failure.append(f"{_plural(len(problems), 'problem')}: " + _examples(problems)
                           + ". Add the merges that make every new token (and keep the "
                             "tokens those merges use); a token no merge makes is used at "
                             "most where a whole pre-token spells it")
        self.record("reachability", failure, detail,
                    f"{len(problems):,} tokens or merges break the merge closure")

    def _producible(self) -> None:
        """WordPiece/Unigram: does encoding each new piece's own text give the piece?"""
        tok, kinds = self.new, self.nv.kinds
        skip = kinds.special | kinds.unknown | set(kinds.byte_fallback)
        items = [(i, t) for i, t in enumerate(self.nv.tokens)
                 if t is not None and i in self.new_ids and i not in skip]
        if not items:
            self.checks.append(CheckResult("reachability", True,
                                           f"no new {kinds.model} pieces to check"))
            return
        everything = [(i, t) for i, t in enumerate(self.nv.tokens)
                      if t is not None and i not in skip]
        texts: list[str] = []
        owners: list[int] = []
        if kinds.model == "WordPiece":
            prefix = kinds.prefix
            anchors = _wordpiece_anchors(tok, everything, prefix)
            for i, s in items:
                if prefix and s.startswith(prefix) and len(s) > len(prefix) and anchors:
                    for a in anchors:
                        texts.append(a + s[len(prefix):])
                        owners.append(i)
                else:
                    texts.append(s)
                    owners.append(i)
        else:
            anchors = _unigram_anchors(tok, everything)
            for i, s in items:
                text = s.replace(_SPACE, " ")
                if s.startswith(_SPACE) or not anchors:
                    texts.append(text[1:] if s.startswith(_SPACE) else text)
                    owners.append(i)
                else:
                    for a in anchors:
                        texts.append(a + text)
                        owners.append(i)
        encoded = tok.encode_batch(texts, disallowed_special=(), add_special_tokens=False)
        produced = {i for i, ids in zip(owners, encoded, strict=True) if i in ids}
        never = [(i, s) for i, s in items if i not in produced]
        if never:
            self.warnings.append(
                f"reachability: {_plural(len(never), 'new piece')} of {kinds.model} "
                f"{_v(len(never), 'is', 'are')} not produced when "
                f"{_v(len(never), 'its', 'their')} own text is encoded (a better "
                f"segmentation or the normalizer shadows it): "
                + _examples([f"{s!r} (id {i})" for i, s in never]))
        self.checks.append(CheckResult(
            "reachability", True,
            f"{len(items) - len(never):,} of {len(items):,} new pieces produced from their "
            f"own text" + (" (the others are warnings)" if never else "")))

    # ------------------------------------------------------------ 3. and 4. texts
    def texts(self, user: list[str], extra: list[str]) -> _TextResult:
        old, new = self.old, self.new
        everything = user + extra
        if not everything:
            self.checks.append(CheckResult("round trip", True, "no texts to check"))
            self.checks.append(CheckResult("unchanged ids", True, "no texts to check"))
            return _TextResult(0, [], [], [], 0)
        old_ids = old.encode_batch(everything, disallowed_special=(), add_special_tokens=False)
        new_ids = new.encode_batch(everything, disallowed_special=(), add_special_tokens=False)
        old_text = old.decode_batch(old_ids)
        new_text = new.decode_batch(new_ids)
        n_user = len(user)

        def where(k: int) -> str:
            return f"text {k}" if k < n_user else f"adversarial text {k - n_user}"

        lost: list[str] = []
        drift: list[str] = []
        lossless = 0
        for k, (x, o, n) in enumerate(zip(everything, old_text, new_text, strict=True)):
            if o == x:
                lossless += 1
                if n != x:
                    lost.append(f"{where(k)} {_mismatch(x, n)}")
            elif n != o:
                drift.append(f"{where(k)} {_mismatch(o, n)}")
        problems = []
        if lost:
            problems.append(f"{_plural(len(lost), 'text')} the old tokenizer round-trips "
                            f"{'does' if len(lost) == 1 else 'do'} not round-trip any more: "
                            + _examples(lost) + ". Check the new tokens' bytes and the decoder")
        if drift:
            self.warnings.append(
                f"round trip: {_plural(len(drift), 'text')} that the old tokenizer does not "
                f"round-trip (it normalizes) {_v(len(drift), 'decodes', 'decode')} to other "
                f"text now: " + _examples(drift))
        detail = (f"the new tokenizer round-trips every text the old one does ({lossless:,} "
                  f"of {len(everything):,})")
        if lossless < len(everything) and not drift:
            detail += "; the others decode as they did"
        self.record("round trip", problems, detail,
                    f"{len(lost):,} of the {lossless:,} texts the old tokenizer round-trips "
                    f"break")

        new_only, gone, table = self.new_ids, self.gone, self.map
        # with an id map, the old ids as the new tokenizer numbers them (-1: removed)
        expected = old_ids if table is None else [[table[i] for i in o] for o in old_ids]
        changed = 0
        unexplained: list[str] = []
        shown: tuple[list[FirstDifference], list[FirstDifference]] = ([], [])
        for k, (want, got) in enumerate(zip(expected, new_ids, strict=True)):
            if want == got:
                continue
            if k < n_user:
                changed += 1
            explained = not new_only.isdisjoint(got) or not gone.isdisjoint(old_ids[k])
            kept = shown[0] if k < n_user else shown[1]
            if explained and len(kept) >= _MAX_DIFFERENCES:
                continue
            d = self._difference(k, old_ids[k], want, got, n_user)
            if len(kept) < _MAX_DIFFERENCES:
                kept.append(d)
            if not explained:
                unexplained.append(
                    f"{where(k)} at token {d.position}: old {d.old_ids} "
                    f"{_bracketed(d.old_tokens)}, new {d.new_ids} {_bracketed(d.new_tokens)}")
        differences = (shown[0] + shown[1])[:_MAX_DIFFERENCES]
        problems = []
        if unexplained:
            problems.append(f"{_plural(len(unexplained), 'text')} changed although no new "
                            f"token is used in {_v(len(unexplained), 'it', 'them')}: "
                            + _examples(unexplained)
                            + ". New merges or pieces must not change the encoding of text "
                              "they do not apply to")
        if changed:
            detail = (f"{changed:,} of {_plural(n_user, 'text')} changed, each through a new "
                      f"or removed token")
        else:
            detail = "ids unchanged on every text"
        self.record("unchanged ids", problems, detail,
                    f"{len(unexplained):,} texts changed without a new token")
        return _TextResult(changed, differences, old_ids[:n_user], new_ids[:n_user], len(lost))

    def _difference(self, k: int, o: list[int], e: list[int], n: list[int],
                    n_user: int) -> FirstDifference:
        """Text ``k``'s first difference: old ids ``o`` (``e`` as the new tokenizer
        should number them) against new ids ``n``."""
        pos = next((p for p, (a, b) in enumerate(zip(e, n, strict=False)) if a != b),
                   min(len(e), len(n)))
        start = max(0, pos - _WINDOW_BEFORE)
        ow, nw = o[start: pos + _WINDOW_AFTER], n[start: pos + _WINDOW_AFTER]
        return FirstDifference(
            text_index=k if k < n_user else k - n_user, position=pos, start=start,
            old_ids=ow, new_ids=nw,
            old_tokens=[_show(self.ov.raw[i] if i < self.ov.size else None) for i in ow],
            new_tokens=[_show(self.nv.raw[i] if i < self.nv.size else None) for i in nw],
            adversarial=k >= n_user)

    # -------------------------------------------------------------- 5. size
    def size(self, max_vocab: int | None) -> None:
        n = self.nv.size
        if max_vocab is None:
            self.checks.append(CheckResult("vocabulary size", True,
                                           f"{n:,} ids (no max_vocab given)"))
            return
        problems = []
        if n > max_vocab:
            problems.append(f"the new tokenizer has {n:,} ids, more than max_vocab={max_vocab:,} "
                            f"(the model's embedding rows). Add fewer tokens, or prune or "
                            f"resize to at most {max_vocab:,}")
        self.record("vocabulary size", problems, f"{n:,} ids, at most {max_vocab:,}",
                    f"{n:,} ids, more than {max_vocab:,}")


def _mismatch(expected: str, got: str) -> str:
    """Where two texts first differ, with a little context: ``at character 12: …``."""
    k = next((p for p, (a, b) in enumerate(zip(expected, got, strict=False)) if a != b),
             min(len(expected), len(got)))
    start = max(0, k - 12)
    lead = "…" if start else ""

    def part(t: str) -> str:
        return lead + t[start: k + 12] + ("…" if len(t) > k + 12 else "")

    return f"at character {k}: {part(expected)!r} decodes to {part(got)!r}"


def _wordpiece_anchors(tok: Tokenizer, items: Sequence[tuple[int, str]],
                       prefix: str) -> list[str]:
    """Letters that are a whole word-initial piece and begin no longer one, so that
    ``anchor + rest`` encodes as the anchor followed by the continuation of ``rest``."""
    starts: dict[str, int] = {}
    singles: dict[str, int] = {}
    for i, s in items:
        if prefix and s.startswith(prefix):
            continue
        if len(s) == 1:
            singles[s] = i
        elif s:
            starts[s[0]] = starts.get(s[0], 0) + 1
    ranked = sorted((starts.get(c, 0), i, c) for c, i in singles.items()
                    if c.isalpha() and not _wide(c))
    return _verified(tok, [(c, i) for _, i, c in ranked[:20]])


def _unigram_anchors(tok: Tokenizer, items: Sequence[tuple[int, str]]) -> list[str]:
    """Letters ``c`` whose ``▁c`` is a piece and that begin the fewest other pieces."""
    begins: dict[str, int] = {}
    marked: dict[str, int] = {}
    for i, s in items:
        core = s[1:] if s.startswith(_SPACE) else s
        if not core:
            continue
        begins[core[0]] = begins.get(core[0], 0) + 1
        if s.startswith(_SPACE) and len(core) == 1:
            marked[core] = i
    ranked = sorted((begins.get(c, 0), i, c) for c, i in marked.items()
                    if c.isalpha() and not _wide(c))
    return _verified(tok, [(c, i) for _, i, c in ranked[:20]])


def _verified(tok: Tokenizer, candidates: Sequence[tuple[str, int]]) -> list[str]:
    """Up to three candidates that encode to their own piece alone."""
    if not candidates:
        return []
    encoded = tok.encode_batch([c for c, _ in candidates], disallowed_special=(),
                               add_special_tokens=False)
    return [c for (c, i), ids in zip(candidates, encoded, strict=True) if ids == [i]][:3]


def _wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in "WF"


def check_compatible(
    old: Tokenizer | str | os.PathLike[str],
    new: Tokenizer | str | os.PathLike[str],
    texts: Iterable[str] | None = None,
    *,
    max_vocab: int | None = None,
    allow_gaps: bool = False,
    parallel: Mapping[str, Sequence[str]] | None = None,
    adversarial: bool = True,
    removed_ok: bool = False,
    id_map: IdMapLike | Sequence[int] | None = None,
) -> CompatibilityReport:
    """Check that ``new`` keeps every promise ``old`` made; see the module's text for
    each invariant.

    ``texts`` are the texts to encode with both (your corpus: the share whose ids
    change and bytes per token are measured on them); ``adversarial=True`` adds
    the built-in suite of :func:`adversarial_texts` to the round-trip and
    unchanged-id checks. ``max_vocab`` is the model's number of embedding rows.
    ``allow_gaps`` accepts ids without a token. ``parallel`` maps a language to
    line-aligned texts for per-language token counts.

    After a prune, pass its ``id_map`` (:class:`tokensmith.surgery.prune.IdMap`,
    or a list: the new id of each old id, ``-1`` where removed): every old id is
    then expected at its new id, removed ids are counted, not failed, and old
    encodings are compared with new ones through the map. Without the map,
    ``removed_ok=True`` accepts old ids that have no token any more or that
    became a special token (the ``<|unused_N|>`` tokens of a prune with
    ``keep_ids=True``).

    Nothing is raised for a broken invariant: look at ``report.ok``, or call
    ``report.raise_for_failures()``.
    """
    old_tok, new_tok = _tokenizer(old, "old"), _tokenizer(new, "new")
    if max_vocab is not None and (isinstance(max_vocab, bool) or not isinstance(max_vocab, int)
                                  or max_vocab <= 0):
        raise ConfigError(f"max_vocab must be a positive number of ids, not {max_vocab!r}")
    user = _texts(texts)
    extra = adversarial_texts() if adversarial else []

    c = _Checker(old_tok, new_tok, _id_list(id_map, old_tok, new_tok), removed_ok)
    c.old_ids()
    c.special_tokens()
    c.duplicates()
    c.gaps(allow_gaps)
    c.reachability()
    found = c.texts(user, extra)
    c.size(max_vocab)

    before = after = None
    tokens_before = tokens_after = 0
    if user:
        cb = _compression(_Encoded(user, found.old_ids, []))
        ca = _compression(_Encoded(user, found.new_ids, []))
        before, after = cb.bytes_per_token, ca.bytes_per_token
        tokens_before, tokens_after = cb.tokens, ca.tokens

    changes, pivot = _parity(old_tok, new_tok, parallel, c.warnings)
    n_user = len(user)
    return CompatibilityReport(
        ok=not c.failures,
        failures=c.failures,
        warnings=list(dict.fromkeys(c.warnings)),
        checks=c.checks,
        old_vocab_size=old_tok.vocab_size,
        new_vocab_size=new_tok.vocab_size,
        texts_checked=n_user,
        texts_changed=found.changed,
        changed_share=found.changed / n_user if n_user else 0.0,
        first_differences=found.differences,
        bytes_per_token_before=before if before is not None and math.isfinite(before) else None,
        bytes_per_token_after=after if after is not None and math.isfinite(after) else None,
        parity=changes,
        pivot=pivot,
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        adversarial_checked=len(extra),
        removed_ids=c.removed_count,
        max_vocab=max_vocab,
        round_trip_failures=found.round_trip,
    )


def _id_list(id_map: IdMapLike | Sequence[int] | None, old: Tokenizer,
             new: Tokenizer) -> list[int] | None:
    if id_map is None:
        return None
    # (a list, or a numpy array: checked below, an int at a time)
    table: Any = getattr(id_map, "old_to_new", id_map)
    values = table.tolist() if hasattr(table, "tolist") else table
    try:
        ids = [int(x) for x in values]
    except (TypeError, ValueError):
        raise ConfigError("id_map must be an IdMap or a list of ints: the new id of each old "
                          "id, -1 where it was removed") from None
    if len(ids) != old.vocab_size:
        raise ConfigError(f"id_map maps {len(ids):,} old ids but the old tokenizer has "
                          f"{old.vocab_size:,}: pass the map of the change from this tokenizer")
    size = new.vocab_size
    bad = next((i for i in ids if i < -1 or i >= size), None)
    if bad is not None:
        raise ConfigError(f"id_map sends an old id to {bad}, which is not an id of the new "
                          f"tokenizer (0..{size - 1}) nor -1 (removed)")
    return ids


def _parity(old: Tokenizer, new: Tokenizer, parallel: Mapping[str, Sequence[str]] | None,
            warnings: list[str]) -> tuple[list[ParityChange] | None, str | None]:
    if not parallel:
        return None, None
    pivot = "en" if "en" in parallel else next(iter(parallel))
    pb = parity(old, parallel, pivot=pivot)
    pa = parity(new, parallel, pivot=pivot)
    warnings.extend(f"parity: {w}" for w in pb.warnings + pa.warnings)
    after = {lp.language: lp for lp in pa.languages}
    return [ParityChange(lp.language, lp.tokens, after[lp.language].tokens, lp.premium,
                         after[lp.language].premium) for lp in pb.languages], pivot
