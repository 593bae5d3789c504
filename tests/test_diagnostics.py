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


# ------------------------------------------- every model family, after training

# Written for these tests: English, Chinese, Russian and a little code.
TRAIN_TEXTS = [
    "the lower lowest newer 分词器把文本切成小块 Кошка спит " * 3,
    "hello world x = 1; def f(): pass 中文分词 ",
] * 30
FAMILIES = {
    "bpe": {"vocab_size": 300},
    "wordpiece": {"vocab_size": 120},
    "unigram": {"vocab_size": 80, "hard_vocab_limit": False},
    "sentencepiece-bpe": {"vocab_size": 80, "hard_vocab_limit": False},
}


@pytest.fixture(scope="module")
def trained() -> dict[str, ts.Tokenizer]:
    return {m: ts.train(texts=TRAIN_TEXTS, model=m, **opts)  # type: ignore[arg-type]
            for m, opts in FAMILIES.items()}


@pytest.mark.parametrize("model", list(FAMILIES))
def test_diagnose_after_training_every_family(model: str,
                                              trained: dict[str, ts.Tokenizer]) -> None:
    tok = trained[model]
    d = ts.diagnose(tok, texts=TRAIN_TEXTS, buckets=4, name=model)  # one call
    assert d.vocab_size == len(tok.get_vocab()) - d.special_tokens
    # every ordinary token is counted once, in the histogram or apart
    assert sum(d.scripts.values()) == d.vocab_size
    assert (sum(d.length_histogram.values()) + d.partial_tokens + d.byte_fallback_tokens
            == d.vocab_size)
    assert {"Latin", "Han"} <= set(d.scripts)
    assert d.corpus_scripts is not None and set(d.corpus_scripts) == {"Latin", "Han", "Cyrillic"}
    # word markers are gone: SentencePiece's ▁ is a space, WordPiece's ## is dropped
    shown = "".join(t for t, _ in d.longest)
    assert "\u2581" not in shown and "##" not in shown
    assert d.growth and all(b.end > b.start for b in d.growth)
    if model in ("bpe", "sentencepiece-bpe"):
        assert d.growth_basis == "merge rank" and d.merges > 0 and d.note == ""
    else:
        assert d.growth_basis == "token id" and d.merges == 0
        family = "WordPiece" if model == "wordpiece" else "Unigram"
        assert d.note.startswith(f"{family} has no merges")
        assert f"note: {family} has no merges" in d.summary()
    page = d.to_html()
    for section in ("Token length distribution", "Vocabulary by script"):
        assert section in page
    assert ("Merges over time" in page) == (d.merges > 0)
    assert json.loads(d.to_json())["note"] == d.note


def test_sentencepiece_bpe_merges_come_from_the_model(trained: dict[str, ts.Tokenizer]) -> None:
    tok = trained["sentencepiece-bpe"]
    merges = json.loads(tok.to_str())["model"]["merges"]
    d = diagnose(tok)
    assert d.merges == len(merges) > 0
    assert d.merged_tokens == d.merges
    # a merge of two pieces makes a piece of at least two bytes; in characters it can
    # be one, because a leading space ("▁t") does not count as a character of the word
    assert all(b.mean_bytes >= 2 and b.mean_chars >= 1 for b in d.growth)
    assert sum(b.mean_chars for b in d.growth) / len(d.growth) > 2


@pytest.mark.parametrize("model", ["unigram", "sentencepiece-bpe"])
def test_byte_fallback_pieces_are_counted_apart(model: str) -> None:
    tok = ts.train(texts=TRAIN_TEXTS, model=model, vocab_size=300,  # type: ignore[arg-type]
                   byte_fallback=True, hard_vocab_limit=False)
    d = diagnose(tok, texts=TRAIN_TEXTS)
    assert d.byte_fallback_tokens == 256 and d.scripts["Bytes"] == 256
    assert d.partial_tokens == 0
    assert not any(t.startswith("<0x") or len(t) == 1 and ord(t) < 0x20 for t, _ in d.longest)
    assert "256 byte-fallback pieces apart" in d.summary()
    # the byte pieces do not count against a script's fair share
    assert not any("Latin" in w for w in d.warnings)


def test_byte_fallback_by_hand() -> None:
    tok = char_bpe(["a", "b", "ab"], ["a b"], byte_fallback=True, unk="<unk>")
    d = diagnose(tok)
    assert (d.vocab_size, d.special_tokens, d.merges) == (259, 1, 1)
    assert d.scripts == {"Bytes": 256, "Latin": 3}
    assert d.length_histogram == {1: 2, 2: 1}
    assert d.mean_length == pytest.approx(4 / 3)
    assert (d.byte_fallback_tokens, d.partial_tokens) == (256, 0)
    assert d.longest[0] == ("ab", 2)


def test_diagnose_command_on_trained_tokenizers(tmp_path, capsys,  # noqa: ANN001
                                                trained: dict[str, ts.Tokenizer]) -> None:
    paths = [str(trained[m].save(tmp_path / m / "tokenizer.json")) for m in FAMILIES]
    html = tmp_path / "learned.html"
    assert main(["diagnose", *paths, "--html", str(html)]) == 0
    out = capsys.readouterr().out
    for m in FAMILIES:
        assert out.count(f"\n{m}  (") + out.startswith(f"{m}  (") == 1
    assert "note: Unigram has no merges" in out and "note: WordPiece has no merges" in out
    page = html.read_text(encoding="utf-8")
    assert "Merges over time" in page and "Unigram has no merges" in page
    assert page.count("<svg") >= 3


def test_compare_report_has_the_diagnostics_section(trained: dict[str, ts.Tokenizer]) -> None:
    from tokensmith.compare import compare

    comp = compare(trained, {"mixed": TRAIN_TEXTS[:2]})
    assert set(comp.diagnostics) == set(FAMILIES)
    page = comp.to_html()
    for section in ("What each tokenizer learned", "Merges over time",
                    "Token length distribution", "Vocabulary by script"):
        assert section in page
    assert "Vocabulary by script" in comp.table()


# ---------------------------------------------------------------- residues


def _oracle_bpe_inside(tok: ts.Tokenizer, texts: list[str]) -> dict[int, int]:
    """Each emitted token's merge tree walked node by node (the slow way)."""
    vocab = tok.get_vocab()
    parts = {}
    for a, b in tok.merges:
        j = vocab[a + b]
        parts.setdefault(j, (vocab[a], vocab[b]))
    inside: dict[int, int] = {}

    def walk(j: int) -> None:
        for c in parts.get(j, ()):
            inside[c] = inside.get(c, 0) + 1
            walk(c)

    for ids in tok.encode_batch(texts):
        for i in ids:
            walk(i)
    return inside


def test_residues_of_a_bpe_are_the_nodes_of_merge_trees() -> None:
    texts = ["abcdef xyz abcdef " * 30, "abcxyz xyz " * 5, "the cat sat on the mat " * 20]
    tok = ts.train(texts=texts, vocab_size=270, special_tokens=[])
    d = diagnose(tok, texts=texts, residue_threshold=0.5, residue_min_count=1)
    assert d.residues is not None and d.unused_tokens is not None
    inside = _oracle_bpe_inside(tok, texts)
    emitted: dict[int, int] = {}
    for ids in tok.encode_batch(texts):
        for i in ids:
            emitted[i] = emitted.get(i, 0) + 1
    want = sorted(i for i, n in inside.items() if i >= 256
                  and len(tok.id_to_bytes(i)) > 1 and n / (n + emitted.get(i, 0)) >= 0.5)
    assert sorted(r.id for r in d.residues) == want and want
    for r in d.residues:
        assert (r.inside, r.emitted) == (inside[r.id], emitted.get(r.id, 0))
        assert r.ios == pytest.approx(r.inside / (r.inside + r.emitted))
    # " abc" is made on the way to " abcdef" and (nearly) never produced alone
    vocab = tok.get_vocab()
    assert "Ġabcdef" in vocab and vocab["Ġabc"] in {r.id for r in d.residues}
    learned = [i for i in range(256, tok.vocab_size) if len(tok.id_to_bytes(i)) > 1]
    assert d.unused_tokens == sum(1 for i in learned if i not in emitted)
    assert "residues on the text" in d.summary()
    assert json.loads(d.to_json())["residues"][0]["ios"] >= 0.5


def test_residues_without_merges_count_substrings() -> None:
    texts = ["unbelievable believable believe unbelief " * 20]
    tok = wordpiece()
    d = diagnose(tok, texts=texts, residue_threshold=0.01, residue_min_count=1)
    assert d.residues is not None
    emitted: dict[int, int] = {}
    for ids in tok.encode_batch(texts, add_special_tokens=False):
        for i in ids:
            emitted[i] = emitted.get(i, 0) + 1
    for r in d.residues:
        text = r.token.removeprefix("##")
        # the oracle: occurrences of the token's text inside longer emitted tokens
        n = 0
        for i, c in emitted.items():
            other = (tok.id_to_token(i) or "").removeprefix("##")
            if len(other) > len(text):
                n += c * sum(other.startswith(text, k) for k in range(len(other)))
        assert r.inside == n and r.emitted == emitted.get(r.id, 0)


@pytest.mark.parametrize("options", [{"residue_threshold": 0.0}, {"residue_threshold": 1.5},
                                     {"residue_min_count": 0}])
def test_residue_options_out_of_range_are_refused(options: dict) -> None:
    tok = ts.train(texts=["abc abd " * 20], vocab_size=260, special_tokens=[])
    with pytest.raises(ValueError, match="threshold|min_count"):
        diagnose(tok, texts=["abc"], **options)


def test_no_texts_no_residues() -> None:
    tok = ts.train(texts=["abc abd " * 20], vocab_size=260, special_tokens=[])
    d = diagnose(tok)
    assert d.residues is None and d.unused_tokens is None
    assert "residues" not in d.summary()
