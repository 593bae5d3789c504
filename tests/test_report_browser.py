"""The HTML comparison report opened in a real headless Chromium (see tests/_browser.py):
the tables and SVG plots render, offline, without errors, and a screenshot is taken."""

from __future__ import annotations

from pathlib import Path

import pytest
import tokensmith as ts
from tokensmith.cli import main
from tokensmith.compare import Comparison, compare

from ._browser import BrowserPage, browser_fixture, browser_page_fixture  # noqa: F401
from ._measure_helpers import bytes_only, wordpiece
from .test_evaluate import DOCS, PARALLEL

# Written for this test: English and Chinese, and one line of code.
TEXTS = {
    "en": ["the cats sat on the mat\n\n", "the mat sat\n"],
    "zh": ["猫坐在垫子上。\n\n", "分词器把文本切成小块。\n"],
    "code": ["def sat(cat): return cat.mat\n"],
}


@pytest.fixture(scope="module")
def comparison(tmp_path_factory: pytest.TempPathFactory) -> Comparison:
    broken = tmp_path_factory.mktemp("broken") / "tokenizer.json"
    broken.write_text("{ not json", encoding="utf-8")
    trained = ts.train(texts=[t for docs in TEXTS.values() for t in docs] * 20, vocab_size=300)
    return compare({"wp": wordpiece(), "bytes": bytes_only(), "trained": trained,
                    "broken": str(broken)},
                   TEXTS, terms=["cats", "", "分词器"], parallel=PARALLEL, pivot="en")


def test_report_renders_in_a_browser(comparison: Comparison, tmp_path: Path,
                                     browser_page: BrowserPage) -> None:
    path = comparison.save_html(tmp_path / "report.html")
    source = path.read_text(encoding="utf-8")
    page = browser_page.page
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri())
    assert requests == [path.as_uri()]  # nothing else is fetched: no server, no CDN

    # every plot is drawn, with a real size, and carries its labels as SVG text
    svgs = page.locator("body svg")
    assert svgs.count() == source.count("<svg") >= 8
    sizes = svgs.evaluate_all(
        "els => els.map(e => { const r = e.getBoundingClientRect(); return [r.width, r.height] })")
    assert all(w > 50 and h > 50 for w, h in sizes), sizes
    assert page.locator("svg rect").count() > 20 and page.locator("svg text").count() > 50
    labels = page.locator("svg text").all_text_contents()
    for name in ("wp", "bytes", "trained"):
        assert name in labels  # axis labels of the overlap heatmap
    titles = page.locator("svg").evaluate_all("els => els.map(e => e.getAttribute('aria-label'))")
    for title in ("Bytes per token", "Fertility", "Tokens per language", "Vocabulary overlap",
                  "Merges over time", "Vocabulary by script"):
        assert any(t and t.startswith(title) for t in titles), title

    # the tables: one per section of the terminal output, tokenizer names visible
    assert page.locator("table").count() == len(comparison.sections()) + 1
    first = page.locator("table").first
    assert first.is_visible()
    assert first.locator("tbody td:first-child").all_inner_texts() == ["wp", "bytes", "trained"]
    cost = page.locator("h3", has_text="Cost").locator("xpath=following-sibling::div[1]/table")
    assert cost.locator("tbody tr").count() == 3 * len(TEXTS)
    body = page.locator("body").inner_text()
    assert "分词器" in body and "[cat][s]" in body

    # the bad input is reported on the page, and the rest is measured
    warnings = page.locator(".warn")
    assert warnings.is_visible()
    text = warnings.inner_text()
    assert "broken: could not load" in text and "1 blank term skipped" in text

    # the page fits the window: no sideways scrolling
    assert page.evaluate("document.documentElement.scrollWidth") <= 1200
    browser_page.screenshot(tmp_path / "report.png")
    assert browser_page.dialogs == [] and browser_page.errors == []


def test_report_from_the_command_line_in_a_browser(tmp_path: Path,
                                                   browser_page: BrowserPage,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    wp = str(wordpiece().save(tmp_path / "wp" / "tokenizer.json"))
    by = str(bytes_only().save(tmp_path / "bytes" / "tokenizer.json"))
    text = tmp_path / "docs.txt"
    text.write_text("".join(DOCS[i] + "\n\n" for i in range(len(DOCS))), encoding="utf-8")
    html = tmp_path / "cli.html"
    assert main(["compare", wp, by, "--text", str(text), "--html", str(html)]) == 0
    capsys.readouterr()
    page = browser_page.page
    page.goto(html.as_uri())
    assert page.title() == "tokensmith comparison"
    assert page.locator("h1").inner_text() == "tokensmith comparison"
    assert page.locator("svg").count() >= 5
    assert page.locator("table").first.locator("tbody td:first-child").all_inner_texts() == [
        "wp", "bytes"]
    browser_page.screenshot(tmp_path / "cli.png", full_page=False)
    assert browser_page.dialogs == [] and browser_page.errors == []
