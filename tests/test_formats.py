"""Reading and writing tokenizer files, and what happens with bad ones."""

from __future__ import annotations

import json

import pytest
import tokensmith as ts
from tokensmith.errors import TokenizerFormatError, UnsupportedComponentError


def _spec(trained: ts.Tokenizer) -> dict:
    return json.loads(trained.to_str())


def test_truncated_and_malformed_files(trained: ts.Tokenizer, tmp_path) -> None:
    text = trained.to_str()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(TokenizerFormatError) as e:
        ts.load(cut)
    assert "truncated" in str(e.value) and str(cut) in str(e.value)
    with pytest.raises(TokenizerFormatError):
        ts.Tokenizer.from_str("")
    with pytest.raises(TokenizerFormatError) as e:
        ts.Tokenizer.from_str("[1, 2]")
    assert "object" in str(e.value)
    spec = _spec(trained)
    del spec["model"]
    with pytest.raises(TokenizerFormatError) as e:
        ts.Tokenizer.from_str(json.dumps(spec))
    assert "model" in str(e.value)
    spec = _spec(trained)
    del spec["model"]["vocab"]
    with pytest.raises(TokenizerFormatError) as e:
        ts.Tokenizer.from_str(json.dumps(spec))
    assert "model.vocab" in str(e.value)
    not_utf8 = tmp_path / "x.json"
    not_utf8.write_bytes(b'{"model": "\xff"}')
    with pytest.raises(TokenizerFormatError):
        ts.load(not_utf8)


def test_bad_fields_are_named(trained: ts.Tokenizer) -> None:
    spec = _spec(trained)
    spec["model"]["merges"].append("Ġzzz qqq")
    with pytest.raises(TokenizerFormatError) as e:
        ts.Tokenizer.from_str(json.dumps(spec))
    assert f"merges[{len(spec['model']['merges']) - 1}]" in str(e.value)
    spec = _spec(trained)
    spec["model"]["merges"][0] = "onlyone"
    with pytest.raises(TokenizerFormatError) as e:
        ts.Tokenizer.from_str(json.dumps(spec))
    assert "merges[0]" in str(e.value)
    spec = _spec(trained)
    spec["model"]["vocab"]["Ġthe"] = "seven"
    with pytest.raises(TokenizerFormatError) as e:
        ts.Tokenizer.from_str(json.dumps(spec))
    assert "model.vocab" in str(e.value)
    spec = _spec(trained)
    spec["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {"Regex": "(unclosed"}
    with pytest.raises(TokenizerFormatError) as e:
        ts.Tokenizer.from_str(json.dumps(spec))
    assert "pre_tokenizer" in str(e.value) and "regex" in str(e.value)
    spec = _spec(trained)
    # (a second special name of a special token's id is an alias, as o200k_harmony has;
    # an ordinary token on a special token's id is an error)
    spec["added_tokens"].append(dict(spec["added_tokens"][0], content="dup", special=False))
    with pytest.raises(TokenizerFormatError) as e:
        ts.Tokenizer.from_str(json.dumps(spec))
    assert "added_tokens" in str(e.value) and "used twice" in str(e.value)


def test_unsupported_components_are_named(trained: ts.Tokenizer) -> None:
    spec = _spec(trained)
    spec["normalizer"] = {"type": "Frobnicate"}
    with pytest.raises(UnsupportedComponentError) as e:
        ts.Tokenizer.from_str(json.dumps(spec))
    assert "normalizer" in str(e.value) and "Frobnicate" in str(e.value)
    spec = _spec(trained)
    spec["model"] = {"type": "Frobnicate", "vocab": {"a": 0}}
    with pytest.raises(UnsupportedComponentError) as e:
        ts.Tokenizer.from_str(json.dumps(spec))
    assert "Frobnicate" in str(e.value)


def test_load_paths(trained: ts.Tokenizer, tmp_path) -> None:
    with pytest.raises(FileNotFoundError):
        ts.load(tmp_path / "nope.json")
    with pytest.raises(TokenizerFormatError):
        ts.load(tmp_path)  # an empty folder
    (tmp_path / "x.model").write_bytes(b"\x00")  # not a SentencePiece model
    with pytest.raises(TokenizerFormatError, match="ModelProto"):
        ts.load(tmp_path / "x.model")
    (tmp_path / "x.vocabulary").write_bytes(b"\x00")
    with pytest.raises(UnsupportedComponentError):
        ts.load(tmp_path / "x.vocabulary")
    with pytest.raises(UnsupportedComponentError):
        trained.save(tmp_path / "x.bin")
    # a failed save leaves no file behind
    assert not (tmp_path / "x.bin").exists()


def test_vocab_merges_errors(tmp_path) -> None:
    (tmp_path / "vocab.json").write_text('{"a": 0, "b": 1}', encoding="utf-8")
    (tmp_path / "merges.txt").write_text("#version: 0.2\na b\n", encoding="utf-8")
    with pytest.raises(TokenizerFormatError) as e:
        ts.load(tmp_path)
    assert "ab" in str(e.value)  # the merged token is missing from the vocab
    (tmp_path / "merges.txt").write_text("#version: 0.2\na b c\n", encoding="utf-8")
    with pytest.raises(TokenizerFormatError) as e:
        ts.load(tmp_path)
    assert "merges.txt:2" in str(e.value)
    (tmp_path / "vocab.json").write_text("[]", encoding="utf-8")
    with pytest.raises(TokenizerFormatError):
        ts.load(tmp_path / "vocab.json")
