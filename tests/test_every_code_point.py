"""Every Unicode code point, in context, through every byte-level tokenizer
file we have, against its reference implementation: tiktoken for the rank
files, `tokenizers` for the tokenizer.json files."""

from __future__ import annotations

import hashlib
import shutil

import pytest
import tokensmith as ts

from .adversarial import every_code_point
from .conftest import asset

CHUNKS = every_code_point()
URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


@pytest.mark.parametrize(
    "name,parts",
    [("r50k_base", ("gpt2", "r50k_base.tiktoken")),
     ("cl100k_base", ("cl100k_base", "cl100k_base.tiktoken")),
     ("o200k_base", ("o200k_base", "o200k_base.tiktoken"))],
)
def test_rank_files_against_tiktoken(name, parts, tmp_path, monkeypatch) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    src = asset(*parts)
    shutil.copyfile(src, tmp_path / hashlib.sha1(URL.format(name).encode()).hexdigest())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    real = tiktoken.get_encoding(name)
    ours = ts.load(src)
    got = ours.encode_batch(CHUNKS, disallowed_special=())
    want = real.encode_batch(CHUNKS, disallowed_special=())
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        assert a == b, f"chunk {i} (from U+{ord(CHUNKS[i][0]):04X}) differs"
    assert ours.decode_batch(got) == CHUNKS


@pytest.mark.parametrize("name", ["gpt2", "llama3", "qwen2.5", "qwen3", "deepseek-v3"])
def test_tokenizer_json_against_tokenizers(name) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    path = asset(name, "tokenizer.json")
    ours = ts.load(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    got = ours.encode_batch(CHUNKS, allowed_special="all")
    want = [e.ids for e in hf.encode_batch(CHUNKS)]
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        assert a == b, f"chunk {i} (from U+{ord(CHUNKS[i][0]):04X}) differs"


RUNS = ["a" * 100_000, " " * 100_000, "\n" * 100_000, "中" * 100_000, "1" * 100_000,
        "ab" * 50_000, "\t" * 100_000, "😀" * 50_000, " a" * 50_000]


@pytest.mark.parametrize("name", ["gpt2", "llama3", "qwen2.5", "qwen3", "deepseek-v3"])
def test_long_runs_against_tokenizers(name) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    path = asset(name, "tokenizer.json")
    ours = ts.load(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    for run in RUNS:
        got = ours.encode(run)
        assert got == hf.encode(run).ids, f"run of {run[:2]!r} differs"
        assert ours.decode(got) == run
