"""``tokenizer.json`` written back as it was read: scores to the last digit, merges in
the file's own form, byte-level vocabularies' plain-text entries, ``""`` prefixes.

tokensmith parses scores exactly as ``tokenizers`` does (its float parsing can be one
unit in the last place off, and the Unigram encoder must break ties as it does), and
keeps the file's own spelling for saving."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tokensmith as ts

from .conftest import ASSETS

tokenizers = pytest.importorskip("tokenizers")

# scores whose shortest decimal form serde_json's default parsing misses by one unit in
# the last place (T5's file has the first)
SCORES = [-2.0122928619384766, -3.9598512649536133, -13.769815444946289, -0.1, -7.5]


def _unigram_json() -> str:
    pieces = [["<unk>", 0.0], ["\u2581", -1.5]]
    pieces += [[c, s] for c, s in zip("abcde", SCORES, strict=True)]
    pieces += [["ab", -2.0122928619384766], ["\u2581ab", -9.25]]
    spec = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581",
                          "prepend_scheme": "always", "split": True},
        "post_processor": None,
        "decoder": {"type": "Metaspace", "replacement": "\u2581",
                    "prepend_scheme": "always", "split": True},
        "model": {"type": "Unigram", "unk_id": 0, "vocab": pieces, "byte_fallback": False},
    }
    return json.dumps(spec, indent=2, ensure_ascii=False)


def test_unigram_scores_are_saved_as_written() -> None:
    text = _unigram_json()
    tok = ts.Tokenizer.from_str(text)
    saved = json.loads(tok.to_str())
    assert saved["model"]["vocab"] == json.loads(text)["model"]["vocab"]
    assert tok.to_str() == text  # the whole file, byte for byte
    # and encoding still breaks ties as tokenizers does
    theirs = tokenizers.Tokenizer.from_str(text)
    for t in ["ab abba", "cab dab eab", "a b c d e"]:
        assert tok.encode(t) == theirs.encode(t).ids


def test_saving_twice_gives_the_same_bytes() -> None:
    first = ts.Tokenizer.from_str(_unigram_json()).to_str()
    assert ts.Tokenizer.from_str(first).to_str() == first


def _asset_files() -> list[Path]:
    files = sorted(ASSETS.glob("*/tokenizer.json"))
    if not files:
        pytest.skip(f"no tokenizer.json under {ASSETS} (../shared/assets is optional)")
    return files


def test_files_in_the_form_tokenizers_writes_come_back_byte_identical() -> None:
    same = 0
    for path in _asset_files():
        raw = path.read_text(encoding="utf-8")
        if tokenizers.Tokenizer.from_file(str(path)).to_str(pretty=True) != raw:
            continue  # a file in an older or hand-made form (tokenizers changes it too)
        assert ts.Tokenizer.from_file(str(path)).to_str() == raw, path
        same += 1
    assert same >= 1, "no asset file is in the form tokenizers writes"


def test_every_file_keeps_its_vocabulary_scores_and_merges() -> None:
    for path in _asset_files():
        raw = json.loads(path.read_text(encoding="utf-8"))
        tok = ts.Tokenizer.from_file(str(path))
        saved = tok.to_str()
        model, back = raw["model"], json.loads(saved)["model"]
        assert back["vocab"] == model["vocab"], path  # Unigram scores exactly
        if "merges" in model:
            as_pairs = [m.split(" ") if isinstance(m, str) else m for m in model["merges"]]
            assert back["merges"] == as_pairs or back["merges"] == model["merges"], path
        assert ts.Tokenizer.from_str(saved).to_str() == saved, path
