"""The encodings tokensmith knows by name (``cl100k_base``, ``o200k_base`` …): each
one's rank file, checksum, split pattern and special tokens. Data only, so that the
rank-file reader (``formats.rank_files``) and :mod:`tokensmith.pretrained`, which
finds and downloads the files, both read it; ``pretrained`` re-exports it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import patterns

__all__ = ["EncodingSpec", "ENCODINGS", "encoding_for_file"]


@dataclass(frozen=True)
class EncodingSpec:
    """A tiktoken-style encoding: a rank file plus its split pattern and special tokens."""

    name: str
    filename: str
    url: str
    sha256: str
    pattern: str
    special_tokens: dict[str, int] = field(default_factory=dict)
    n_vocab: int = 0


_OPENAI = "https://openaipublic.blob.core.windows.net/encodings/"


def _harmony_special_tokens() -> dict[str, int]:
    """o200k_harmony's special tokens (gpt-oss): o200k_base's, the chat-format tokens,
    and a ``<|reserved_N|>`` name for every other id up to 201087. Id 200018 has two
    names, ``<|endofprompt|>`` (first, so it decodes to that) and ``<|reserved_200018|>``."""
    named = {
        "<|startoftext|>": 199998, "<|endoftext|>": 199999, "<|return|>": 200002,
        "<|constrain|>": 200003, "<|channel|>": 200005, "<|start|>": 200006,
        "<|end|>": 200007, "<|message|>": 200008, "<|call|>": 200012,
    }
    reserved = {f"<|reserved_{i}|>": i for i in (200000, 200001, 200004, 200009, 200010, 200011)}
    tokens = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018, **named, **reserved}
    tokens.update((f"<|reserved_{i}|>", i) for i in range(200013, 201088))
    return tokens


ENCODINGS: dict[str, EncodingSpec] = {
    spec.name: spec
    for spec in [
        EncodingSpec(
            "r50k_base", "r50k_base.tiktoken", _OPENAI + "r50k_base.tiktoken",
            "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
            patterns.GPT2, {"<|endoftext|>": 50256}, 50257,
        ),
        EncodingSpec(
            "p50k_base", "p50k_base.tiktoken", _OPENAI + "p50k_base.tiktoken",
            "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
            patterns.GPT2, {"<|endoftext|>": 50256}, 50281,
        ),
        EncodingSpec(
            "p50k_edit", "p50k_base.tiktoken", _OPENAI + "p50k_base.tiktoken",
            "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
            patterns.GPT2,
            {"<|endoftext|>": 50256, "<|fim_prefix|>": 50281, "<|fim_middle|>": 50282,
             "<|fim_suffix|>": 50283},
            50284,
        ),
        EncodingSpec(
            "cl100k_base", "cl100k_base.tiktoken", _OPENAI + "cl100k_base.tiktoken",
            "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
            patterns.CL100K,
            {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
             "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
            100277,
        ),
        EncodingSpec(
            "o200k_base", "o200k_base.tiktoken", _OPENAI + "o200k_base.tiktoken",
            "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
            patterns.O200K, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}, 200019,
        ),
        EncodingSpec(
            "o200k_harmony", "o200k_base.tiktoken", _OPENAI + "o200k_base.tiktoken",
            "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
            patterns.O200K, _harmony_special_tokens(), 201088,
        ),
    ]
}
# GPT-2's encoding is r50k_base.
ENCODINGS["gpt2"] = ENCODINGS["r50k_base"]


def encoding_for_file(path: str | Path) -> EncodingSpec | None:
    """The known encoding a rank file's name points at (``cl100k_base.tiktoken`` …)."""
    stem = Path(path).name.lower()
    stem = stem[: -len(".tiktoken")] if stem.endswith(".tiktoken") else stem
    if stem == "gpt2":
        return ENCODINGS["r50k_base"]
    return ENCODINGS.get(stem)
