"""Named pre-tokenizer patterns.

The patterns are written in the form that the ``tokenizers`` library
(Oniguruma) and tokensmith read identically: ``\\p{N}{1,3}`` without the
possessive ``+`` that tiktoken's newer sources use (the alternation is
complete, so the meaning is the same).
"""

from __future__ import annotations

GPT2 = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

CL100K = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"""
    r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

O200K = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

NAMED: dict[str, str] = {
    "gpt2": GPT2,
    "r50k": GPT2,
    "gpt4": CL100K,
    "cl100k": CL100K,
    "llama3": CL100K,
    "o200k": O200K,
    "gpt4o": O200K,
}


def resolve(pattern: str) -> str:
    """A pattern name (``"gpt4"``, ``"gpt2"``, ``"o200k"`` …) or a regex, as a regex."""
    return NAMED.get(pattern.lower(), pattern) if pattern else pattern
