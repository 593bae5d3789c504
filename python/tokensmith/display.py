"""Token boundaries made visible: ``[The][␣quick][␣brown]`` or coloured backgrounds.

>>> import tokensmith as ts
>>> from tokensmith.display import show
>>> tok = ts.train(texts=["hello world"] * 20, vocab_size=300, special_tokens=())
>>> print(show(tok, "hello world", color=False))
[hello][␣world]

Whitespace is drawn (``␣`` space, ``→`` tab, ``↵`` newline, which also
breaks the line), other invisible characters become ``\\u200b``-style
escapes, and a token that holds only part of a character's UTF-8 bytes is
drawn as ``<0xE5><0x88>``. Text that the pre-tokenizer drops (the spaces
between words of a character-level tokenizer) is drawn between tokens,
outside any bracket.

The same view as HTML: :func:`to_html` gives a fragment (a ``<div>`` with
its own ``<style>``), :func:`to_html_page` a whole page; every text is
escaped, so ``<script>`` in the text is shown, never run. :func:`analyze`
gives the data behind both (and behind ``tokensmith serve``): each token's
id, bytes, character offsets, and the characters whose UTF-8 bytes were split
between tokens.
"""

from __future__ import annotations

import html
import json
import os
import re
import weakref
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TextIO

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

__all__ = [
    "Piece",
    "pieces",
    "render",
    "show",
    "escape",
    "use_color",
    "pick_escapes",
    "summary",
    "TokenView",
    "SplitChar",
    "Analysis",
    "analyze",
    "to_html",
    "to_html_page",
    "model_kind",
    "HTML_CSS",
]

Escapes = Literal["symbols", "backslash"]

# Soft backgrounds with a black foreground: readable on dark and light terminals.
_PALETTE = (
    "\x1b[38;5;16;48;5;153m",  # light blue
    "\x1b[38;5;16;48;5;223m",  # peach
    "\x1b[38;5;16;48;5;151m",  # green
    "\x1b[38;5;16;48;5;225m",  # pink
    "\x1b[38;5;16;48;5;229m",  # yellow
)
_SPECIAL = "\x1b[1;38;5;231;48;5;97m"  # bold white on purple
_GAP = "\x1b[2m"  # dim, no background
_ID = "\x1b[38;5;240m"  # grey, on the token's background
_RESET = "\x1b[0m"

_SYMBOLS = {" ": "␣", "\t": "→", "\n": "↵", "\r": "␍"}
_BACKSLASH = {" ": " ", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


@dataclass(frozen=True)
class Piece:
    """One thing to draw: a token (``id`` set) or text between tokens (``id`` None).

    ``data`` is the token's bytes for a byte-level tokenizer, otherwise its
    string; ``special`` marks special and added tokens.
    """

    data: bytes | str
    id: int | None = None
    special: bool = False


def escape(data: bytes | str, escapes: Escapes = "symbols") -> list[tuple[str, bool]]:
    """Visible text of ``data`` as ``(text, line_break_after)`` units.

    Bytes that are not a whole UTF-8 character become ``<0xE4>``.
    """
    table = _SYMBOLS if escapes == "symbols" else _BACKSLASH
    text = data.decode("utf-8", "surrogateescape") if isinstance(data, bytes) else data
    out: list[tuple[str, bool]] = []
    for ch in text:
        cp = ord(ch)
        if ch in table:
            out.append((table[ch], ch == "\n"))
        elif 0xDC80 <= cp <= 0xDCFF and isinstance(data, bytes):
            out.append((f"<0x{cp - 0xDC00:02X}>", False))
        elif ch.isprintable():
            out.append((ch, False))
        elif cp <= 0xFF:
            out.append((f"\\x{cp:02x}", False))
        elif cp <= 0xFFFF:
            out.append((f"\\u{cp:04x}", False))
        else:
            out.append((f"\\U{cp:08x}", False))
    return out


def pieces(
    tok: Tokenizer,
    text: str,
    *,
    allowed_special: Literal["all"] | Collection[str] = frozenset(),
    disallowed_special: Literal["all"] | Collection[str] = "all",
    add_special_tokens: bool = True,
) -> list[Piece]:
    """Encode ``text`` and cut it into the pieces to draw."""
    enc = tok.encode_full(
        text,
        allowed_special=allowed_special,
        disallowed_special=disallowed_special,
        add_special_tokens=add_special_tokens,
    )
    return pieces_from_ids(tok, enc.ids, text=text, offsets=enc.offsets)


def pieces_from_ids(
    tok: Tokenizer,
    ids: Sequence[int],
    *,
    text: str | None = None,
    offsets: Sequence[tuple[int, int]] | None = None,
) -> list[Piece]:
    """Pieces for ``ids``; with the encoded ``text`` and its ``offsets``, a tokenizer
    that is not byte-level also shows the text its pre-tokenizer dropped."""
    specials = set(tok.special_tokens.values())
    byte_level = tok.is_byte_level
    out: list[Piece] = []
    pos = 0
    for k, i in enumerate(ids):
        special = i in specials
        if byte_level and not special:
            data: bytes | str = tok.id_to_bytes(i) or b""
        else:
            data = tok.id_to_token(i) or ""
        if not byte_level and text is not None and offsets is not None:
            start, end = offsets[k]
            if end > start:  # (0, 0) marks a token added by the post-processor
                if start > pos:
                    out.append(Piece(text[pos:start]))
                pos = max(pos, end)
        out.append(Piece(data, i, special))
    if not byte_level and text is not None and offsets is not None and pos < len(text):
        out.append(Piece(text[pos:]))
    return out


def render(
    items: Iterable[Piece],
    *,
    color: bool = False,
    show_ids: bool = False,
    escapes: Escapes = "symbols",
) -> str:
    """Draw pieces: alternating backgrounds (``color``) or ``[tok][tok]`` brackets.

    ``show_ids`` writes each token's id after it: ``[hello|15339]``.
    """
    parts: list[str] = []
    n = 0
    for p in items:
        units = escape(p.data, escapes)
        if p.id is None:  # text between tokens
            style, open_, close = _GAP, "", ""
        else:
            style = _SPECIAL if p.special else _PALETTE[n % len(_PALETTE)]
            open_, close = "[", "]"
            n += 1
        suffix = f"|{p.id}" if show_ids and p.id is not None else ""
        # line breaks at the very end of a piece go after it (and after its id);
        # those inside it stay inside, so indentation keeps its shape
        tail = 0
        while tail < len(units) and units[len(units) - 1 - tail][1]:
            tail += 1
        body = [(txt, brk and k < len(units) - tail) for k, (txt, brk) in enumerate(units)]
        if color:
            parts.append(style)
            for txt, brk in body:
                parts.append(txt)
                if brk:
                    parts.append(_RESET + "\n" + style)
            if suffix:
                parts.append(_ID + suffix)
            parts.append(_RESET)
        else:
            parts.append(open_)
            parts.extend(txt + ("\n" if brk else "") for txt, brk in body)
            parts.append(suffix + close)
        parts.append("\n" * tail)
    out = "".join(parts)
    if color:  # an empty style run left by a line break at the end of a token
        for style in (*_PALETTE, _SPECIAL, _GAP):
            out = out.replace(style + _RESET, "")
    return out


def show(
    tok: Tokenizer,
    text: str,
    *,
    color: bool = False,
    show_ids: bool = False,
    escapes: Escapes = "symbols",
    allowed_special: Literal["all"] | Collection[str] = frozenset(),
    disallowed_special: Literal["all"] | Collection[str] = "all",
) -> str:
    """``text`` as ``tok`` cuts it, ready to print."""
    return render(
        pieces(tok, text, allowed_special=allowed_special, disallowed_special=disallowed_special),
        color=color,
        show_ids=show_ids,
        escapes=escapes,
    )


def summary(text: str, n_tokens: int) -> str:
    """``12 tokens, 45 bytes, 3.75 bytes/token``."""
    n_bytes = len(text.encode("utf-8", "surrogatepass"))
    per = f"{n_bytes / n_tokens:.2f}" if n_tokens else "-"
    return (f"{n_tokens:,} token{'s' if n_tokens != 1 else ''}, {n_bytes:,} bytes, "
            f"{per} bytes/token")


def use_color(stream: TextIO, when: Literal["auto", "always", "never"] = "auto") -> bool:
    """Whether to colour ``stream``: ``auto`` means a terminal, unless ``NO_COLOR`` is
    set or ``TERM=dumb``; ``FORCE_COLOR`` turns it on."""
    if when != "auto":
        return when == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def pick_escapes(stream: TextIO) -> Escapes:
    """``symbols`` (␣ → ↵) when ``stream`` can print them, else ``backslash``."""
    enc = getattr(stream, "encoding", None) or "ascii"
    try:
        "".join(_SYMBOLS.values()).encode(enc)
    except (UnicodeEncodeError, LookupError):
        return "backslash"
    return "symbols"


# ------------------------------------------------------------------ HTML


@dataclass(frozen=True)
class TokenView:
    """One token as the HTML view and the playground draw it.

    ``text`` is the visible form (whitespace drawn as in the terminal view,
    ``"\\n"`` after each ``↵`` inside the token); ``breaks`` is the number of
    line breaks that end the token, drawn after it. ``data`` is the token's
    bytes: the vocabulary bytes of a byte-level token, the byte of a
    byte-fallback token (``<0xE4>``), otherwise the UTF-8 of its string.
    ``start``/``end`` are character offsets into the text (``(0, 0)`` for
    tokens the post-processor added); ``source`` is that slice of the text.
    ``partial``: the bytes are only part of a character's UTF-8.
    ``unknown``: the tokenizer's unknown token (the text could not be
    represented). ``gap`` is visible text before this token that the
    pre-tokenizer dropped (the spaces of a WordPiece tokenizer).
    """

    id: int
    text: str
    breaks: int
    data: bytes
    start: int
    end: int
    source: str
    special: bool = False
    partial: bool = False
    unknown: bool = False
    gap: str = ""

    @property
    def hex(self) -> str:
        """The bytes as ``e4 b8 ad``."""
        return self.data.hex(" ")


@dataclass(frozen=True)
class SplitChar:
    """A character whose UTF-8 bytes were cut between tokens.

    ``pieces`` are ``(token index, token id, bytes)`` in order; joined, the
    bytes are the character's UTF-8.
    """

    char: str
    pieces: tuple[tuple[int, int, bytes], ...]

    @property
    def codepoint(self) -> str:
        return f"U+{ord(self.char):04X}"


@dataclass(frozen=True)
class Analysis:
    """What :func:`analyze` found: ``count`` tokens, of which ``tokens`` holds the
    first ``limit``; the characters that were split or could not be represented."""

    text: str
    count: int
    tokens: list[TokenView]
    splits: list[SplitChar]
    unknown_chars: list[str]
    gap_after: str = ""
    kind: str = ""
    n_bytes: int = field(default=0)

    @property
    def truncated(self) -> bool:
        return len(self.tokens) < self.count


@dataclass(frozen=True)
class _Facts:
    kind: str
    unk_id: int | None
    byte_fallback: bool


_FACTS: weakref.WeakKeyDictionary[Tokenizer, _Facts] = weakref.WeakKeyDictionary()
_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def _facts(tok: Tokenizer) -> _Facts:
    """Model type, unknown token and byte fallback, read once per tokenizer."""
    try:
        return _FACTS[tok]
    except (KeyError, TypeError):
        pass
    try:
        model = json.loads(tok.to_str(pretty=False)).get("model") or {}
    except (ValueError, AttributeError):
        model = {}
    kind = str(model.get("type") or "?")
    if kind == "BPE":
        if tok.is_byte_level:
            kind = "byte-level BPE"
        elif model.get("byte_fallback"):
            kind = "BPE with byte fallback"
        else:
            kind = "character-level BPE"
    unk = model.get("unk_token")
    unk_id: int | None = None
    if isinstance(unk, str):
        unk_id = tok.token_to_id(unk)
    elif isinstance(unk, int) and not isinstance(unk, bool):  # Unigram: "unk_id"
        unk_id = unk
    if unk_id is None and isinstance(model.get("unk_id"), int):
        unk_id = model["unk_id"]
    facts = _Facts(kind, unk_id, bool(model.get("byte_fallback")))
    try:
        _FACTS[tok] = facts
    except TypeError:
        pass
    return facts


def model_kind(tok: Tokenizer) -> str:
    """``byte-level BPE``, ``WordPiece``, ``Unigram`` …"""
    return _facts(tok).kind


def _visible(data: bytes | str) -> tuple[str, int]:
    """Visible text with ``"\\n"`` after inner line breaks, and the trailing break count."""
    units = escape(data)
    tail = 0
    while tail < len(units) and units[len(units) - 1 - tail][1]:
        tail += 1
    body = "".join(
        txt + ("\n" if brk and k < len(units) - tail else "")
        for k, (txt, brk) in enumerate(units)
    )
    return body, tail


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _utf8_len(lead: int) -> int:
    if lead < 0x80:
        return 1
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF4:
        return 4
    return 0  # a continuation byte or a byte UTF-8 never uses


def _splits(tokens: Sequence[TokenView], raw: Sequence[bool]) -> list[SplitChar]:
    """Characters whose bytes span more than one token (``raw[k]``: token k's
    bytes are text bytes, as in byte-level and byte-fallback tokens)."""
    out: list[SplitChar] = []
    need = 0
    parts: list[tuple[int, int, bytearray]] = []  # (token index, token id, its bytes)
    for k, t in enumerate(tokens):
        if not raw[k]:
            need, parts = 0, []
            continue
        for b in t.data:
            if need and 0x80 <= b <= 0xBF:
                if parts[-1][0] == k:
                    parts[-1][2].append(b)
                else:
                    parts.append((k, t.id, bytearray([b])))
                need -= 1
            else:
                n = _utf8_len(b)
                need, parts = (n - 1, [(k, t.id, bytearray([b]))]) if n > 1 else (0, [])
                continue
            if need == 0:
                if len(parts) > 1:
                    data = b"".join(p[2] for p in parts)
                    try:
                        ch = data.decode("utf-8")
                    except UnicodeDecodeError:
                        ch = ""
                    if len(ch) == 1:
                        out.append(SplitChar(ch, tuple(
                            (p[0], p[1], bytes(p[2]))
                            for p in parts
                        )))
                parts = []
    return out


def analyze(
    tok: Tokenizer,
    text: str,
    *,
    allowed_special: Literal["all"] | Collection[str] = frozenset(),
    disallowed_special: Literal["all"] | Collection[str] = "all",
    add_special_tokens: bool = True,
    limit: int | None = None,
) -> Analysis:
    """Encode ``text`` and describe every token (the first ``limit`` of them).

    Lone surrogates (which UTF-8 cannot hold) become U+FFFD first, as
    :meth:`Tokenizer.encode` does.
    """
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    enc = tok.encode_full(
        text,
        allowed_special=allowed_special,
        disallowed_special=disallowed_special,
        add_special_tokens=add_special_tokens,
    )
    facts = _facts(tok)
    specials = set(tok.special_tokens.values())
    byte_level = tok.is_byte_level
    shown = len(enc.ids) if limit is None else max(0, min(limit, len(enc.ids)))
    tokens: list[TokenView] = []
    raw: list[bool] = []
    unknown: dict[str, None] = {}
    pos = 0
    for k in range(shown):
        i = enc.ids[k]
        start, end = enc.offsets[k]
        special = i in specials
        is_unk = facts.unk_id is not None and i == facts.unk_id
        gap = ""
        if not byte_level and end > start:
            if start > pos:
                gap = _visible(text[pos:start])[0]
            pos = max(pos, end)
        token_bytes = tok.id_to_bytes(i) or b""
        token_str = tok.id_to_token(i) or ""
        is_raw = False
        if byte_level and not special:
            data: bytes = token_bytes
            shown_as: bytes | str = data
            is_raw = True
        else:
            m = _BYTE_TOKEN.fullmatch(token_str) if facts.byte_fallback else None
            if m is not None and not special:
                data = bytes([int(m.group(1), 16)])
                is_raw = True
            else:
                data = token_str.encode("utf-8", "surrogatepass")
            shown_as = token_str
        visible, breaks = _visible(shown_as)
        partial = is_raw and not _is_utf8(data)
        source = text[start:end]
        if is_unk and source:
            unknown.setdefault(source, None)
        tokens.append(TokenView(i, visible, breaks, data, start, end, source,
                                special and not is_unk, partial, is_unk, gap))
        raw.append(is_raw)
    gap_after = ""
    if not byte_level and shown == len(enc.ids) and pos < len(text):
        gap_after = _visible(text[pos:])[0]
    return Analysis(
        text=text,
        count=len(enc.ids),
        tokens=tokens,
        splits=_splits(tokens, raw),
        unknown_chars=list(unknown),
        gap_after=gap_after,
        kind=facts.kind,
        n_bytes=len(text.encode("utf-8")),
    )


HTML_CSS = """\
.tokensmith-view{font:14px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d1d1f}
.ts-tokens{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,"DejaVu Sans Mono",monospace;
  white-space:pre-wrap;word-break:break-all;line-height:1.9;margin:.4em 0}
.ts-tok{border-radius:3px;padding:1px 1px;margin-right:1px;color:#111}
.ts-c0{background:#cfe3ff}.ts-c1{background:#ffdcb8}.ts-c2{background:#c9ecc9}
.ts-c3{background:#ffd6ef}.ts-c4{background:#fff3a8}
.ts-tok.ts-special{background:#6f4fa3;color:#fff;font-weight:600}
.ts-tok.ts-partial{outline:1px dashed #a0005f;outline-offset:-1px}
.ts-tok.ts-unk{background:#ffb0b0;outline:2px solid #c00;outline-offset:-2px}
.ts-gap{color:#888}
.ts-id{display:none;font-size:.7em;color:#555;margin-left:1px;vertical-align:sub}
.ts-show-ids .ts-id{display:inline}
.ts-special .ts-id{color:#ddd}
.ts-summary{color:#444;margin:.2em 0}
.ts-note{color:#8a1c1c;margin:.3em 0}
.ts-splits{margin:.3em 0;padding-left:1.2em;font-size:.92em}
.ts-splits code{background:#f1f1f4;border-radius:3px;padding:0 3px}
.ts-char{font-size:1.15em;margin-right:.3em}
"""


def _e(s: object) -> str:
    return html.escape(str(s), quote=True)


def _token_title(t: TokenView) -> str:
    parts = [f"id {t.id}"]
    if t.data:
        parts.append(f"bytes {t.hex}")
    if t.end > t.start:
        parts.append(f"chars {t.start}\u2013{t.end}")
    if t.special:
        parts.append("special token")
    if t.partial:
        parts.append("part of a character")
    if t.unknown:
        parts.append(f"unknown: cannot represent {t.source!r}")
    return " \u00b7 ".join(parts)


def _analysis_html(a: Analysis, *, ids: bool, splits: bool, summary_line: bool) -> str:
    out: list[str] = []
    if summary_line:
        line = summary(a.text, a.count)
        if a.truncated:
            line += f" (showing the first {len(a.tokens):,})"
        out.append(f'<p class="ts-summary">{_e(line)}</p>')
    if a.unknown_chars:
        chars = " ".join(repr(c) for c in a.unknown_chars)
        out.append(f'<p class="ts-note">the tokenizer cannot represent: {_e(chars)}</p>')
    body: list[str] = []
    n = 0
    for t in a.tokens:
        if t.gap:
            body.append(f'<span class="ts-gap">{_e(t.gap)}</span>')
        cls = ["ts-tok"]
        if t.unknown:
            cls.append("ts-unk")
        elif t.special:
            cls.append("ts-special")
        else:
            cls.append(f"ts-c{n % 5}")
            n += 1
        if t.partial:
            cls.append("ts-partial")
        body.append(
            f'<span class="{" ".join(cls)}" data-id="{t.id}" data-bytes="{_e(t.data.hex())}" '
            f'title="{_e(_token_title(t))}">{_e(t.text)}'
            + (f'<sub class="ts-id">{t.id}</sub>' if ids else "")
            + "</span>" + "\n" * t.breaks
        )
    if a.gap_after:
        body.append(f'<span class="ts-gap">{_e(a.gap_after)}</span>')
    out.append(f'<div class="ts-tokens">{"".join(body)}</div>')
    if splits and a.splits:
        items = []
        seen: set[tuple[str, tuple[int, ...]]] = set()
        for s in a.splits:
            key = (s.char, tuple(i for _, i, _ in s.pieces))
            if key in seen:  # each character once, if it is cut the same way again
                continue
            seen.add(key)
            pieces_html = " + ".join(
                f"<code>{_e(b.hex(' '))}</code> (id {i})" for _, i, b in s.pieces
            )
            items.append(f'<li><span class="ts-char">{_e(s.char)}</span>{_e(s.codepoint)} = '
                         f"{pieces_html}</li>")
        out.append('<p class="ts-summary">characters split between tokens:</p>')
        out.append(f'<ul class="ts-splits">{"".join(items)}</ul>')
    return "\n".join(out)


def to_html(
    tok: Tokenizer,
    text: str,
    ids: bool = False,
    *,
    style: bool = True,
    splits: bool = True,
    summary_line: bool = True,
    allowed_special: Literal["all"] | Collection[str] = frozenset(),
    disallowed_special: Literal["all"] | Collection[str] = "all",
    limit: int | None = None,
) -> str:
    """``text`` as ``tok`` cuts it, as an HTML fragment (a ``<div>``).

    Tokens are ``<span class="ts-tok" data-id=… data-bytes=…>`` with
    alternating backgrounds and a tooltip (id, bytes, character offsets);
    ``ids`` writes each id after its token. ``style`` puts :data:`HTML_CSS`
    in the fragment (leave it out to include the CSS once yourself);
    ``splits`` lists the characters whose bytes were cut between tokens.
    """
    a = analyze(tok, text, allowed_special=allowed_special,
                disallowed_special=disallowed_special, limit=limit)
    cls = "tokensmith-view ts-show-ids" if ids else "tokensmith-view"
    css = f"<style>{HTML_CSS}</style>\n" if style else ""
    inner = _analysis_html(a, ids=ids, splits=splits, summary_line=summary_line)
    return f'<div class="{cls}">\n{css}{inner}\n</div>'


def to_html_page(
    tok: Tokenizer,
    text: str,
    ids: bool = False,
    *,
    title: str = "tokensmith",
    allowed_special: Literal["all"] | Collection[str] = frozenset(),
    disallowed_special: Literal["all"] | Collection[str] = "all",
    limit: int | None = None,
) -> str:
    """A whole HTML page holding :func:`to_html`'s view; no scripts, nothing fetched."""
    fragment = to_html(tok, text, ids, style=False, allowed_special=allowed_special,
                       disallowed_special=disallowed_special, limit=limit)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" "
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{_e(title)}</title>\n<style>\nbody{{margin:1.5em;max-width:70em}}\n"
        f"h1{{font:600 1.2em system-ui,sans-serif}}\n{HTML_CSS}</style>\n</head>\n<body>\n"
        f"<h1>{_e(title)}</h1>\n<p class=\"ts-summary\">{_e(model_kind(tok))}, "
        f"vocabulary {tok.vocab_size:,}</p>\n{fragment}\n</body>\n</html>\n"
    )
