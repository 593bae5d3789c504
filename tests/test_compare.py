"""tokensmith.compare, the HTML report and the compare / evaluate commands."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import tokensmith as ts
from tokensmith.cli import main
from tokensmith.compare import compare, format_table, vocabulary_overlap
from tokensmith.errors import EmptyTextError, EvaluationError
from tokensmith.evaluate import compression, evaluate
from tokensmith.report import bar_chart, heatmap, line_chart, stacked_bars

from ._measure_helpers import bytes_only, wordpiece
from .conftest import asset
from .test_evaluate import DOCS, PARALLEL

# Mixed Chinese-English text written for these tests.
MIXED = [
    "Tokenizers turn text into integers. 分词器把文本切成整数。\n",
    "GPT-2 用字节级 BPE，BERT 用 WordPiece，T5 用 Unigram。 Each cuts 中文 differently.\n",
]


@pytest.fixture(scope="module")
def pair() -> dict[str, ts.Tokenizer]:
    return {"wp": wordpiece(), "bytes": bytes_only()}


def test_compare_matches_evaluate(pair: dict[str, ts.Tokenizer]) -> None:
    comp = compare(pair, {"docs": DOCS, "zh": ["我爱猫"]}, diagnostics=False)
    assert comp.names == ["wp", "bytes"] and comp.corpora == ["docs", "zh"]
    assert comp.models == {"wp": "WordPiece", "bytes": "byte-level BPE"}
    assert comp.results["wp"]["docs"].compression == compression(pair["wp"], DOCS)
    assert comp.results["bytes"]["zh"].compression is not None
    assert comp.results["bytes"]["zh"].compression.tokens == 9
    # the WordPiece vocabulary cannot spell 我爱猫: a warning, not an error
    assert any(w.startswith("wp on zh:") and "unknown" in w for w in comp.warnings)


def test_vocabulary_overlap_by_hand(pair: dict[str, ts.Tokenizer]) -> None:
    # wp: the cat s sat mat m at c (8); bytes: 128 ASCII characters + 128 partial bytes.
    # Shared: s, m, c -> 3 of 8 + 256 - 3 = 261.
    jaccard, shared = vocabulary_overlap(pair["wp"], pair["bytes"])
    assert shared == 3 and jaccard == pytest.approx(3 / 261)
    comp = compare(pair, DOCS, diagnostics=False)
    assert comp.shared == [[8, 3], [3, 256]]
    assert comp.overlap[0][1] == pytest.approx(3 / 261) and comp.overlap[0][0] == 1.0


def test_compare_parity_and_terms(pair: dict[str, ts.Tokenizer]) -> None:
    comp = compare(pair, None, terms=["cats", "", "mat"], parallel=PARALLEL, pivot="en",
                   diagnostics=False)
    assert comp.corpora == [] and comp.pivot == "en"
    assert comp.parity["bytes"].premium("ru") == pytest.approx(1.5)
    assert [r.tokens for r in comp.terms["wp"].terms] == [2, 1]
    assert [r.tokens for r in comp.terms["bytes"].terms] == [4, 3]
    assert comp.warnings[0] == "terms: 1 blank term skipped"
    # the WordPiece vocabulary spells almost none of the sentences: said, per tokenizer
    assert "parity (wp): en: 80% of the tokens are unknown" in comp.warnings[1]
    assert not any(w.startswith("parity (bytes)") for w in comp.warnings)
    table = comp.table()
    assert "Parity" in table and "Terms" in table and "[cat][s]" in table


def test_missing_pivot_falls_back_with_a_warning(pair: dict[str, ts.Tokenizer]) -> None:
    comp = compare(pair, parallel={"de": ["Hallo"], "fr": ["Bonjour"]}, diagnostics=False)
    assert comp.pivot == "de" and comp.parity["bytes"].premium("fr") == pytest.approx(7 / 5)
    assert any("'en' is not among" in w for w in comp.warnings)


def test_bad_inputs_give_warnings_and_a_report(tmp_path: Path,
                                               pair: dict[str, ts.Tokenizer]) -> None:
    broken = tmp_path / "broken" / "tokenizer.json"
    broken.parent.mkdir()
    broken.write_text("{ not json")
    uneven = {"en": ["The cat sleeps.", "Good morning!", "extra"], "de": PARALLEL["de"]}
    comp = compare([pair["bytes"], str(broken), str(tmp_path / "absent.json")],
                   {"docs": DOCS, "empty": ["", ""]}, terms=["", "cats"], parallel=uneven,
                   diagnostics=False)
    assert comp.names == ["tokenizer 1"]
    text = "\n".join(comp.warnings)
    assert "broken: could not load" in text and "absent: could not load" in text
    assert "text 'empty' is empty" in text
    assert "terms: 1 blank term skipped" in text
    assert "different numbers of lines (en: 3, de: 2)" in text
    assert comp.parity["tokenizer 1"].lines == 2
    page = comp.to_html()
    assert "could not load" in page and "<svg" in page


def test_nothing_measurable_is_a_typed_error(tmp_path: Path,
                                             pair: dict[str, ts.Tokenizer]) -> None:
    with pytest.raises(EvaluationError, match="no tokenizer could be loaded"):
        compare([str(tmp_path / "nope.json")], DOCS)
    with pytest.raises(EmptyTextError):
        compare(pair, {"a": [""], "b": []})
    with pytest.raises(EvaluationError, match="names"):
        compare([pair["wp"]], DOCS, names=["a", "b"])


def test_names_are_unique_and_taken_from_paths(tmp_path: Path) -> None:
    a = wordpiece().save(tmp_path / "alpha" / "tokenizer.json")
    comp = compare([str(a), str(a), wordpiece()], DOCS, diagnostics=False)
    assert comp.names == ["alpha", "alpha (2)", "tokenizer 3"]


def test_json_is_complete(pair: dict[str, ts.Tokenizer]) -> None:
    comp = compare(pair, {"docs": DOCS}, terms=["cats"], parallel=PARALLEL)
    data = json.loads(comp.to_json())
    assert [t["name"] for t in data["tokenizers"]] == ["wp", "bytes"]
    assert data["results"]["wp"]["docs"]["fertility"]["fertility"] == pytest.approx(7 / 6)
    assert data["parity"]["bytes"]["languages"]["ru"]["tokens"] == 42
    assert data["terms"]["wp"]["terms"][0]["pieces"] == ["cat", "s"]
    assert data["vocabulary_overlap"]["shared"][0][1] == 3
    assert data["diagnostics"]["wp"]["scripts"] == {"Latin": 8}


def test_html_report_is_self_contained(pair: dict[str, ts.Tokenizer], tmp_path: Path) -> None:
    comp = compare(pair, {"docs": DOCS, "zh": ["我爱猫"]}, terms=["cats", "<b>&"],
                   parallel=PARALLEL)
    path = comp.save_html(tmp_path / "out" / "report.html")
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count("<svg") >= 8  # bars, histograms, parity, overlap, diagnostics
    assert "<script" not in page and "<link" not in page and "<img" not in page
    urls = set(re.findall(r"https?://[^\s\"'<>]+", page))
    assert urls <= {"http://www.w3.org/2000/svg"}
    assert "<b>&" not in page and "&lt;b&gt;&amp;" in page  # text is escaped
    for section in ("Cost", "Fertility", "Tokens per language", "Vocabulary overlap",
                    "Document lengths: zh", "Merges over time", "Vocabulary by script"):
        assert section in page


def test_svg_helpers_handle_edge_cases() -> None:
    assert "<rect" not in bar_chart(["a"], [("s", [None])])
    assert bar_chart([], []).startswith("<svg")
    assert "polyline" in line_chart([("s", [(0.0, 1.0), (1.0, float("nan")), (2.0, 3.0)])])
    assert "100%" in heatmap(["a"], [[1.0]])
    assert "other" in stacked_bars([("t", {"Latin": 0.5})], ["Latin"])


def test_tables_text_and_markdown() -> None:
    rows = [["x|y", "1"], ["分词", "22"]]
    text = format_table(["name", "n"], rows)
    assert text.splitlines()[0].startswith("name") and text.splitlines()[3].endswith("22")
    md = format_table(["name", "n"], rows, "markdown")
    assert md.splitlines()[1] == "|---|---:|" and "x\\|y" in md


def test_classic_gpt2_bert_t5_on_mixed_text(tmp_path: Path) -> None:
    gpt2 = asset("gpt2", "tokenizer.json")
    bert = asset("bert-base-uncased", "tokenizer.json")
    t5 = asset("t5", "tokenizer.json")
    comp = compare([gpt2, bert, t5], {"mixed": MIXED})
    assert comp.names == ["gpt2", "bert-base-uncased", "t5"]
    assert comp.models == {"gpt2": "byte-level BPE", "bert-base-uncased": "WordPiece",
                           "t5": "Unigram"}
    cov = {n: comp.results[n]["mixed"].coverage for n in comp.names}
    assert cov["gpt2"] is not None and cov["gpt2"].unknown_tokens == 0
    assert cov["bert-base-uncased"] is not None and cov["bert-base-uncased"].unknown_tokens > 0
    assert cov["t5"] is not None and cov["t5"].unknown_tokens > 0
    assert evaluate(gpt2, MIXED).compression == comp.results["gpt2"]["mixed"].compression


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_compare_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wp = str(wordpiece().save(tmp_path / "wp" / "tokenizer.json"))
    by = str(bytes_only().save(tmp_path / "bytes" / "tokenizer.json"))
    docs = _write(tmp_path / "docs.txt", "the cats sat\n\nthe mat\n\ndog\n")
    terms = _write(tmp_path / "terms.txt", "cats\n\nmat\n")
    par = [_write(tmp_path / f"{k}.txt", "\n".join(v) + "\n") for k, v in PARALLEL.items()]
    html = tmp_path / "report.html"
    code = main(["compare", wp, by, "--text", docs, str(tmp_path / "missing.txt"),
                 "--terms", terms, "--parallel", *par, "--html", str(html),
                 "--context-length", "2"])
    out = capsys.readouterr()
    assert code == 0
    assert "wp" in out.out and "bytes" in out.out and "> 2 tok" in out.out
    assert "missing.txt: cannot read" in out.out and "1 blank term skipped" in out.out
    assert "wrote" in out.err and "<svg" in html.read_text(encoding="utf-8")
    assert main(["compare", wp, by, "--text", docs, "--json", "--no-diagnostics"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["results"]["wp"]["docs"]["lengths"]["documents"] == 3
    assert data["results"]["wp"]["docs"]["compression"]["tokens"] == 7
    assert main(["compare", wp, "--string", "the cats", "--markdown"]) == 0
    assert "| wp | string |" in capsys.readouterr().out


def test_compare_command_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wp = str(wordpiece().save(tmp_path / "wp.json"))
    assert main(["compare", wp]) == 2
    assert "nothing to measure" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "none.json"), "--string", "x"]) == 2
    assert "no tokenizer could be loaded" in capsys.readouterr().err
    empty = _write(tmp_path / "empty.txt", "")
    assert main(["compare", wp, "--text", empty]) == 2
    assert "no text to measure" in capsys.readouterr().err
    assert main(["compare", wp, "--string", "x", "--max-bytes", "0"]) == 2
    capsys.readouterr()


def test_max_bytes_cuts_after_a_newline(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    wp = str(wordpiece().save(tmp_path / "wp.json"))
    docs = _write(tmp_path / "d.txt", "the mat\nthe cats sat\n")
    assert main(["compare", wp, "--text", docs, "--max-bytes", "12", "--json",
                 "--docs", "lines"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["results"]["wp"]["d"]["compression"]["characters"] == 8  # "the mat\n"


def test_evaluate_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wp = str(wordpiece().save(tmp_path / "wp" / "tokenizer.json"))
    docs = _write(tmp_path / "docs.txt", "the cats sat\n\nthe mat\n\ndog\n")
    assert main(["evaluate", wp, "--text", docs, "--terms", docs]) == 0
    out = capsys.readouterr().out
    assert out.startswith("on docs: wp  (WordPiece, 8 tokens)")
    assert "fertility     1.167 tokens/word over 6 words" in out
    assert "Terms" in out and "warning:" in out


def test_segmenter_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    by = str(bytes_only().save(tmp_path / "bytes.json"))
    # str.split: "我爱 北京" is two words, of 6 bytes each
    assert main(["compare", by, "--string", "我爱 北京", "--segmenter", "builtins:str.split",
                 "--json", "--no-diagnostics"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["results"]["bytes"]["string"]["fertility"]["fertility"] == 6.0
    assert main(["compare", by, "--string", "x", "--segmenter", "nosuchmodule:f"]) == 2
    assert "nosuchmodule" in capsys.readouterr().err
    assert main(["compare", by, "--string", "x", "--segmenter", "json"]) == 2
    assert "MODULE:FUNCTION" in capsys.readouterr().err
