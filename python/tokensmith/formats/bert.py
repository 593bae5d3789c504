"""BERT's ``vocab.txt``: one WordPiece token per line, the id is the line number.

:func:`load_vocab_txt` builds the whole BERT pipeline around it exactly as
``transformers``' ``BertTokenizerFast`` writes it into ``tokenizer.json``
(``BertNormalizer``, ``BertPreTokenizer``, ``WordPiece``, a ``[CLS] $A [SEP]``
template and the ``WordPiece`` decoder), so a ``vocab.txt`` and the
``tokenizer.json`` made from it encode identically. The Rust core reads the
file and builds the pipeline (``src/formats/vocab_txt.rs``); the options, a
``tokenizer_config.json``'s included, are read here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _core
from .._io import atomic_write
from ..errors import TokenizerFormatError, UnsupportedComponentError

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer

__all__ = ["load", "load_vocab_txt", "save_vocab_txt"]

# Rust's `char::is_whitespace` (Unicode White_Space): what `tokenizers` (and
# src/formats/vocab_txt.rs) trims from the end of each line of a vocab.txt.
_WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def load_vocab_txt(
    path: str | os.PathLike[str],
    *,
    lowercase: bool = True,
    strip_accents: bool | None = None,
    tokenize_chinese_chars: bool = True,
    clean_text: bool = True,
    unk_token: str = "[UNK]",
    sep_token: str = "[SEP]",
    cls_token: str = "[CLS]",
    pad_token: str = "[PAD]",
    mask_token: str = "[MASK]",
    continuing_subword_prefix: str = "##",
    max_input_chars_per_word: int = 100,
) -> Tokenizer:
    """A BERT tokenizer from ``vocab.txt``.

    ``lowercase=True`` is ``bert-base-uncased``; cased models (and
    ``bert-base-chinese``) need ``lowercase=False``. ``strip_accents=None``
    strips accents exactly when lowercasing, as BERT does.
    """
    from ..tokenizer import Tokenizer

    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise TokenizerFormatError(f"{p}: cannot read the vocabulary: {e}") from None
    try:
        core = _core.Tokenizer.from_vocab_txt(
            data,
            lowercase=lowercase,
            strip_accents=strip_accents,
            tokenize_chinese_chars=tokenize_chinese_chars,
            clean_text=clean_text,
            unk_token=unk_token,
            sep_token=sep_token,
            cls_token=cls_token,
            pad_token=pad_token,
            mask_token=mask_token,
            continuing_subword_prefix=continuing_subword_prefix,
            max_input_chars_per_word=max_input_chars_per_word,
        )
    except TokenizerFormatError as e:
        raise type(e)(f"{p}: {e}") from None
    except (TypeError, OverflowError, UnicodeEncodeError) as e:
        # an option of the wrong type or not Unicode text (a tokenizer_config.json's)
        raise TokenizerFormatError(f"{p}: {e}") from None
    return Tokenizer(core)


_CONFIG_KEYS = {
    "do_lower_case": "lowercase",
    "strip_accents": "strip_accents",
    "tokenize_chinese_chars": "tokenize_chinese_chars",
    "unk_token": "unk_token",
    "sep_token": "sep_token",
    "cls_token": "cls_token",
    "pad_token": "pad_token",
    "mask_token": "mask_token",
}


def _config_options(folder: Path) -> dict[str, Any]:
    """Options from a ``tokenizer_config.json`` beside the vocabulary, when there is one."""
    cfg_path = folder / "tokenizer_config.json"
    if not cfg_path.is_file():
        return {}
    try:
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise TokenizerFormatError(f"{cfg_path}: cannot read it: {e}") from None
    if not isinstance(cfg, dict):
        raise TokenizerFormatError(f"{cfg_path}: expected a JSON object")
    out: dict[str, Any] = {}
    for key, option in _CONFIG_KEYS.items():
        value = cfg.get(key)
        if isinstance(value, dict):  # an AddedToken written out: {"content": ...}
            value = value.get("content")
        if value is not None:
            out[option] = value
    return out


def load(path: str | os.PathLike[str], **options: Any) -> Tokenizer:
    """:func:`load_vocab_txt`, with the options of a ``tokenizer_config.json`` found beside
    the file (``do_lower_case``, ``strip_accents``, ``tokenize_chinese_chars``, special
    tokens); ``options`` override them."""
    p = Path(path)
    return load_vocab_txt(p, **{**_config_options(p.parent), **options})


def save_vocab_txt(tok: Tokenizer, path: str | os.PathLike[str]) -> Path:
    """Write the vocabulary of a WordPiece tokenizer as ``vocab.txt`` (atomically).

    Only the vocabulary is written: the normalizer settings (lowercasing …)
    and special-token roles are not part of the format. Raises
    :class:`UnsupportedComponentError` when the file could not give back the
    same vocabulary: another model type, ids with gaps, or tokens holding a
    newline or ending in whitespace.
    """
    model = tok._core.model_type
    if model != "WordPiece":
        raise UnsupportedComponentError(
            f"vocab.txt holds a WordPiece vocabulary; this tokenizer's model is {model}: "
            f"save it as tokenizer.json"
        )
    by_id: dict[int, str] = {}
    for piece, i in tok.get_vocab().items():
        by_id.setdefault(i, piece)
    lines: list[str] = []
    for i in range(len(by_id)):
        token = by_id.get(i)
        if token is None:
            raise UnsupportedComponentError(
                f"vocab.txt gives ids by line number, and this vocabulary has no token with id "
                f"{i}: save it as tokenizer.json"
            )
        if "\n" in token or token != token.rstrip(_WHITE_SPACE):
            raise UnsupportedComponentError(
                f"token {i} ({token!r}) holds a newline or ends in whitespace, which vocab.txt "
                f"cannot keep: save it as tokenizer.json"
            )
        lines.append(token)
    return atomic_write(path, "".join(t + "\n" for t in lines))
