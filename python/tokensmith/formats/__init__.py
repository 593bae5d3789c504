"""Tokenizer file formats: which reader or writer a path needs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import TokenizerFormatError, UnsupportedComponentError

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer
    from .sniff import Kind

__all__ = ["load_path", "save_path"]


def load_path(path: str | os.PathLike[str]) -> Tokenizer:
    """Load a tokenizer from a file or a folder, choosing the format from what is there."""
    from . import gpt2, hf_json

    p = Path(path)
    if p.is_dir():
        if (p / "tokenizer.json").is_file():
            return hf_json.load(p / "tokenizer.json")
        if (p / "vocab.json").is_file() and (p / "merges.txt").is_file():
            return gpt2.load_vocab_merges(p / "vocab.json", p / "merges.txt")
        if (p / "vocab.txt").is_file():
            from . import bert

            return bert.load(p / "vocab.txt")
        if (p / "tekken.json").is_file():
            from . import tekken

            return tekken.load(p / "tekken.json")
        if (p / "tokenizer.model").is_file():
            from . import sentencepiece

            return sentencepiece.load(p / "tokenizer.model")
        raise TokenizerFormatError(
            f"{p}: no tokenizer.json, no vocab.json + merges.txt pair and no vocab.txt in this "
            f"folder"
        )
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file or folder")
    return _load_file(p)


def _load_file(p: Path) -> Tokenizer:
    """A tokenizer file, its format told by its content (``sniff``), its name a hint."""
    from . import gpt2, hf_json
    from .sniff import kind_of

    kind = kind_of(p)
    name = p.name.lower()
    if kind in ("unknown", "vocab-lines"):
        # (content that says little: the name decides, so that a damaged .model gets the
        # SentencePiece reader's own error, and a text file is a vocabulary only when it
        # says so)
        kind = _kind_from_name(name) or (kind if _bert_like(p) else "unknown")
    if kind == "json":
        if name == "vocab.json" or name.endswith("-vocab.json"):
            merges = p.with_name(p.name[: -len("vocab.json")] + "merges.txt")
            if not merges.is_file():
                raise TokenizerFormatError(
                    f"{p}: a vocab.json needs its merges.txt beside it ({merges})"
                )
            return gpt2.load_vocab_merges(p, merges)
        if name == "tokenizer_config.json":
            raise TokenizerFormatError(
                f"{p}: this is transformers' tokenizer settings, not a tokenizer; load the "
                f"tokenizer.json (or tokenizer.model) beside it, or the folder"
            )
        from . import tekken

        with open(p, "rb") as f:
            if tekken.is_tekken(f.read(1 << 16)):
                return tekken.load(p)
        return hf_json.load(p)
    if kind == "tiktoken":
        from . import tiktoken
        from .rank_files import encoding_of

        data = p.read_bytes()
        pattern, specials = encoding_of(p, data)
        try:
            return tiktoken.loads(data, pattern=pattern, special_tokens=specials)
        except TokenizerFormatError as e:
            raise type(e)(f"{p}: {e}") from None
    if kind == "sentencepiece":
        from . import sentencepiece

        return sentencepiece.load(p)
    if kind == "gguf":
        from . import gguf

        return gguf.load(p)
    if kind == "merges":
        vocab = p.with_name(p.name.replace("merges.txt", "vocab.json"))
        if vocab == p or not vocab.is_file():
            vocab = p.with_name("vocab.json")
        return gpt2.load_vocab_merges(vocab, p)
    if kind == "vocab-lines":
        from . import bert

        return bert.load(p)
    raise UnsupportedComponentError(
        f"{p}: not a format tokensmith reads (tokenizer.json, a tiktoken rank file, a "
        f"SentencePiece model, Mistral's tekken.json, a GGUF model, a BERT vocab.txt or "
        f"vocab.json + merges.txt, told by their content); convert the file with the "
        f"library that wrote it, or load its tokenizer.json"
    )


def _kind_from_name(name: str) -> Kind | None:
    """The format a file name points at, if any (see ``sniff.Kind``)."""
    if name.endswith(".model") or ".model." in name:
        return "sentencepiece"
    if name.endswith(".tiktoken"):
        return "tiktoken"
    if name.endswith(".gguf"):
        return "gguf"
    if name.endswith(".json"):
        return "json"
    if name.endswith(".txt") and "merges" in name:
        return "merges"
    if name.endswith(".txt") and "vocab" in name:
        return "vocab-lines"
    return None


def _bert_like(p: Path) -> bool:
    """Whether a text file of one token a line reads as a WordPiece vocabulary."""
    with open(p, "rb") as f:
        lines = f.read(1 << 16).split(b"\n")
    return any(t.strip() in (b"[UNK]", b"[PAD]", b"[CLS]") or t.startswith(b"##")
               for t in lines)


def save_path(tok: Tokenizer, path: str | os.PathLike[str], *, pretty: bool = True) -> Path:
    """Save in the format the path names (``*.json``, or a folder for ``tokenizer.json``)."""
    from . import hf_json

    p = Path(path)
    if p.is_dir() or str(path).endswith(os.sep):
        p = p / "tokenizer.json"
    if p.suffix.lower() == ".tiktoken":
        from . import tiktoken

        return tiktoken.save(tok, p)
    if p.name.lower().endswith("vocab.txt"):
        from . import bert

        return bert.save_vocab_txt(tok, p)
    if p.suffix.lower() == ".model":
        from . import sentencepiece

        return sentencepiece.save(tok, p)
    if p.suffix.lower() == ".json" and p.name.lower().startswith("tekken"):
        from . import tekken

        return tekken.save(tok, p)
    if p.suffix.lower() != ".json":
        raise UnsupportedComponentError(
            f"{p}: save to a .json path (tokenizer.json), a .tiktoken or .model path, a "
            f"vocab.txt path (WordPiece), or a folder; "
            f"for vocab.json + merges.txt use save_vocab_merges()"
        )
    return hf_json.save(tok, p, pretty=pretty)
