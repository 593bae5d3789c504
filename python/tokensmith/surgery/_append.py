"""Appending tokens to a vocabulary in its own format: new ids after the last
one, every old id, merge and score unchanged."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..errors import UnsupportedComponentError
from . import _base

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer

__all__ = ["NewToken", "append_tokens", "byte_level_string", "token_string", "score_floor"]

NORMAL = 1


@dataclass(frozen=True)
class NewToken:
    """A model token to append.

    ``data`` is the token in model space: raw bytes for byte-level BPE, the
    UTF-8 of the token string otherwise (``##`` prefix, ``</w>`` suffix and
    ``▁`` included). ``left``/``right`` are the ids a BPE merge joins to make
    it (``None`` for a new base symbol); ``score`` is its log-probability for
    Unigram and its merge priority for SentencePiece BPE.
    """

    data: bytes
    left: int | None = None
    right: int | None = None
    score: float | None = None


@lru_cache(maxsize=1)
def _byte_alphabet() -> tuple[str, ...]:
    """GPT-2's printable stand-in for each byte (the byte-level alphabet)."""
    keep = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    out: dict[int, str] = {b: chr(b) for b in keep}
    extra = 0
    for b in range(256):
        if b not in out:
            out[b] = chr(256 + extra)
            extra += 1
    return tuple(out[b] for b in range(256))


def byte_level_string(data: bytes) -> str:
    alphabet = _byte_alphabet()
    return "".join(alphabet[b] for b in data)


def token_string(tok: Tokenizer, data: bytes) -> str:
    """How ``tokenizer.json`` writes a model token."""
    return byte_level_string(data) if tok.is_byte_level else data.decode("utf-8", "replace")


def score_floor(scores: list[float]) -> float:
    """The score just below every given one (new SentencePiece BPE pieces merge
    after all old ones)."""
    return (min(scores) if scores else 0.0) - 1.0


def append_tokens(tok: Tokenizer, new: list[NewToken]) -> Tokenizer:
    """``tok`` with ``new`` appended (ids ``tok.vocab_size``, ``+1`` …), built in
    its own format."""
    if not new:
        return tok
    kind = _base.origin(tok)
    if kind == "tiktoken":
        return _append_ranks(tok, new)
    if kind == "sentencepiece":
        return _append_pieces(tok, new)
    return _append_json(tok, new)


def _append_ranks(tok: Tokenizer, new: list[NewToken]) -> Tokenizer:
    src: _base.TiktokenSource = tok._tiktoken  # type: ignore[attr-defined]
    pairs = _base.ranks(tok)
    first = tok.vocab_size
    pairs.extend((t.data, first + i) for i, t in enumerate(new))
    out = _base.from_ranks(pairs, src.pattern, src.special_tokens)
    return out


def _append_pieces(tok: Tokenizer, new: list[NewToken]) -> Tokenizer:
    from ..formats import sentencepiece as spm

    proto = _base.model_proto(tok)
    floor = score_floor([p.score for p in proto.pieces if p.type == NORMAL])
    for i, t in enumerate(new):
        score = t.score if t.score is not None else floor - i
        proto.pieces.append(spm.SentencePiece(piece=t.data.decode("utf-8"), score=score,
                                              type=NORMAL))
    return _base.from_model_proto(proto)


def _append_json(tok: Tokenizer, new: list[NewToken]) -> Tokenizer:
    doc = _base.spec(tok)
    model = doc["model"]
    first = tok.vocab_size
    kind = model.get("type", "BPE")
    if kind == "Unigram":
        _append_unigram(model, new, first)
    elif kind == "WordPiece":
        for i, t in enumerate(new):
            model["vocab"][t.data.decode("utf-8")] = first + i
    else:
        _append_bpe(tok, model, new, first)
    return _base.from_spec(doc)


def _append_unigram(model: dict[str, Any], new: list[NewToken], first: int) -> None:
    vocab = model["vocab"]
    if len(vocab) != first:
        raise UnsupportedComponentError(
            f"this Unigram vocabulary lists {len(vocab)} pieces but ids go up to {first - 1} "
            f"(added tokens after the pieces): new pieces cannot take ids after the last one "
            f"in tokenizer.json's Unigram list; add them as tokens with add_tokens instead"
        )
    floor = score_floor([s for _, s in vocab])
    types = model.get("piece_types")
    for i, t in enumerate(new):
        vocab.append([t.data.decode("utf-8"), t.score if t.score is not None else floor - i])
        if types is not None:
            types.append(NORMAL)


def _append_bpe(tok: Tokenizer, model: dict[str, Any], new: list[NewToken], first: int) -> None:
    vocab: dict[str, int] = model["vocab"]
    merges: list[Any] = model["merges"]
    as_pairs = bool(merges) and not isinstance(merges[0], str)
    names: dict[int, str] = {}

    def name(i: int) -> str:
        if i in names:
            return names[i]
        s = tok.id_to_token(i)
        if s is None:
            raise UnsupportedComponentError(f"a new merge uses id {i}, which has no token")
        return s

    rows = model.get("sentencepiece")
    floor = score_floor([r[1] for r in rows if r[2] == NORMAL]) if rows is not None else 0.0
    for i, t in enumerate(new):
        s = token_string(tok, t.data)
        vocab[s] = first + i
        names[first + i] = s
        if rows is not None:
            rows.append([s, t.score if t.score is not None else floor - i, NORMAL])
        if t.left is not None and t.right is not None:
            a, b = name(t.left), name(t.right)
            merges.append([a, b] if as_pairs else f"{a} {b}")
