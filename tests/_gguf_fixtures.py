"""GGUF vocabularies built from reference tokenizer files, for the GGUF tests.

Each function gives the metadata entries that llama.cpp's converter
(``convert_hf_to_gguf.py``) writes for that kind of tokenizer: the token list in id
order with its types and scores, merges, the pre-tokenizer name and the special ids;
``write`` puts them in a tensor-less GGUF file. Keys llama.cpp needs to open the file
(``general.architecture`` and the ``llama.*`` sizes) are added so that llama.cpp's own
tokenizer can be run on the same file where it is installed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokensmith.formats._gguf_io import GGUFType as T
from tokensmith.formats._gguf_io import write_metadata
from tokensmith.formats.sentencepiece import read_model_proto

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
Entry = tuple[str, T, Any]

_ARCH: list[Entry] = [
    ("general.architecture", T.STRING, "llama"),
    ("general.name", T.STRING, "tokensmith test vocabulary"),
    ("llama.context_length", T.UINT32, 4096),
    ("llama.embedding_length", T.UINT32, 64),
    ("llama.block_count", T.UINT32, 1),
    ("llama.feed_forward_length", T.UINT32, 128),
    ("llama.attention.head_count", T.UINT32, 4),
    ("llama.attention.head_count_kv", T.UINT32, 4),
    ("llama.rope.dimension_count", T.UINT32, 16),
    ("llama.attention.layer_norm_rms_epsilon", T.FLOAT32, 1e-5),
]


def write(path: Path, entries: list[Entry]) -> Path:
    return write_metadata(path, _ARCH + entries)


def _tokens(tokens: list[str], types: list[int], scores: list[float] | None = None) -> list[Entry]:
    out: list[Entry] = [
        ("tokenizer.ggml.tokens", T.ARRAY, (T.STRING, tokens)),
        ("tokenizer.ggml.token_type", T.ARRAY, (T.INT32, types)),
    ]
    if scores is not None:
        out.append(("tokenizer.ggml.scores", T.ARRAY, (T.FLOAT32, scores)))
    return out


def _ids(**ids: int | None) -> list[Entry]:
    return [(f"tokenizer.ggml.{k}_token_id", T.UINT32, v) for k, v in ids.items() if v is not None]


def from_bpe_json(path: Path, pre: str, **flags: bool) -> list[Entry]:
    """A byte-level BPE ``tokenizer.json`` as a ``gpt2`` vocabulary named ``pre``."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    by_id: dict[int, tuple[str, int]] = {i: (t, NORMAL) for t, i in doc["model"]["vocab"].items()}
    for a in doc.get("added_tokens", []):
        by_id[a["id"]] = (a["content"], CONTROL if a["special"] else USER_DEFINED)
    n = max(by_id) + 1
    tokens = [by_id.get(i, (f"[PAD{i}]", UNUSED))[0] for i in range(n)]
    types = [by_id.get(i, ("", UNUSED))[1] for i in range(n)]
    merges = [m if isinstance(m, str) else " ".join(m) for m in doc["model"]["merges"]]
    entries = [("tokenizer.ggml.model", T.STRING, "gpt2"), ("tokenizer.ggml.pre", T.STRING, pre)]
    entries += _tokens(tokens, types)
    entries.append(("tokenizer.ggml.merges", T.ARRAY, (T.STRING, merges)))
    entries += [(f"tokenizer.ggml.{k}", T.BOOL, v) for k, v in flags.items()]
    return entries


def from_sentencepiece(path: Path, model: str, **ids: int | None) -> list[Entry]:
    """A ``.model`` file as a ``llama`` (BPE) or ``t5`` (Unigram) vocabulary."""
    proto = read_model_proto(path.read_bytes())
    tokens = [p.piece for p in proto.pieces]
    types = [p.type or NORMAL for p in proto.pieces]
    scores = [p.score for p in proto.pieces]
    spec = proto.normalizer_spec
    entries = [("tokenizer.ggml.model", T.STRING, model)]
    entries += _tokens(tokens, types, scores)
    entries.append(("tokenizer.ggml.add_space_prefix", T.BOOL, bool(spec.add_dummy_prefix)))
    if model == "t5":
        entries.append(("tokenizer.ggml.remove_extra_whitespaces", T.BOOL,
                        bool(spec.remove_extra_whitespaces)))
        if spec.precompiled_charsmap:
            entries.append(("tokenizer.ggml.precompiled_charsmap", T.ARRAY,
                            (T.UINT8, list(spec.precompiled_charsmap))))
    entries += _ids(**ids)
    return entries


def from_bert_vocab(path: Path) -> list[Entry]:
    """A BERT ``vocab.txt`` as a ``bert`` vocabulary (``▁word`` / ``piece`` tokens)."""
    words = path.read_text(encoding="utf-8").split("\n")
    if words and words[-1] == "":
        words.pop()
    specials = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}

    def phantom(t: str) -> str:
        if t.startswith("[") and t.endswith("]"):
            return t
        return t[2:] if t.startswith("##") else "\u2581" + t

    tokens = [phantom(w) for w in words]
    types = [CONTROL if w in specials else NORMAL for w in words]
    entries = [("tokenizer.ggml.model", T.STRING, "bert")]
    entries += _tokens(tokens, types)
    entries += _ids(unknown=words.index("[UNK]"), bos=words.index("[CLS]"),
                    seperator=words.index("[SEP]"), padding=words.index("[PAD]"))
    return entries
