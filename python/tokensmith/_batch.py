"""``tok(texts, padding=..., truncation=..., max_length=...)``: model inputs as the Hugging
Face habit has them (``tokenizers`` with padding and truncation enabled, ``transformers``'
``tokenizer(...)``): ids, attention masks and, for pairs, token type ids, padded into a
rectangle (numpy arrays with ``return_tensors="np"``).

Truncation happens before the post-processor adds its tokens, so that ``[CLS] … [SEP]``
survive it, and follows ``tokenizers``' ``longest_first`` rule for pairs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .errors import ConfigError

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

Padding = bool | Literal["longest", "max_length", "do_not_pad"]
PAD_NAMES = ("[PAD]", "<pad>", "<|pad|>", "<PAD>", "<|padding|>")


class BatchEncoding(dict[str, Any]):
    """The model inputs: ``input_ids``, ``attention_mask`` and, for pairs (or when
    asked), ``token_type_ids``; also readable as attributes (``enc.input_ids``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


@dataclass
class _Row:
    ids: list[int]
    type_ids: list[int]


def _layout(full: list[int], mask: list[int], types: list[int], a: list[int],
            b: list[int] | None) -> list[tuple[str, int, int]]:
    """The post-processor's template, read off one encoding: ("special", id, type id),
    ("A", 0, type id) or ("B", 0, type id), in order. An empty text has no run to find
    and none is listed (it would add nothing)."""
    out: list[tuple[str, int, int]] = []
    placed = set()
    i = 0
    while i < len(full):
        if mask[i]:
            out.append(("special", full[i], types[i]))
            i += 1
        elif a and "A" not in placed and full[i:i + len(a)] == a:
            out.append(("A", 0, types[i]))
            placed.add("A")
            i += len(a)
        elif b and "B" not in placed and full[i:i + len(b)] == b:
            out.append(("B", 0, types[i]))
            placed.add("B")
            i += len(b)
        else:  # (a template that repeats or rewrites the text: no place to truncate)
            raise ConfigError("the post-processor's output does not hold the text's ids once "
                              "each; padding and truncation cannot place them")
    return out


def _truncate(n1: int, n2: int | None, limit: int) -> tuple[int, int | None]:
    """The lengths ``tokenizers``' ``longest_first`` truncation keeps."""
    if n2 is None:
        return min(n1, limit), None
    if n1 + n2 <= limit:
        return n1, n2
    swap = n1 > n2
    short, long_ = (n2, n1) if swap else (n1, n2)
    long_ = short if short > limit else max(short, limit - short)
    if short + long_ > limit:
        short = limit // 2
        long_ = short + limit % 2
    return (long_, short) if swap else (short, long_)


def _pad_id(tok: Tokenizer, pad_token: str | None) -> int:
    if pad_token is not None:
        pad = tok.token_to_id(pad_token)
        if pad is None:
            raise ConfigError(f"pad_token {pad_token!r} is not in the vocabulary")
        return pad
    spec = json.loads(tok.to_str(pretty=False)).get("padding")
    if isinstance(spec, dict) and isinstance(spec.get("pad_id"), int):
        return int(spec["pad_id"])
    for name in PAD_NAMES:
        if name in tok.special_tokens:
            return tok.special_tokens[name]
    raise ConfigError("this tokenizer has no pad token: pass pad_token=... (for example "
                      "its end-of-text token)")


def _row(tok: Tokenizer, a: str, b: str | None, *, add: bool, limit: int | None,
         policy: dict[str, Any]) -> _Row:
    """One text (or pair): encoded, truncated to ``limit`` ids in all, post-processed."""
    ea = tok.encode_full(a, add_special_tokens=False, **policy)
    eb = tok.encode_full(b, add_special_tokens=False, **policy) if b is not None else None
    if not add:
        n1, n2 = _truncate(len(ea.ids), None if eb is None else len(eb.ids),
                           limit if limit is not None else 1 << 62)
        ids, types = list(ea.ids[:n1]), [0] * n1
        if eb is not None and n2 is not None:
            ids += eb.ids[:n2]
            types += [1] * n2
        return _Row(ids, types)
    full = tok.encode_full(a, b, add_special_tokens=True, **policy)
    layout = _layout(full.ids, full.special_tokens_mask, full.type_ids, ea.ids,
                     None if eb is None else eb.ids)
    added = sum(1 for kind, _, _ in layout if kind == "special")
    n1, n2 = len(ea.ids), None if eb is None else len(eb.ids)
    if limit is not None:
        if limit < added:
            raise ConfigError(f"max_length={limit} leaves no room beside the {added} special "
                              f"token(s) the tokenizer adds")
        n1, n2 = _truncate(n1, n2, limit - added)
    ids, types = [], []
    for kind, value, type_id in layout:
        part = ([value] if kind == "special" else ea.ids[:n1] if kind == "A"
                else eb.ids[:n2] if eb is not None and n2 is not None else [])
        ids += part
        types += [type_id] * len(part)
    return _Row(ids, types)


def call(
    tok: Tokenizer,
    text: str | Sequence[str],
    text_pair: str | Sequence[str] | None = None,
    *,
    add_special_tokens: bool = True,
    padding: Padding = False,
    truncation: bool | Literal["longest_first", "do_not_truncate"] = False,
    max_length: int | None = None,
    pad_to_multiple_of: int | None = None,
    padding_side: Literal["right", "left"] = "right",
    pad_token: str | None = None,
    return_tensors: Literal["np"] | None = None,
    return_token_type_ids: bool | None = None,
    return_attention_mask: bool = True,
    allowed_special: Any = "all",
) -> BatchEncoding:
    """See :meth:`tokensmith.Tokenizer.__call__`."""
    single = isinstance(text, str)
    texts = [text] if isinstance(text, str) else list(text)
    if text_pair is None:
        pairs: list[str | None] = [None] * len(texts)
    else:
        pairs = [text_pair] if isinstance(text_pair, str) else list(text_pair)
        if len(pairs) != len(texts):
            raise ConfigError(f"{len(texts)} texts but {len(pairs)} pair texts")
    if not all(isinstance(t, str) for t in [*texts, *(p for p in pairs if p is not None)]):
        raise ConfigError("texts must be strings (one, or a list of them)")
    truncate = truncation not in (False, "do_not_truncate")
    if truncation not in (True, False, "longest_first", "do_not_truncate"):
        raise ConfigError(f"truncation={truncation!r}: use True ('longest_first') or False")
    if truncate and max_length is None:
        raise ConfigError("truncation needs max_length=...")
    if max_length is not None and max_length < 1:
        raise ConfigError(f"max_length must be positive, got {max_length}")
    policy = {"allowed_special": allowed_special, "disallowed_special": ()}
    rows = [_row(tok, a, b, add=add_special_tokens, limit=max_length if truncate else None,
                 policy=policy) for a, b in zip(texts, pairs, strict=True)]
    masks = [[1] * len(r.ids) for r in rows]
    modes: dict[object, str] = {True: "longest", False: "do_not_pad"}
    mode = modes.get(padding, padding)
    if not isinstance(mode, str) or mode not in ("longest", "max_length", "do_not_pad"):
        raise ConfigError(f"padding={padding!r}: use True ('longest'), 'max_length' or False")
    if mode != "do_not_pad" or return_tensors == "np":
        _pad(tok, rows, masks, mode, max_length, pad_to_multiple_of, padding_side, pad_token,
             return_tensors)
    out = BatchEncoding(input_ids=[r.ids for r in rows])
    if return_token_type_ids or (return_token_type_ids is None and text_pair is not None):
        out["token_type_ids"] = [r.type_ids for r in rows]
    if return_attention_mask:
        out["attention_mask"] = masks
    if return_tensors == "np":
        import numpy as np

        for key in list(out):
            out[key] = np.asarray(out[key], dtype=np.int64)
    elif return_tensors is not None:
        raise ConfigError(f"return_tensors={return_tensors!r}: tokensmith gives 'np' or lists")
    if single:
        for key in list(out):
            out[key] = out[key][0]
    return out


def _pad(tok: Tokenizer, rows: list[_Row], masks: list[list[int]], mode: str,
         max_length: int | None, multiple: int | None, side: str, pad_token: str | None,
         tensors: str | None) -> None:
    """Pad every row to one length (in place), as ``tokenizers``' padding does."""
    if mode == "max_length":
        if max_length is None:
            raise ConfigError("padding='max_length' needs max_length=...")
        target = max_length
    else:
        target = max((len(r.ids) for r in rows), default=0)
    if mode == "do_not_pad" and len({len(r.ids) for r in rows}) > 1:
        raise ConfigError("return_tensors='np' needs rows of one length: pass padding=True")
    if multiple:
        target = -(-target // multiple) * multiple
    if side not in ("right", "left"):
        raise ConfigError(f"padding_side={side!r}: use 'right' or 'left'")
    if all(len(r.ids) >= target for r in rows):
        return
    pad = _pad_id(tok, pad_token)
    for r, m in zip(rows, masks, strict=True):
        n = target - len(r.ids)
        if n <= 0:
            continue
        if side == "right":
            r.ids += [pad] * n
            r.type_ids += [0] * n
            m += [0] * n
        else:
            r.ids[:0] = [pad] * n
            r.type_ids[:0] = [0] * n
            m[:0] = [0] * n
