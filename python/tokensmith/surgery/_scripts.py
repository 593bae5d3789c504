"""Named scripts as Unicode code point ranges, for ``extend(scripts=...)``.

The ranges are the Unicode blocks of each script (with the punctuation and
full-width forms that text in it uses); a character counts when it lies in
one of them.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import ConfigError

__all__ = ["SCRIPTS", "ranges"]

SCRIPTS: dict[str, tuple[tuple[int, int], ...]] = {
    "Han": ((0x2E80, 0x2FDF), (0x3000, 0x303F), (0x3190, 0x319F), (0x31C0, 0x31EF),
            (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0xFE30, 0xFE4F),
            (0xFF00, 0xFFEF), (0x20000, 0x323AF)),
    "Hiragana": ((0x3040, 0x309F), (0x3000, 0x303F)),
    "Katakana": ((0x30A0, 0x30FF), (0x31F0, 0x31FF), (0xFF65, 0xFF9F), (0x3000, 0x303F)),
    "Hangul": ((0x1100, 0x11FF), (0x3130, 0x318F), (0xA960, 0xA97F), (0xAC00, 0xD7FF)),
    "Cyrillic": ((0x0400, 0x052F), (0x1C80, 0x1C8F), (0x2DE0, 0x2DFF), (0xA640, 0xA69F)),
    "Greek": ((0x0370, 0x03FF), (0x1F00, 0x1FFF)),
    "Arabic": ((0x0600, 0x06FF), (0x0750, 0x077F), (0x08A0, 0x08FF), (0xFB50, 0xFDFF),
               (0xFE70, 0xFEFF)),
    "Hebrew": ((0x0590, 0x05FF), (0xFB1D, 0xFB4F)),
    "Devanagari": ((0x0900, 0x097F), (0xA8E0, 0xA8FF)),
    "Thai": ((0x0E00, 0x0E7F),),
    "Latin": ((0x0041, 0x005A), (0x0061, 0x007A), (0x00C0, 0x024F), (0x1E00, 0x1EFF)),
}


def ranges(scripts: Iterable[str | tuple[int, int]] | None) -> list[tuple[int, int]]:
    """The code point ranges of ``scripts`` (names from :data:`SCRIPTS`, or
    ``(first, last)`` code points)."""
    if scripts is None:
        return []
    if isinstance(scripts, str):
        scripts = [scripts]
    out: list[tuple[int, int]] = []
    for s in scripts:
        if isinstance(s, str):
            key = next((k for k in SCRIPTS if k.lower() == s.lower()), None)
            if key is None:
                raise ConfigError(f"unknown script {s!r}: use one of {', '.join(SCRIPTS)}, or "
                                  f"(first, last) code points")
            out.extend(SCRIPTS[key])
        elif (isinstance(s, tuple) and len(s) == 2 and all(isinstance(x, int) for x in s)
              and 0 <= s[0] <= s[1] <= 0x10FFFF):
            out.append((s[0], s[1]))
        else:
            raise ConfigError(f"scripts: {s!r} is neither a script name nor a (first, last) "
                              f"code point range")
    return out


def has_char_in(text: str, spans: list[tuple[int, int]]) -> bool:
    return any(lo <= ord(c) <= hi for c in text for lo, hi in spans)
