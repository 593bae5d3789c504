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
                    "Document lengths: zh", "Vocabulary by script",
                    # neither tokenizer has a merge: lengths follow the token ids
                    "Token length in token id order (no merges)", "WordPiece has no merges"):
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


# ------------------------------------------- bad input on the command line


@pytest.fixture
def bad_inputs(tmp_path: Path) -> dict[str, str]:
    broken = tmp_path / "broken" / "tokenizer.json"
    broken.parent.mkdir()
    broken.write_text("{ not json", encoding="utf-8")
    return {
        "wp": str(wordpiece().save(tmp_path / "wp" / "tokenizer.json")),
        "broken": str(broken),
        "docs": _write(tmp_path / "docs.txt", "the cats sat\n\nthe mat\n"),
        "empty": _write(tmp_path / "empty.txt", ""),
        "zh": _write(tmp_path / "zh.txt", "猫在睡觉。\n"),  # nothing of it is in the vocabulary
        "terms": _write(tmp_path / "terms.txt", "cats\n\n   \nmat\n\n"),
        "blank_terms": _write(tmp_path / "blank.txt", "\n  \n\n"),
        "en": _write(tmp_path / "en.txt", "the cats sat\nthe mat\nthe cat\n"),
        "de": _write(tmp_path / "de.txt", "die Katzen\ndie Matte\n"),
        "html": str(tmp_path / "report.html"),
    }


def test_compare_command_bad_input_gives_warnings_and_a_report(
        bad_inputs: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    f = bad_inputs
    code = main(["compare", f["wp"], f["broken"], "--text", f["docs"], f["empty"], f["zh"],
                 "--terms", f["terms"], "--parallel", f["en"], f["de"], "--html", f["html"],
                 "--no-diagnostics"])
    out = capsys.readouterr().out
    assert code == 1  # a tokenizer was left out: the run did not do all it was asked
    expected = [
        "broken: could not load",  # the tokenizer that fails to load
        "not valid JSON",  # ... and why
        "text 'empty' is empty: nothing measured on it",
        "wp on zh: 100.00% of the tokens are unknown",  # a language it cannot represent
        "the tokenizer cannot represent some of this text, e.g. 猫 在 睡 觉",
        "terms: 3 blank terms skipped",
        "different numbers of lines (en: 3, de: 2)",
        "Only the first 2 lines of each were compared",
    ]
    for message in expected:
        assert message in out, message
    # and what could be measured is measured
    assert re.search(r"^wp\s+docs\s+6\s", out, re.M)  # the cats sat | the mat: 4 + 2 tokens
    assert "[cat][s]" in out and "spread (max/min)" in out
    page = Path(f["html"]).read_text(encoding="utf-8")
    assert "could not load" in page and "is empty" in page and "<svg" in page
    assert main(["compare", f["wp"], f["broken"], "--text", f["docs"], f["empty"],
                 "--json", "--no-diagnostics"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["texts"] == ["docs"] and data["results"]["wp"]["docs"]["compression"]["tokens"] == 6
    assert any("could not load" in w for w in data["warnings"])


def test_blank_term_list_on_the_command_line(bad_inputs: dict[str, str],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    f = bad_inputs
    assert main(["compare", f["wp"], "--text", f["docs"], "--terms", f["blank_terms"],
                 "--no-diagnostics"]) == 0
    out = capsys.readouterr().out
    assert "terms: no terms to measure: the term list is empty or only blank lines" in out
    assert "Cost" in out and "Terms" not in out.split("Warnings")[0]


def test_evaluate_command_bad_input(bad_inputs: dict[str, str],
                                    capsys: pytest.CaptureFixture[str]) -> None:
    f = bad_inputs
    assert main(["evaluate", f["wp"], "--text", f["docs"], f["empty"], f["zh"],
                 "--terms", f["terms"], "--parallel", f["en"], f["de"], "--html", f["html"],
                 "--no-diagnostics"]) == 0
    out = capsys.readouterr().out
    assert "on docs: wp" in out and "on zh: wp" in out
    for message in ("text 'empty' is empty", "cannot represent", "3 blank terms skipped",
                    "different numbers of lines"):
        assert any(line.startswith("warning: ") and message in line
                   for line in out.splitlines()), message
    assert "<svg" in Path(f["html"]).read_text(encoding="utf-8")
    # one tokenizer, and it fails to load: nothing to measure, one clear line
    assert main(["evaluate", f["broken"], "--text", f["docs"]]) == 2
    err = capsys.readouterr().err
    assert "no tokenizer could be loaded" in err and "not valid JSON" in err
    assert len(err.strip().splitlines()) == 1


def test_diagnose_command_with_a_tokenizer_that_fails_to_load(
        bad_inputs: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    f = bad_inputs
    assert main(["diagnose", f["wp"], f["broken"], "--text", f["empty"]]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("wp  (WordPiece") and "could not load" in out.err
    assert main(["diagnose", f["broken"]]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def _readme_compare_example() -> tuple[str, list[str], str]:
    """The README's classic comparison: the text it writes, the command, its output."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    text = re.search(r"^printf '(.*)' > mixed\.txt$", readme, re.M)
    command = re.search(r"^(tokensmith compare gpt2/.*?)\n```", readme, re.M | re.S)
    output = re.search(r"<!-- compare-output:.*?-->\n```text\n(.*?)```", readme, re.S)
    assert text and command and output, "the README's comparison example moved"
    args = command.group(1).replace("\\\n", " ").split()[1:]
    return text.group(1).replace("\\n", "\n"), args, output.group(1)


def test_readme_comparison_output_is_real(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    text, args, shown = _readme_compare_example()
    assert args[:4] == ["compare", "gpt2/tokenizer.json", "bert-base-uncased/tokenizer.json",
                        "t5/tokenizer.json"]
    for name in ("gpt2", "bert-base-uncased", "t5"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "tokenizer.json").symlink_to(asset(name, "tokenizer.json"))
    (tmp_path / "mixed.txt").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(args) == 0
    out = capsys.readouterr()
    assert out.out == shown
    assert "wrote report.html" in out.err
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "unk 21%" in page and "unk 5%" in page  # BERT and T5 cannot spell the Chinese


def test_unknown_tokens_are_marked_on_the_plots(pair: dict[str, ts.Tokenizer]) -> None:
    page = compare(pair, {"zh": ["猫在睡觉。"], "en": ["the cats sat"]}).to_html()
    assert page.count(">unk 100%</text>") == 2  # wp on zh: bytes per token and fertility
    assert "it cannot represent the text" in page
    assert ">unk " not in compare(pair, {"en": ["the cats sat"]}).to_html()
    svg = bar_chart(["a", "b"], [("s", [0.95, 0.25])], pct=True, notes=[[None, "unk 3%"]])
    assert svg.count("unk 3%") == 1 and ">100%<" in svg and ">120%<" not in svg  # no 120% tick


def test_trained_loaded_and_named_tokenizers_side_by_side(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    from tokensmith import pretrained

    source = asset("gpt2", "r50k_base.tiktoken")
    cache = tmp_path / "cache"
    cache.mkdir()
    shutil.copyfile(source, cache / pretrained.get_spec("gpt2").filename)
    monkeypatch.setenv("TOKENSMITH_CACHE", str(cache))
    monkeypatch.setenv("TOKENSMITH_OFFLINE", "1")  # the name is found in the cache only
    trained = ts.train(texts=list(MIXED) * 20, vocab_size=300)
    loaded = str(wordpiece().save(tmp_path / "wp" / "tokenizer.json"))
    comp = compare([trained, loaded, "gpt2"], {"mixed": MIXED}, diagnostics=False)
    assert comp.names == ["tokenizer 1", "wp", "gpt2"] and comp.warnings[0].startswith("wp on")
    assert comp.models["gpt2"] == "byte-level BPE"
    gpt2 = comp.results["gpt2"]["mixed"].compression
    assert gpt2 is not None
    assert gpt2.tokens == sum(len(ts.load("gpt2").encode(m)) for m in MIXED)
    text = _write(tmp_path / "mixed.txt", "".join(MIXED))
    assert main(["compare", loaded, "gpt2", "--text", text, "--no-diagnostics"]) == 0
    assert re.search(r"^gpt2\s+mixed\s+" + f"{gpt2.tokens}\\s", capsys.readouterr().out, re.M)
