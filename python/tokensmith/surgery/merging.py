"""Merging two vocabularies: the donor's tokens the base lacks, appended after the
base's last id (the Chinese-LLaMA recipe: Llama-2's SentencePiece model plus
pieces of one trained on Chinese).

* BPE (byte-level or character-level, tiktoken, SentencePiece BPE): the
  donor's merges are walked in the donor's order; a merge whose result the
  base lacks is appended with its token, so every appended token's two parts
  are already there (the merge closure holds). Ranks and SentencePiece
  scores of the appended tokens lie below every old one, in the donor's
  order: old merges always go first.
* Unigram: the donor's pieces the base lacks, their scores moved onto the
  base's scale (the median difference over the pieces both have).
* WordPiece: the donor's tokens the base lacks, in the donor's id order.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from ..errors import IncompatibleTokenizersError
from . import _base
from ._append import NewToken, append_tokens
from .add import check_limit
from .extend import calibrated_pieces

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer

__all__ = ["merge"]

_BPE = ("byte-bpe", "char-bpe", "sp-bpe")
NORMAL = 1


def merge(
    base: Tokenizer, donor: Tokenizer, *, limit: int | None = None, max_vocab: int | None = None
) -> Tokenizer:
    """``base`` with the tokens of ``donor`` it lacks appended (at most ``limit``
    of them, in the donor's order); base ids, merges and scores unchanged.

    Both must be of one model family (BPE with BPE, Unigram with Unigram,
    WordPiece with WordPiece), both byte-level or neither, with the same
    handling of whitespace; otherwise
    :class:`~tokensmith.errors.IncompatibleTokenizersError` says which part
    differs. Differences that only make some donor tokens unreachable (another
    split regex, another normalization table) are warnings.
    """
    bdoc, ddoc = _base.spec(base), _base.spec(donor)
    bfam, dfam = _base.family(base, bdoc), _base.family(donor, ddoc)
    _check_compatible(base, donor, bdoc, ddoc, bfam, dfam)
    if bfam in _BPE:
        new = _bpe_tokens(base, donor, ddoc)
    elif bfam == "unigram":
        old = {p: s for p, s in bdoc["model"]["vocab"]}
        types = ddoc["model"].get("piece_types") or [NORMAL] * len(ddoc["model"]["vocab"])
        learned = [(p, s) for (p, s), t in zip(ddoc["model"]["vocab"], types, strict=True)
                   if t == NORMAL]
        new = calibrated_pieces(old, learned, len(learned))
    else:
        specials = set(donor.special_tokens)
        ordered = sorted(ddoc["model"]["vocab"].items(), key=lambda kv: kv[1])
        new = [NewToken(t.encode("utf-8")) for t, _ in ordered
               if t not in bdoc["model"]["vocab"] and t not in specials]
    if limit is not None:
        new = _first(new, limit)
    check_limit(base.vocab_size + len(new), max_vocab, f"merging in {len(new):,} tokens")
    return append_tokens(base, new)


def _check_compatible(base: Tokenizer, donor: Tokenizer, bdoc: dict[str, Any],
                      ddoc: dict[str, Any], bfam: str, dfam: str) -> None:
    same = (bfam == dfam) or (bfam in _BPE and dfam in _BPE and "byte-bpe" not in (bfam, dfam))
    if not same:
        raise IncompatibleTokenizersError(
            f"cannot merge a {dfam} vocabulary into a {bfam} one: their tokens mean different "
            f"things (bytes, characters, continuation marks); merge tokenizers of one family, "
            f"or extend the base on the donor's text instead (tok.extend(texts=...))")
    bspace, dspace = _whitespace(bdoc), _whitespace(ddoc)
    if bspace != dspace:
        raise IncompatibleTokenizersError(
            f"the two tokenizers mark whitespace differently (base: {bspace}, donor: {dspace}): "
            f"the donor's tokens would never match the base's text")
    if bfam == "byte-bpe" and base._core.split_regex() != donor._core.split_regex():
        warnings.warn("the tokenizers split text with different regexes: donor tokens that "
                      "cross the base's pre-token boundaries will never be produced",
                      stacklevel=3)
    bn, dn = bdoc.get("normalizer") or {}, ddoc.get("normalizer") or {}
    if bn.get("precompiled_charsmap") != dn.get("precompiled_charsmap") or (
            bn.get("type") != dn.get("type")):
        warnings.warn("the tokenizers normalize text differently: donor pieces holding "
                      "characters the base normalizes away will never be produced",
                      stacklevel=3)


def _whitespace(doc: dict[str, Any]) -> str:
    """How a tokenizer marks spaces: the byte-level alphabet, ``▁`` (prefix or
    suffix), or not at all (words cut at spaces)."""
    text = str(doc.get("pre_tokenizer")) + str(doc.get("normalizer")) + str(doc.get("decoder"))
    if "ByteLevel" in text:
        return "byte-level"
    norm = doc.get("normalizer") or {}
    if "\u2581" in text or norm.get("type") == "SentencePiece":
        return "\u2581 suffix" if norm.get("treat_whitespace_as_suffix") else "\u2581 prefix"
    return "cut at spaces"


def _bpe_tokens(base: Tokenizer, donor: Tokenizer, ddoc: dict[str, Any]) -> list[NewToken]:
    """Donor merges whose results the base lacks, in donor order, as ids in the
    merged vocabulary."""
    have: dict[bytes, int] = {}
    for i in range(base.vocab_size):
        raw = _model_bytes(base, i)
        if raw is not None:
            have.setdefault(raw, i)
    new: list[NewToken] = []
    next_id = base.vocab_size
    # single symbols the base lacks (characters; a byte-level base has every byte)
    singles = [] if base.is_byte_level else ddoc["model"]["vocab"].items()
    for token, _ in sorted(singles, key=lambda kv: kv[1]):
        raw = _model_bytes(donor, donor.token_to_id(token))
        if raw is None or raw in have or len(raw.decode("utf-8", "replace")) != 1:
            continue
        if donor.token_to_id(token) in donor.special_tokens.values():
            continue
        have[raw] = next_id
        next_id += 1
        new.append(NewToken(raw))
    for left, right in _merges(donor, ddoc):
        a = _model_bytes(donor, donor.token_to_id(left))
        b = _model_bytes(donor, donor.token_to_id(right))
        if a is None or b is None or a not in have or b not in have:
            continue
        merged = a + _strip_prefix(ddoc, b)
        if merged in have:
            continue
        have[merged] = next_id
        next_id += 1
        new.append(NewToken(merged, left=have[a], right=have[b]))
    return new


def _merges(tok: Tokenizer, doc: dict[str, Any]) -> list[tuple[str, str]]:
    """The merges in order; for SentencePiece BPE (which merges by piece score)
    one split per piece into two pieces (the split whose lower-scored part scores
    highest), pieces by score, highest first."""
    rows = doc["model"].get("sentencepiece")
    if rows is None:
        return tok.merges
    score = {p: s for p, s, t in rows if t == NORMAL}
    out: list[tuple[str, str]] = []
    for piece, _ in sorted(score.items(), key=lambda ps: -ps[1]):
        splits = [(min(score[piece[:k]], score[piece[k:]]), piece[:k], piece[k:])
                  for k in range(1, len(piece))
                  if piece[:k] in score and piece[k:] in score]
        if splits:
            _, a, b = max(splits)
            out.append((a, b))
    return out


def _model_bytes(tok: Tokenizer, token_id: int | None) -> bytes | None:
    """A token in model space (raw bytes for byte-level models, else its string)."""
    if token_id is None:
        return None
    if tok.is_byte_level:
        return tok.id_to_bytes(token_id)
    s = tok.id_to_token(token_id)
    return None if s is None else s.encode("utf-8")


def _strip_prefix(doc: dict[str, Any], right: bytes) -> bytes:
    prefix = (doc["model"].get("continuing_subword_prefix") or "").encode("utf-8")
    return right[len(prefix):] if prefix and right.startswith(prefix) else right


def _first(new: list[NewToken], limit: int) -> list[NewToken]:
    """The first ``limit`` tokens (they only build on earlier ones, so any prefix
    keeps the merge closure)."""
    return new[: max(limit, 0)]
