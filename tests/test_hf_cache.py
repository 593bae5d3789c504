"""Names that are not files: Hugging Face repositories from the local hub cache, and
OpenAI model names through the encoding tiktoken maps them to. Nothing is downloaded."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import tokensmith as ts
from tokensmith import pretrained
from tokensmith.pretrained import PretrainedNotFoundError, UnknownEncodingError

from .conftest import ASSETS, make_text


@pytest.fixture()
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty hub cache that is the only one (HF_HUB_CACHE), in a home of its own."""
    for var in ("HF_HOME", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("TOKENSMITH_OFFLINE", "1")
    return tmp_path / "hub"


@pytest.fixture(scope="module")
def trained() -> ts.Tokenizer:
    return ts.train(texts=[make_text(i) for i in range(20)], vocab_size=300)


def _snapshot(hub: Path, repo: str, commit: str, with_ref: bool = True) -> Path:
    folder = hub / ("models--" + repo.replace("/", "--"))
    snap = folder / "snapshots" / commit
    snap.mkdir(parents=True)
    if with_ref:
        (folder / "refs").mkdir(exist_ok=True)
        (folder / "refs" / "main").write_text(commit)
    return snap


def test_a_repository_in_the_hub_cache_loads_by_name(hub: Path, trained: ts.Tokenizer) -> None:
    snap = _snapshot(hub, "acme/tiny-model", "0123abc")
    trained.save(snap / "tokenizer.json")
    tok = ts.load("acme/tiny-model")
    assert tok.encode("hello world") == trained.encode("hello world")


def test_the_branch_ref_picks_the_snapshot(hub: Path, trained: ts.Tokenizer) -> None:
    other = ts.train(texts=["zzz yyy " * 50], vocab_size=270)
    old = _snapshot(hub, "acme/m", "old1", with_ref=False)
    other.save(old / "tokenizer.json")
    new = _snapshot(hub, "acme/m", "new2")
    trained.save(new / "tokenizer.json")
    assert ts.load("acme/m").vocab_size == trained.vocab_size
    # without refs/main: the newest snapshot holding a tokenizer
    (hub / "models--acme--m" / "refs" / "main").unlink()
    shutil.rmtree(new)
    assert ts.load("acme/m").vocab_size == other.vocab_size


def test_hf_home_is_looked_in_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  trained: ts.Tokenizer) -> None:
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    snap = _snapshot(tmp_path / "hf" / "hub", "org/bert-ish", "c0ffee")
    trained.save(snap / "tokenizer.json")
    assert ts.load("org/bert-ish").vocab_size == trained.vocab_size


def test_a_repository_not_in_the_cache_says_where_it_looked(hub: Path) -> None:
    with pytest.raises(PretrainedNotFoundError) as info:
        ts.load("meta-llama/Meta-Llama-3-8B")
    message = str(info.value)
    assert str(hub / "models--meta-llama--Meta-Llama-3-8B") in message
    assert "huggingface-cli download meta-llama/Meta-Llama-3-8B" in message
    assert isinstance(info.value, FileNotFoundError)
    assert str(hub / "models--meta-llama--Meta-Llama-3-8B") in info.value.searched


def test_model_names_resolve_to_their_encoding(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    source = ASSETS / "o200k_base" / "o200k_base.tiktoken"
    if not source.is_file():
        pytest.skip(f"{source} is not present (../shared/assets is optional)")
    shutil.copyfile(source, tmp_path / "o200k_base.tiktoken")
    monkeypatch.setenv("TOKENSMITH_CACHE", str(tmp_path))
    monkeypatch.setenv("TOKENSMITH_OFFLINE", "1")
    for name in ("gpt-4o", "gpt-4o-2024-05-13", "o1-mini"):
        tok = ts.load(name)
        assert tok.vocab_size == pretrained.get_spec("o200k_base").n_vocab
        assert tok.encode("hello world") == [24912, 2375]


def test_an_unknown_name_is_still_an_unknown_name(hub: Path) -> None:
    with pytest.raises(UnknownEncodingError, match="neither an existing file"):
        ts.load("no-such-tokenizer")
