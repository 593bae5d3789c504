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
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
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
