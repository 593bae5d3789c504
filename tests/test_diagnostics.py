"""tokensmith.diagnostics on hand-built vocabularies, and the diagnose command."""

from __future__ import annotations

import json

import pytest
import tokensmith as ts
from tokensmith.cli import main
from tokensmith.diagnostics import diagnose, letter_scripts, script_of, token_script
from tokensmith.report import render_diagnostics

from ._measure_helpers import bytes_only, char_bpe, wordpiece
from .conftest import asset


def test_script_of_letters() -> None:
    cases = {
        "a": "Latin", "é": "Latin", "Ａ": "Latin", "Я": "Cyrillic", "Ω": "Greek",
        "ب": "Arabic", "א": "Hebrew", "中": "Han", "𠀀": "Han", "あ": "Hiragana",
        "ア": "Katakana", "ｱ": "Katakana", "ー": "Katakana", "한": "Hangul",
        "क": "Devanagari", "ก": "Thai",
    }
    assert {ch: script_of(ch) for ch in cases} == cases
    for not_a_letter in "1 .,!😀\u0301":
        assert script_of(not_a_letter) is None


def test_token_script_is_the_majority_of_letters() -> None:
    assert token_script("abЖ") == "Latin"
    assert token_script("Жab") == "Latin"  # 2 Latin against 1 Cyrillic
    assert token_script("Жa") == "Cyrillic"  # a tie: the first seen
    assert token_script(" 中文") == "Han"
    assert token_script("123") == "Common"
    assert token_script(" ") == "Common"


def test_diagnose_bpe_by_hand() -> None:
    tok = char_bpe(["a", "b", "中", "文", "ab", "中文"], ["a b", "中 文"])
    d = diagnose(tok, buckets=2, name="hand")
    assert (d.name, d.model, d.vocab_size, d.merges) == ("hand", "BPE", 6, 2)
    assert d.growth_basis == "merge rank"
    assert [(b.start, b.end, b.mean_chars, b.mean_bytes) for b in d.growth] == [
        (0, 1, 2.0, 2.0), (1, 2, 2.0, 6.0)]
    assert d.length_histogram == {1: 4, 2: 2}
    assert d.mean_length == pytest.approx(8 / 6)
    assert d.scripts == {"Latin": 3, "Han": 3}
    assert d.script_share == {"Latin": 0.5, "Han": 0.5}
    assert d.partial_tokens == 0
    assert d.longest[:2] == [("ab", 2), ("中文", 2)]


def test_diagnose_without_merges_uses_id_order() -> None:
    d = diagnose(wordpiece(), buckets=2)
    # ordinary tokens in id order: the cat ##s sat | mat m ##at c
    assert d.growth_basis == "token id" and d.merges == 0
    assert [b.mean_chars for b in d.growth] == [pytest.approx(10 / 4), pytest.approx(7 / 4)]
    assert d.length_histogram == {1: 3, 2: 1, 3: 4}
    assert d.scripts == {"Latin": 8}


def test_byte_tokens_are_partial() -> None:
    d = diagnose(bytes_only())
    assert d.partial_tokens == 128  # bytes 0x80-0xFF are parts of characters
    assert d.scripts["Bytes"] == 128
    assert d.scripts["Latin"] == 52  # A-Z a-z
    assert sum(d.scripts.values()) == 256


def test_scripts_of_the_text_and_the_fair_share_warning() -> None:
    assert letter_scripts(["ab 中文文", "1 2 3"]) == {"Han": 0.6, "Latin": 0.4}
    tok = char_bpe(["a", "b", "ab"], ["a b"])
    d = diagnose(tok, texts=["分词器把文本切成小块 ab"])
    assert d.corpus_scripts is not None and d.corpus_scripts["Han"] == pytest.approx(10 / 12)
    assert any("Han is 83% of the letters" in w for w in d.warnings)
    no_letters = diagnose(tok, texts=["123 !!"])
    assert any("no letters" in w for w in no_letters.warnings)


def test_diagnose_a_trained_tokenizer_learns_chinese() -> None:
    tok = ts.train(texts=["low lower lowest 分词器 分词 文本 " * 40], vocab_size=300)
    d = diagnose(tok)
    assert d.scripts.get("Han", 0) > 0 and d.merges == len(tok.merges) > 0
    assert d.to_dict()["length_histogram"]
    assert "vocabulary by script" in d.summary()


def test_diagnose_real_tokenizers() -> None:
    gpt2 = diagnose(ts.load(asset("gpt2", "tokenizer.json")), buckets=5)
    assert gpt2.merges == 50_000 and gpt2.growth[-1].mean_chars > gpt2.growth[0].mean_chars
    assert max(gpt2.scripts, key=lambda s: gpt2.scripts[s]) == "Latin"
    zh = diagnose(ts.load(asset("bert-base-chinese", "tokenizer.json")))
    assert max(zh.scripts, key=lambda s: zh.scripts[s]) == "Han"


def test_html_and_json(tmp_path) -> None:  # noqa: ANN001
    d = diagnose(char_bpe(["a", "b", "ab"], ["a b"]), texts=["ab"])
    page = render_diagnostics(d)
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "<script" not in page
    assert json.loads(d.to_json())["scripts"] == {"Latin": 3}


def test_diagnose_command(tmp_path, capsys) -> None:  # noqa: ANN001
    path = wordpiece().save(tmp_path / "wp" / "tokenizer.json")
    text = tmp_path / "t.txt"
    text.write_text("the cats sat 猫\n", encoding="utf-8")
    html = tmp_path / "d.html"
    assert main(["diagnose", str(path), "--text", str(text), "--html", str(html)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("wp  (WordPiece") and "Latin" in out
    assert "<svg" in html.read_text(encoding="utf-8")
    assert main(["diagnose", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["scripts"] == {"Latin": 8}
    assert main(["diagnose", str(tmp_path / "missing.json")]) == 2
    assert "error" in capsys.readouterr().err
