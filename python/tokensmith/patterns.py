"""Named pre-tokenizer patterns.

The patterns are written in the form that the ``tokenizers`` library
(Oniguruma) and tokensmith read identically: ``\\p{N}{1,3}`` without the
possessive ``+`` that tiktoken's newer sources use (the alternation is
complete, so the meaning is the same).
"""

from __future__ import annotations

import re

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
    # the encodings' names name their patterns too
    "r50k_base": GPT2,
    "p50k_base": GPT2,
    "cl100k_base": CL100K,
    "o200k_base": O200K,
}


def resolve(pattern: str) -> str:
    """A pattern name (``"gpt4"``, ``"gpt2"``, ``"o200k"`` …) or a regex, as a regex.

    A bare word that names no pattern (``"gpt5"``) is taken for a misspelt name and
    refused with :class:`~tokensmith.errors.InvalidPatternError`, not used as a regex
    that matches that word alone; write ``"(?:word)"`` to mean the regex."""
    if not pattern:
        return pattern
    named = NAMED.get(pattern.lower())
    if named is not None:
        return named
    if re.fullmatch(r"[A-Za-z][A-Za-z0-9_.-]*", pattern):
        import difflib

        from .errors import InvalidPatternError

        close = difflib.get_close_matches(pattern.lower(), list(NAMED), n=1, cutoff=0.5)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise InvalidPatternError(
            f"pattern {pattern!r} is no pattern name ({hint}known: "
            f"{', '.join(sorted(NAMED))}); to split with the regex that matches this word "
            f"alone, write '(?:{pattern})'"
        )
    return pattern
