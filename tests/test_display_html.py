"""The HTML token view (`display.to_html`, `to_html_page`, `encode --html`), parsed
in Python and opened in a real headless Chromium (see tests/_browser.py)."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
import tokensmith as ts
from tokensmith import cli, display

from ._browser import BrowserPage, browser_fixture, browser_page_fixture  # noqa: F401
from .conftest import asset

ENGLISH = [
    "A token view draws each token on its own background so boundaries show. ",
    "lower lowest newer newest wider widest, the quick brown fox. ",
]
TEXT = "Draw the tokens: 分词 😀 <script>alert(1)</script> & 'quotes' \"too\"\nnext\tline\n"
XSS = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def tok() -> ts.Tokenizer:
    return ts.train(texts=ENGLISH * 20, vocab_size=300, special_tokens=["<|endoftext|>"])


@pytest.fixture(scope="module")
def char_tok() -> ts.Tokenizer:
    return ts.train(texts=ENGLISH * 20, vocab_size=70, byte_level=False,
                    end_of_word_suffix="</w>")


class _Tokens(HTMLParser):
    """Collects the tokens of a view: (id, classes, drawn text without the id)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tokens: list[tuple[int, list[str], str]] = []
        self.tags: list[str] = []
        self.gaps: list[str] = []
        self._in: str | None = None
        self._sub = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "span" and "ts-tok" in cls:
            self.tokens.append((int(a["data-id"] or -1), cls, ""))
            self._in = "tok"
        elif tag == "span" and "ts-gap" in cls:
            self.gaps.append("")
            self._in = "gap"
        elif tag == "sub":
            self._sub = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "sub":
            self._sub = False
        elif tag == "span":
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "tok" and not self._sub:
            i, cls, text = self.tokens[-1]
            self.tokens[-1] = (i, cls, text + data)
        elif self._in == "gap":
            self.gaps[-1] += data


def parse(html_text: str) -> _Tokens:
    p = _Tokens()
    p.feed(html_text)
    p.close()
    return p


def test_fragment_has_one_span_per_token(tok: ts.Tokenizer) -> None:
    out = display.to_html(tok, TEXT)
    p = parse(out)
    ids = tok.encode(TEXT)
    assert [i for i, _, _ in p.tokens] == ids
    # the drawn text is the terminal view's text, token for token
    expected = [display._visible(x.data)[0] for x in display.pieces(tok, TEXT)]
    assert [t for _, _, t in p.tokens] == expected
    assert out.startswith('<div class="tokensmith-view">') and out.endswith("</div>")
    assert "<style>" in out and "<sub" not in out
    assert f"{len(ids)} tokens" in out


def test_everything_is_escaped(tok: ts.Tokenizer) -> None:
    out = display.to_html(tok, TEXT, ids=True)
    assert XSS not in out and "<script" not in out
    assert "&lt;" in out and "&amp;" in out and "&#x27;" in out
    assert set(parse(out).tags) <= {"div", "style", "p", "span", "sub", "ul", "li", "code"}
    joined = "".join(t for _, _, t in parse(out).tokens)
    assert XSS in joined


def test_ids_bytes_and_titles(tok: ts.Tokenizer) -> None:
    out = display.to_html(tok, "newest 分", ids=True, style=False)
    assert "<style>" not in out and 'class="tokensmith-view ts-show-ids"' in out
    for i in tok.encode("newest 分"):
        assert f'<sub class="ts-id">{i}</sub>' in out
        data = tok.id_to_bytes(i) or b""
        assert f'data-bytes="{data.hex()}"' in out
    assert 'title="id ' in out and "part of a character" in out


def test_split_characters_are_listed(tok: ts.Tokenizer) -> None:
    a = display.analyze(tok, "分 😀 ok")
    assert [s.char for s in a.splits] == ["分", "😀"]
    emoji = a.splits[1]
    assert emoji.codepoint == "U+1F600"
    assert b"".join(b for _, _, b in emoji.pieces) == "😀".encode()
    assert all(a.tokens[k].id == i and a.tokens[k].partial for k, i, _ in emoji.pieces)
    out = display.to_html(tok, "分 😀 ok")
    assert "characters split between tokens" in out
    assert "<code>e5</code>" in out and "U+5206" in out
    assert "characters split" not in display.to_html(tok, "分", splits=False)


def test_whitespace_newlines_and_specials(tok: ts.Tokenizer) -> None:
    out = display.to_html(tok, "a\n\nb<|endoftext|>", allowed_special="all", style=False)
    p = parse(out)
    assert "␣" not in "".join(t for _, _, t in p.tokens)
    assert "↵" in "".join(t for _, _, t in p.tokens)
    specials = [cls for _, cls, _ in p.tokens if "ts-special" in cls]
    assert len(specials) == 1
    # a token that ends a line ends its span first, then the line breaks
    assert "↵</span>\n" in out
    with pytest.raises(ts.DisallowedSpecialTokenError):
        display.to_html(tok, "x<|endoftext|>")


def test_characters_the_tokenizer_cannot_represent(char_tok: ts.Tokenizer) -> None:
    a = display.analyze(char_tok, "newer 😀 wider")
    assert a.unknown_chars == ["😀"]
    (unk,) = [t for t in a.tokens if t.unknown]
    assert unk.source == "😀" and unk.text == "<unk>"
    out = display.to_html(char_tok, "newer 😀 wider")
    p = parse(out)
    assert sum("ts-unk" in cls for _, cls, _ in p.tokens) == 1
    assert "cannot represent" in out
    assert p.gaps == ["␣", "␣"]  # the spaces the pre-tokenizer dropped are drawn between tokens


def test_empty_text_and_limits(tok: ts.Tokenizer) -> None:
    out = display.to_html(tok, "")
    assert parse(out).tokens == [] and "0 tokens" in out
    a = display.analyze(tok, "newest " * 50, limit=3)
    assert a.truncated and len(a.tokens) == 3 and a.count == len(tok.encode("newest " * 50))
    assert "showing the first 3" in display.to_html(tok, "newest " * 50, limit=3)
    # lone surrogates cannot be UTF-8: U+FFFD, as encode does
    assert display.analyze(tok, "a\ud800").text == "a\ufffd"


def test_page_is_self_contained(tok: ts.Tokenizer) -> None:
    page = display.to_html_page(tok, TEXT, ids=True, title="<b>mine</b>")
    assert page.startswith("<!DOCTYPE html>")
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert "<script" not in page and "<link" not in page and "http" not in page.lower().replace(
        "http-equiv", "")
    assert "<title>&lt;b&gt;mine&lt;/b&gt;</title>" in page
    assert "byte-level BPE, vocabulary 300" in page


def test_terminal_view_is_unchanged(tok: ts.Tokenizer) -> None:
    assert display.show(tok, "newest", color=False).startswith("[")
    assert display.render([display.Piece(b"x\n", 1)], show_ids=True) == "[x↵|1]\n"


def test_real_tokenizers() -> None:
    llama2 = ts.load(asset("llama2", "tokenizer.model"))
    a = display.analyze(llama2, "😀 ok")
    assert a.kind == "BPE with byte fallback"
    assert [s.char for s in a.splits] == ["😀"]
    assert [t.text for t in a.tokens if t.partial] == ["<0xF0>", "<0x9F>", "<0x98>", "<0x80>"]
    bert = ts.load(asset("bert-base-uncased", "vocab.txt"))
    b = display.analyze(bert, "hello 😀")
    assert b.kind == "WordPiece" and b.unknown_chars == ["😀"]
    assert [t.special for t in b.tokens] == [True, False, False, True]  # [CLS] … [SEP]


def test_encode_html_option(tmp_path: Path, tok: ts.Tokenizer,
                            capsys: pytest.CaptureFixture[str]) -> None:
    path = tok.save(tmp_path / "tok.json")
    out = tmp_path / "view.html"
    assert cli.main(["encode", str(path), TEXT, "--html", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""  # the page replaces the ids
    assert f"wrote {out}" in captured.err and "tokens" in captured.err
    page = out.read_text("utf-8")
    assert [i for i, _, _ in parse(page).tokens] == tok.encode(TEXT)
    assert "<sub" not in page
    assert cli.main(["encode", str(path), "newest", "--html", str(out), "--ids", "--show",
                     "--no-color"]) == 0
    assert "[" in capsys.readouterr().out  # --show still draws in the terminal
    assert '<sub class="ts-id">' in out.read_text("utf-8")
    assert cli.main(["encode", str(path), "x<|endoftext|>", "--html", str(out)]) == 2
    assert "--allow-special" in capsys.readouterr().err
    assert cli.main(["encode", str(path), "x", "--html", str(tmp_path)]) == 2  # a folder


def test_html_view_in_a_browser(tmp_path: Path, tok: ts.Tokenizer,
                                browser_page: BrowserPage) -> None:
    path = tmp_path / "view.html"
    path.write_text(display.to_html_page(tok, TEXT, ids=True), "utf-8")
    page = browser_page.page
    page.goto(path.as_uri())
    ids = tok.encode(TEXT)
    spans = page.locator(".ts-tok")
    assert spans.count() == len(ids)
    assert [int(x) for x in spans.evaluate_all("els => els.map(e => e.dataset.id)")] == ids
    assert [int(x) for x in page.locator(".ts-tok .ts-id").all_inner_texts()] == ids
    assert page.locator(".ts-tok .ts-id").first.is_visible()
    drawn = spans.evaluate_all("els => els.map(e => e.firstChild.textContent).join('')")
    assert XSS in drawn
    assert page.locator("body script").count() == 0
    assert page.locator("li").all_inner_texts()[0].startswith("分")
    # the tokens have visibly different backgrounds
    colours = spans.evaluate_all(
        "els => els.slice(0, 5).map(e => getComputedStyle(e).backgroundColor)")
    assert len(set(colours)) == 5
    browser_page.screenshot(tmp_path / "view.png")
    assert browser_page.dialogs == [] and browser_page.errors == []
