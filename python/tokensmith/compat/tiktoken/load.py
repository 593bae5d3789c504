"""``tiktoken.load``: rank files read and written, and GPT-2's ``vocab.bpe`` +
``encoder.json`` turned into ranks. Offline: a URL of a known OpenAI file is found as
:func:`tokensmith.load` finds it (caches, data packages, one checked download)."""

from __future__ import annotations

import base64
import hashlib
import json
import os

from ... import _core, pretrained

__all__ = ["read_file", "read_file_cached", "load_tiktoken_bpe", "dump_tiktoken_bpe",
           "data_gym_to_mergeable_bpe_ranks"]


def read_file(blobpath: str) -> bytes:
    """The bytes of a local file, or of a known OpenAI encoding's URL."""
    if blobpath.startswith(("http://", "https://")):
        spec = next((s for s in pretrained.ENCODINGS.values() if s.url == blobpath), None)
        if spec is None:
            raise ValueError(f"{blobpath}: tokensmith fetches only the known encodings' rank "
                             f"files; download it and pass its path")
        return pretrained.locate(spec.name).read_bytes()
    with open(blobpath, "rb") as f:
        return f.read()


def read_file_cached(blobpath: str, expected_hash: str | None = None) -> bytes:
    """:func:`read_file`, checked against ``expected_hash`` (SHA-256) when given."""
    data = read_file(blobpath)
    if expected_hash is not None and hashlib.sha256(data).hexdigest() != expected_hash:
        raise ValueError(f"Hash mismatch for data downloaded from {blobpath} (expected "
                         f"{expected_hash}). This may indicate a corrupted download.")
    return data


def load_tiktoken_bpe(tiktoken_bpe_file: str, expected_hash: str | None = None) -> dict[bytes, int]:
    """A rank file as ``{token bytes: rank}``."""
    ranks: dict[bytes, int] = {}
    for line in read_file_cached(tiktoken_bpe_file, expected_hash).splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def dump_tiktoken_bpe(bpe_ranks: dict[bytes, int], tiktoken_bpe_file: str) -> None:
    """Write ``{token bytes: rank}`` as a rank file (lines in rank order)."""
    with open(os.fspath(tiktoken_bpe_file), "wb") as f:
        for token, rank in sorted(bpe_ranks.items(), key=lambda kv: kv[1]):
            f.write(base64.b64encode(token) + b" %d\n" % rank)


def data_gym_to_mergeable_bpe_ranks(vocab_bpe_file: str, encoder_json_file: str,
                                    vocab_bpe_hash: str | None = None,
                                    encoder_json_hash: str | None = None) -> dict[bytes, int]:
    """GPT-2's ``vocab.bpe`` (merges) and ``encoder.json`` as tiktoken ranks.

    The single bytes come first, the printable ones (not the space) in byte order, then
    the others; then one rank per merge, in the file's order. ``encoder.json`` must
    hold the same tokens (special tokens aside), else :class:`ValueError`."""
    # GPT-2's files spell each byte as one printable character
    char_to_byte = {_core.bytes_to_unicode(bytes([b])): b for b in range(256)}
    shown = [b for b in range(256) if chr(b).isprintable() and b != 0x20]
    order = shown + [b for b in range(256) if b not in shown]
    ranks = {bytes([b]): r for r, b in enumerate(order)}

    def raw(token: str) -> bytes:
        return bytes(char_to_byte[c] for c in token)

    merges = read_file_cached(vocab_bpe_file, vocab_bpe_hash).decode("utf-8").split("\n")
    for line in merges[1:]:  # (the first line is the format's version)
        if line.strip():
            left, right = line.split()
            ranks[raw(left) + raw(right)] = len(ranks)
    encoder = json.loads(read_file_cached(encoder_json_file, encoder_json_hash))
    listed = {raw(k): v for k, v in encoder.items()
              if k not in ("<|endoftext|>", "<|startoftext|>")}
    if listed != ranks:
        raise ValueError(f"{encoder_json_file} does not hold the tokens of {vocab_bpe_file}")
    return ranks
