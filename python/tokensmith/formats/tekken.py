"""Mistral's tekken files (``tekken*.json``): a tiktoken vocabulary in JSON.

A tekken file holds ``config`` (the split ``pattern``, ``default_vocab_size``,
``default_num_special_tokens``, ``version``), ``vocab`` (records of ``rank``,
base64 ``token_bytes`` and ``token_str``) and, from version v7 on,
``special_tokens`` (``rank``, ``token_str``, ``is_control``). As ``mistral-common``
reads it: the special tokens take ids 0 … n−1 (those the file does not name are
``<SPECIAL_i>``; files before v7 name none and get v3's twenty), and the first
``default_vocab_size − n`` ranks follow, rank r at id r + n, merged by rank as
tiktoken merges. Text that spells a special token is ordinary text to
``mistral-common``; tokensmith refuses it unless ``disallowed_special=()`` (as
text) or ``allowed_special`` (as the token) says otherwise. ``encode`` adds ``<s>``
first, as ``encode(text, bos=True, eos=False)`` does; ``add_special_tokens=False``
leaves it out. Image and audio settings are kept for saving, not used.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._io import atomic_write
from ..errors import TokenizerFormatError, UnsupportedComponentError

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer

__all__ = ["is_tekken", "loads", "load", "dumps", "save"]

#: The special tokens of a file that names none (versions before v7), in id order.
V3_SPECIAL_TOKENS = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
    "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)
VERSIONS = ("v1", "v2", "v3", "v7", "v11", "v13", "v15")
_KEPT = ("image", "audio", "multimodal", "model_settings_builder")


def is_tekken(head: bytes) -> bool:
    """Whether a JSON file starting with ``head`` is a tekken file."""
    return b'"default_num_special_tokens"' in head or (
        b'"config"' in head[:4096] and b'"token_bytes"' in head)


def _config(data: dict[str, Any]) -> tuple[str, int, int, str]:
    config = data.get("config")
    if not isinstance(config, dict):
        raise TokenizerFormatError("a tekken file needs a 'config' object")
    try:
        pattern = config["pattern"]
        size = config["default_vocab_size"]
        n = config["default_num_special_tokens"]
    except KeyError as e:
        raise TokenizerFormatError(f"config.{e.args[0]} is missing") from None
    version = config.get("version")
    if version not in VERSIONS:
        raise TokenizerFormatError(f"config.version {version!r} is not one of {VERSIONS}")
    if not isinstance(pattern, str) or not all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in (size, n)):
        raise TokenizerFormatError("config: pattern must be a string, default_vocab_size and "
                                   "default_num_special_tokens non-negative integers")
    return pattern, size, n, version


def _specials(data: dict[str, Any], n: int, version: str) -> list[dict[str, Any]]:
    """The special-token records for ids 0 … n−1, filled as mistral-common fills them."""
    named = data.get("special_tokens")
    if named is None:
        if VERSIONS.index(version) > VERSIONS.index("v7"):
            raise TokenizerFormatError(f"a {version} tekken file must list its special_tokens")
        named = [{"rank": i, "token_str": s, "is_control": True}
                 for i, s in enumerate(V3_SPECIAL_TOKENS)]
    if not isinstance(named, list) or not all(isinstance(t, dict) for t in named):
        raise TokenizerFormatError("special_tokens must be a list of objects")
    if len(named) > n:
        raise TokenizerFormatError(f"{len(named)} special tokens, more than "
                                   f"default_num_special_tokens ({n})")
    for i, t in enumerate(named):
        if t.get("rank") != i or not isinstance(t.get("token_str"), str) or not t["token_str"]:
            raise TokenizerFormatError(f"special_tokens[{i}] must have rank {i} and a token_str")
    records = list(named) + [{"rank": i, "token_str": f"<SPECIAL_{i}>", "is_control": True}
                             for i in range(len(named), n)]
    if len({t["token_str"] for t in records}) != n:
        raise TokenizerFormatError("special_tokens: a token_str appears twice")
    return records


def _rank_lines(vocab: Any, kept: int, shift: int) -> bytes:
    """The first ``kept`` vocabulary records as rank-file lines, ids shifted by ``shift``."""
    if not isinstance(vocab, list):
        raise TokenizerFormatError("vocab must be a list of records")
    if len(vocab) < kept:
        raise TokenizerFormatError(f"default_vocab_size asks for {kept} ordinary tokens and "
                                   f"vocab has {len(vocab)}")
    lines = []
    for i, rec in enumerate(vocab[:kept]):
        if not isinstance(rec, dict) or rec.get("rank") != i or not isinstance(
                rec.get("token_bytes"), str):
            raise TokenizerFormatError(f"vocab[{i}] must have rank {i} and token_bytes")
        lines.append(b"%s %d" % (rec["token_bytes"].encode("ascii", "replace"), i + shift))
    return b"\n".join(lines) + b"\n"


def loads(text: str | bytes) -> Tokenizer:
    """A tokenizer from the text of a tekken file."""
    from . import hf_json
    from . import tiktoken as tt

    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise TokenizerFormatError(f"not JSON: {e}") from None
    if not isinstance(data, dict):
        raise TokenizerFormatError("a tekken file is a JSON object")
    pattern, size, n, version = _config(data)
    if size <= n:
        raise TokenizerFormatError(f"default_vocab_size ({size}) leaves no ordinary token "
                                   f"beside {n} special tokens")
    records = _specials(data, n, version)
    ranks = _rank_lines(data.get("vocab"), size - n, n)
    specials = {t["token_str"]: i for i, t in enumerate(records)}
    base = tt.loads(ranks, pattern=pattern, special_tokens=specials)
    spec = json.loads(base.to_str(pretty=False))
    bos = "<s>" if "<s>" in specials else None
    if bos is not None:
        spec["post_processor"] = _bos_template(bos, specials[bos])
    tok = hf_json.loads(json.dumps(spec, ensure_ascii=False))
    tok._tiktoken = base._tiktoken  # type: ignore[attr-defined]
    tok._tekken = {"version": version, "special_tokens": records,  # type: ignore[attr-defined]
                   **{k: data[k] for k in _KEPT if k in data}}
    return tok


def _bos_template(bos: str, bos_id: int) -> dict[str, Any]:
    first = {"SpecialToken": {"id": bos, "type_id": 0}}
    return {
        "type": "TemplateProcessing",
        "single": [first, {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [first, {"Sequence": {"id": "A", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {bos: {"id": bos, "ids": [bos_id], "tokens": [bos]}},
    }


def load(path: str | os.PathLike[str]) -> Tokenizer:
    p = Path(path)
    try:
        return loads(p.read_bytes())
    except TokenizerFormatError as e:
        raise type(e)(f"{p}: {e}") from None


def dumps(tok: Tokenizer) -> str:
    """The tekken text of a tokenizer: special tokens at ids 0 … n−1, a byte-level BPE
    that a rank file holds exactly after them, split by one regex."""
    from ._picky import refuse_picky

    refuse_picky(tok, "tekken")
    meta: dict[str, Any] = getattr(tok, "_tekken", {})
    added = sorted((i, s) for s, i, _ in tok._core.added_tokens())
    n = len(added)
    if [i for i, _ in added] != list(range(n)):
        raise UnsupportedComponentError(
            "a tekken file puts the special tokens at ids 0, 1, … before every other token; "
            "this tokenizer's special tokens are elsewhere")
    pattern = tok._core.split_regex()
    if pattern is None:
        raise UnsupportedComponentError("a tekken file splits text with one regex; this "
                                        "tokenizer's pre-tokenizer is not one regex split")
    vocab = []
    for k, line in enumerate(tok._core.to_tiktoken().splitlines()):
        token_b64, rank = line.split(" ")
        if int(rank) != n + k:
            raise UnsupportedComponentError("the ordinary tokens must follow the special ones "
                                            "without gaps")
        raw = base64.b64decode(token_b64)
        vocab.append({"rank": k, "token_bytes": token_b64,
                      "token_str": raw.decode("utf-8") if _utf8(raw) else None})
    records = meta.get("special_tokens") or [
        {"rank": i, "token_str": s, "is_control": True} for i, s in added]
    if [t["token_str"] for t in records] != [s for _, s in added]:
        records = [{"rank": i, "token_str": s, "is_control": True} for i, s in added]
    data: dict[str, Any] = {
        "config": {"pattern": pattern, "num_vocab_tokens": len(vocab),
                   "default_vocab_size": n + len(vocab), "default_num_special_tokens": n,
                   "version": meta.get("version", "v7")},
        "vocab": vocab,
        "special_tokens": records,
    }
    data.update({k: v for k, v in meta.items() if k in _KEPT})
    return json.dumps(data, ensure_ascii=False)


def _utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def save(tok: Tokenizer, path: str | os.PathLike[str]) -> Path:
    """Write a tekken file (atomically)."""
    return atomic_write(path, dumps(tok))
