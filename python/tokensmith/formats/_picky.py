"""The formats a PickyBPE model cannot be written to, and why (``docs/picky.md``).

A PickyBPE tokenizer encodes by replaying its training events, merges and removals,
in order. A BPE file (``tokenizer.json``'s ``BPE``, ``vocab.json`` + ``merges.txt``, a
tiktoken rank file) holds a merge table that is applied by rank, lowest first,
as long as a pair has a merge: it cannot say "this token is split again here", nor
keep a token out of the vocabulary that later merges start from. Written as one,
the tokenizer would give other ids, so these writers refuse it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import UnsupportedComponentError

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer

__all__ = ["refuse_picky"]

_WHY = {
    "tiktoken": "a rank file merges any two tokens whose concatenation is a token, by rank, "
                "and has no way to split a removed token again",
    "vocab.json + merges.txt": "merges.txt is a merge table applied by rank, and has no way "
                               "to split a removed token again or to merge tokens that are not "
                               "in vocab.json",
    "SentencePiece .model": "a SentencePiece BPE model merges pieces by score, and has no way "
                            "to split a removed token again",
    "tekken": "a tekken file is a tiktoken rank table, applied by rank, with no way to split "
              "a removed token again",
}


def refuse_picky(tok: Tokenizer, fmt: str) -> None:
    """Raise :class:`UnsupportedComponentError` when ``tok`` is a PickyBPE model,
    naming ``fmt`` and the reason."""
    if getattr(tok._core, "model_type", "") != "PickyBPE":
        return
    raise UnsupportedComponentError(
        f"{fmt} cannot express this PickyBPE tokenizer: it encodes by replaying merges and "
        f"removals in training order, and {_WHY[fmt]}; save it as tokenizer.json "
        f"(tokensmith's \"PickyBPE\" model type), which tokensmith loads back exactly"
    )
