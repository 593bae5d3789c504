"""Adversarial strings for differential tests, generated (nothing copied)."""

from __future__ import annotations

import unicodedata


def _category_samples(limit_per_category: int = 6) -> str:
    """A few code points of every Unicode general category, each between letters/digits/spaces."""
    seen: dict[str, list[str]] = {}
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        cat = unicodedata.category(ch)
        bucket = seen.setdefault(cat, [])
        if len(bucket) < limit_per_category and (cp % 97 == 0 or cp < 0x3000 or not bucket):
            bucket.append(ch)
    out = []
    for cat in sorted(seen):
        for ch in seen[cat]:
            out.append(f"a{ch}b {ch}1 {ch} x{ch}{ch}  {ch}\n")
    return "".join(out)


WHITESPACE = "".join(
    chr(c) for c in range(0x3001) if chr(c).isspace() or unicodedata.category(chr(c)) == "Zs"
)


def strings() -> list[str]:
    """The suite: short strings that stress pre-tokenizers, merges and offsets."""
    base = [
        "",
        " ",
        "Hello, world!",
        "  leading and trailing  ",
        "it's they'll WE'RE I'M you'D She'S 'll 's",
        "\t-ilrsD \t%s \t\t-x",
        "def f():\n    return 1\n        \n\n\tpass",
        "line\r\nnext\r\n\r\n  end",
        "1234567 12 1 123456789012 ١٢٣٤٥ ０１２３ ๑๒๓",
        "e\u0301 a\u0308\u0301 \u0915\u094d\u0937 \u0e01\u0e34\u0e4a",
        "👨‍👩‍👧‍👦 👍🏽👍🏿 🏳️‍🌈 😀😀😀",
        "中文分词，日本語の文章、한국어 문장。",
        "مرحبا بالعالم שלום עולם",
        "नमस्ते दुनिया ภาษาไทย",
        "<|endoftext|> <|endoftext|><|endoftext|> <|endoftext",
        "\x00\x01\x1f\x7f\x85\u200b\u200d\ufeff\ufffd",
        WHITESPACE,
        "a" * 5000,
        " " * 3000 + "x",
        "\n" * 2000,
        "中" * 3000,
        "ab" * 2000,
        "Straße İstanbul ǅ ﬁ ℌ Ⅻ ½",
    ]
    return base + [_category_samples()]


def every_code_point(chunk: int = 2048) -> list[str]:
    """Every Unicode scalar value, each next to a letter, a digit and spaces, in chunks.

    Within a chunk the code points follow each other in order, separated by
    a rotating context (``a``, ``1``, `` ``, ``  ``, ``\\n``) so that every one
    of them is tried after and before letters, digits and whitespace.
    """
    contexts = ["a", "1", " ", "  ", "\n", "'s ", "Z"]
    out: list[str] = []
    parts: list[str] = []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        parts.append(chr(cp))
        parts.append(contexts[cp % len(contexts)])
        if len(parts) >= 2 * chunk:
            out.append("".join(parts))
            parts = []
    if parts:
        out.append("".join(parts))
    return out
