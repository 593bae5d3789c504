"""What every vocabulary change needs: where a tokenizer came from, its parts as
data, and how to build the changed tokenizer so that it saves back to its format.

A tokenizer is changed by editing the data of its own format and loading the
result, never by changing the loaded object: the original stays as it was (a
tokenizer shared by threads never changes under them), and the new one is
exactly what its reference library would load from the saved file.

* ``"tiktoken"``: a rank file, its split pattern and special tokens
  (:class:`TiktokenSource`, kept on the tokenizer by
  :func:`tokensmith.formats.tiktoken.loads`); rebuilt with
  :func:`from_ranks`.
* ``"sentencepiece"``: the ``ModelProto`` of a ``.model`` file; rebuilt with
  :func:`from_model_proto`, which keeps every field it does not change.
* ``"json"``: the ``tokenizer.json`` document (everything else, including
  tokenizers trained here); rebuilt with :func:`from_spec`.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any, Literal

from ..errors import UnsupportedComponentError
from ..formats.tiktoken import TiktokenSource

if TYPE_CHECKING:
    from ..formats.sentencepiece import ModelProto
    from ..tokenizer import Tokenizer

__all__ = [
    "Origin",
    "Family",
    "TiktokenSource",
    "origin",
    "family",
    "spec",
    "from_spec",
    "from_ranks",
    "ranks",
    "from_model_proto",
    "model_proto",
    "token_bytes",
    "to_tokenizer_json",
]

Origin = Literal["tiktoken", "sentencepiece", "json"]
Family = Literal["byte-bpe", "char-bpe", "sp-bpe", "unigram", "wordpiece"]


def origin(tok: Tokenizer) -> Origin:
    """The format the tokenizer's data lives in (and that ``save`` writes back)."""
    if isinstance(getattr(tok, "_sentencepiece_bytes", None), bytes):
        return "sentencepiece"
    if isinstance(getattr(tok, "_tiktoken", None), TiktokenSource):
        return "tiktoken"
    return "json"


def spec(tok: Tokenizer) -> dict[str, Any]:
    """The tokenizer as a ``tokenizer.json`` document (a fresh copy to edit)."""
    from ..formats.hf_json import document

    return document(tok)


def family(tok: Tokenizer, doc: dict[str, Any] | None = None) -> Family:
    """The model family, which decides how a vocabulary can change."""
    model = (doc or spec(tok)).get("model") or {}
    kind = model.get("type", "BPE")
    if kind == "WordPiece":
        return "wordpiece"
    if kind == "Unigram":
        return "unigram"
    if kind == "BPE" and model.get("sentencepiece") is not None:
        return "sp-bpe"
    if kind == "BPE":
        return "byte-bpe" if tok.is_byte_level else "char-bpe"
    raise UnsupportedComponentError(
        f"vocabulary changes work on BPE, WordPiece and Unigram models; this one is {kind!r}"
    )


def from_spec(doc: dict[str, Any]) -> Tokenizer:
    """A tokenizer from an edited ``tokenizer.json`` document."""
    from ..formats.hf_json import loads

    return loads(json.dumps(doc, ensure_ascii=False))


# ------------------------------------------------------------------ tiktoken


def ranks(tok: Tokenizer) -> list[tuple[bytes, int]]:
    """The (token bytes, rank) pairs of a rank-file tokenizer, in rank order."""
    out: list[tuple[bytes, int]] = []
    for line in tok._core.to_tiktoken().splitlines():
        token, rank = line.split(" ")
        out.append((base64.b64decode(token), int(rank)))
    out.sort(key=lambda tr: tr[1])
    return out


def from_ranks(
    pairs: list[tuple[bytes, int]], pattern: str, special_tokens: dict[str, int]
) -> Tokenizer:
    """A rank-file tokenizer from (token bytes, rank) pairs; ranks may leave holes
    only where special tokens sit."""
    from ..formats import tiktoken

    data = "".join(f"{base64.b64encode(t).decode('ascii')} {r}\n" for t, r in pairs)
    return tiktoken.loads(data.encode("ascii"), pattern=pattern, special_tokens=special_tokens)


# ------------------------------------------------------------- sentencepiece


def model_proto(tok: Tokenizer) -> ModelProto:
    """A fresh copy of the tokenizer's SentencePiece ``ModelProto``."""
    from ..formats.sentencepiece import to_model_proto

    return to_model_proto(tok)


def from_model_proto(proto: ModelProto) -> Tokenizer:
    """A tokenizer from an edited ``ModelProto`` (saved back as that ``.model``)."""
    from ..formats import sentencepiece as spm

    proto.trainer_spec.vocab_size = len(proto.pieces)
    return spm.loads(proto.serialize())


# ------------------------------------------------------------------ vocabulary


def token_bytes(tok: Tokenizer) -> dict[int, bytes]:
    """Every id and the bytes it decodes to (a special token's text for special tokens)."""
    out: dict[int, bytes] = {}
    for i in range(tok.vocab_size):
        raw = tok.id_to_bytes(i)
        if raw is not None:
            out[i] = raw
    return out


def to_tokenizer_json(tok: Tokenizer) -> Tokenizer:
    """The same tokenizer kept as ``tokenizer.json`` data (no longer tied to the rank
    file or ``.model`` it came from), for changes those formats cannot hold."""
    return from_spec(spec(tok))
