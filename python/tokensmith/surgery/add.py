"""Adding whole tokens (``<tool_call>``, ``COVID-19``) and padding a vocabulary to a
multiple (reserved special tokens), new ids after the last one."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from ..errors import (
    ConfigError,
    InvalidTokenError,
    TokenExistsError,
    UnsupportedComponentError,
    VocabLimitError,
)
from . import _base

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer

__all__ = ["add_tokens", "resize", "check_limit", "LLAMA3_RESERVED"]

CONTROL, USER_DEFINED, UNUSED = 3, 4, 5
LLAMA3_RESERVED = "<|reserved_special_token_{n}|>"
_WORDPIECE_RESERVED = "[unused{n}]"
_SENTENCEPIECE_RESERVED = "<unused{n}>"


def check_limit(size: int, max_vocab: int | None, what: str) -> None:
    """Raise :class:`VocabLimitError` when ``size`` ids exceed ``max_vocab``."""
    if max_vocab is not None and size > max_vocab:
        raise VocabLimitError(
            f"{what} gives {size:,} ids, more than max_vocab={max_vocab:,} (the model's "
            f"embedding rows); add fewer tokens or resize the model's embeddings first",
            size=size, limit=max_vocab,
        )


def add_tokens(
    tok: Tokenizer,
    tokens: Iterable[str],
    *,
    special: bool = False,
    single_word: bool = False,
    lstrip: bool = False,
    rstrip: bool = False,
    normalized: bool | None = None,
    on_exists: Literal["warn", "ignore", "error"] = "warn",
    max_vocab: int | None = None,
) -> Tokenizer:
    """A new tokenizer with ``tokens`` added as whole tokens, ids after the last one.

    Non-special tokens are found in any text; special ones only when the
    encode call allows them (``allowed_special``), as tiktoken's rule says.
    ``single_word``, ``lstrip``, ``rstrip`` and ``normalized`` are the
    ``tokenizer.json`` options (``normalized`` defaults to ``not special``).
    A token already in the vocabulary is not added again: with
    ``on_exists="warn"`` (default) a warning names its id, ``"error"`` raises
    :class:`TokenExistsError` (its ``token_id`` is the id), ``"ignore"`` is
    silent. SentencePiece models get user-defined pieces (special: control
    pieces); rank files (tiktoken) hold special tokens only.
    """
    wanted = _validate(tokens)
    opts = {"single_word": single_word, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": (not special) if normalized is None else normalized}
    fresh: list[str] = []
    for t in wanted:
        old = tok.token_to_id(t)
        if old is None:
            fresh.append(t)
        else:
            _exists(t, old, on_exists)
    if not fresh:
        return tok
    check_limit(tok.vocab_size + len(fresh), max_vocab, f"adding {len(fresh):,} tokens")
    out = _append_added(tok, fresh, special, opts)
    # a token matched on normalized text is stored normalized: BERT's lowercasing
    # and accent stripping can turn it into one the vocabulary has
    same = {t: old for i, t in enumerate(fresh)
            if (shown := out.id_to_token(tok.vocab_size + i)) not in (None, t)
            and (old := tok.token_to_id(shown)) is not None}
    if not same:
        return out
    for t, old in same.items():
        _exists(t, old, on_exists, f" (normalized, it is {tok.id_to_token(old)!r})")
    rest = [t for t in fresh if t not in same]
    return _append_added(tok, rest, special, opts) if rest else tok


def _exists(token: str, old: int, on_exists: str, how: str = "") -> None:
    message = f"{token!r} is already token {old}{how}; it is not added again"
    if on_exists == "error":
        raise TokenExistsError(message + " (on_exists='error')", token=token, token_id=old)
    if on_exists == "warn":
        warnings.warn(message, stacklevel=4)
    elif on_exists != "ignore":
        raise ConfigError(f"on_exists must be 'warn', 'ignore' or 'error', not {on_exists!r}")


def _validate(tokens: Iterable[str]) -> list[str]:
    if isinstance(tokens, str):
        raise InvalidTokenError("tokens must be a list of strings, not one string; wrap it: "
                                "[token]")
    out: list[str] = []
    for t in tokens:
        if not isinstance(t, str):
            raise InvalidTokenError(f"tokens must be strings, got {type(t).__name__}: {t!r}")
        if not t or not t.strip():
            raise InvalidTokenError(
                f"cannot add {t!r}: a token must have a character that is not whitespace "
                f"(whitespace is already covered by the model's own tokens)")
        if t not in out:
            out.append(t)
    return out


def _append_added(tok: Tokenizer, fresh: list[str], special: bool,
                  opts: dict[str, bool]) -> Tokenizer:
    first = tok.vocab_size
    kind = _base.origin(tok)
    if kind == "tiktoken":
        if not special:
            raise UnsupportedComponentError(
                "a tiktoken rank file holds no tokens matched in ordinary text besides its "
                "ranks; add them with special=True (used where allowed_special allows), or "
                "convert first: tokensmith.surgery.to_tokenizer_json(tok)")
        src: _base.TiktokenSource = tok._tiktoken  # type: ignore[attr-defined]
        specials = dict(src.special_tokens)
        specials.update({t: first + i for i, t in enumerate(fresh)})
        return _base.from_ranks(_base.ranks(tok), src.pattern, specials)
    if kind == "sentencepiece":
        if any(opts[k] for k in ("single_word", "lstrip", "rstrip")):
            raise UnsupportedComponentError(
                "a SentencePiece .model has no single_word/lstrip/rstrip options; convert "
                "first: tokensmith.surgery.to_tokenizer_json(tok)")
        return _append_pieces(tok, fresh, CONTROL if special else USER_DEFINED)
    doc = _base.spec(tok)
    doc["added_tokens"].extend(
        {"id": first + i, "content": t, **opts, "special": special}
        for i, t in enumerate(fresh)
    )
    return _base.from_spec(doc)


def _append_pieces(tok: Tokenizer, pieces: list[str], kind: int) -> Tokenizer:
    from ..formats import sentencepiece as spm

    proto = _base.model_proto(tok)
    for p in pieces:
        proto.pieces.append(spm.SentencePiece(piece=p, score=0.0, type=kind))
    if kind == USER_DEFINED and proto.trainer_spec is not None:
        proto.trainer_spec.user_defined_symbols = [*proto.trainer_spec.user_defined_symbols,
                                                   *pieces]
    elif kind == CONTROL and proto.trainer_spec is not None:
        proto.trainer_spec.control_symbols = [*proto.trainer_spec.control_symbols, *pieces]
    return _base.from_model_proto(proto)


def resize(
    tok: Tokenizer,
    multiple_of: int | None = None,
    *,
    size: int | None = None,
    max_vocab: int | None = None,
    template: str | None = None,
) -> Tokenizer:
    """Pad the vocabulary with reserved special tokens to a multiple of
    ``multiple_of`` (or to exactly ``size`` ids), or only check it against
    ``max_vocab``.

    Reserved tokens are named by ``template`` (``{n}`` is their number, going
    on from the highest one already there): Llama-3's
    ``<|reserved_special_token_{n}|>`` by default, ``[unused{n}]`` for
    WordPiece and ``<unused{n}>`` (unused pieces) for SentencePiece models.
    Raises :class:`VocabLimitError` naming both numbers when the vocabulary
    is, or would become, larger than ``max_vocab``. Returns ``tok`` itself
    when nothing needs adding.
    """
    current = tok.vocab_size
    target = _target_size(current, multiple_of, size)
    check_limit(target, max_vocab, "this vocabulary" if target == current else
                f"padding {current:,} ids to {target:,}")
    if target == current:
        return tok
    name = template or _default_template(tok)
    if "{n}" not in name:
        raise ConfigError(f"template {name!r} needs '{{n}}' for the reserved token's number")
    start = _next_number(tok, name)
    fresh = [name.format(n=start + i) for i in range(target - current)]
    taken = [t for t in fresh if tok.token_to_id(t) is not None]
    if taken:
        raise ConfigError(f"reserved token {taken[0]!r} is already in the vocabulary; pass "
                          f"another template")
    if _base.origin(tok) == "sentencepiece":
        return _append_pieces(tok, fresh, UNUSED)
    opts = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False}
    return _append_added(tok, fresh, True, opts)


def _target_size(current: int, multiple_of: int | None, size: int | None) -> int:
    if multiple_of is not None and size is not None:
        raise ConfigError("give multiple_of or size, not both")
    if multiple_of is not None:
        if isinstance(multiple_of, bool) or not isinstance(multiple_of, int) or multiple_of < 1:
            raise ConfigError(f"multiple_of must be a positive integer, got {multiple_of!r}")
        return -(-current // multiple_of) * multiple_of
    if size is not None:
        if isinstance(size, bool) or not isinstance(size, int) or size < current:
            raise ConfigError(f"size={size!r}: a vocabulary of {current:,} ids can only grow; "
                              f"prune it to make it smaller")
        return size
    return current


def _default_template(tok: Tokenizer) -> str:
    if _base.origin(tok) == "sentencepiece":
        return _SENTENCEPIECE_RESERVED
    model: dict[str, Any] = _base.spec(tok)["model"]
    return _WORDPIECE_RESERVED if model.get("type") == "WordPiece" else LLAMA3_RESERVED


def _next_number(tok: Tokenizer, template: str) -> int:
    """One more than the highest ``{n}`` of the template already in the vocabulary."""
    head, _, tail = template.partition("{n}")
    pattern = re.compile(re.escape(head) + r"(\d+)" + re.escape(tail))
    numbers = [int(m.group(1)) for t in tok.get_vocab() if (m := pattern.fullmatch(t))]
    return max(numbers, default=-1) + 1
