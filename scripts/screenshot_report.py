"""Render the README's screenshot of a comparison report (docs/report.png).

Compares GPT-2 (byte-level BPE), BERT (WordPiece) and T5 (Unigram) with
``tokensmith.compare`` on a few lines of English, Chinese and code written for
this script, writes the HTML report, opens it in headless Chromium through
Playwright and saves a PNG of its plots (from the "Plots" heading down,
``--height`` pixels; ``--top`` for the title, warnings and tables instead,
``--full-page`` for everything)::

    python scripts/screenshot_report.py                     # -> docs/report.png
    python scripts/screenshot_report.py --html report.html --full-page

The tokenizer files are the ones in ``../shared/assets`` next to the
repository (``--assets DIR``). Chromium is Debian's (``apt-get install
chromium``), Playwright comes from PyPI; no browser is downloaded. Chinese
needs a CJK font (``apt-get install fonts-noto-cjk`` or ``fonts-wqy-microhei``),
or it shows as boxes.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from tokensmith.compare import compare

ROOT = Path(__file__).resolve().parents[1]

# Written for this screenshot.
TEXTS = {
    "en": [
        "A tokenizer cuts text into pieces before a model sees it.\n\n",
        "Fewer pieces per sentence mean a cheaper, longer context.\n\n",
        "Rare words and names fall apart into many small fragments.\n",
    ],
    "zh": [
        "分词器先把文本切成小块，模型才能读懂。\n\n",
        "同一句话，不同的分词器会切出不同数量的词元。\n\n",
        "中文没有空格，所以每个汉字都可能单独成为一个词元。\n",
    ],
    "code": [
        "def count_tokens(text: str) -> int:\n    return len(tokenizer.encode(text))\n\n",
        "for line in open('notes.txt'):\n    print(count_tokens(line))\n",
    ],
}
TOKENIZERS = {
    "GPT-2 (BPE)": ("gpt2", "tokenizer.json"),
    "BERT (WordPiece)": ("bert-base-uncased", "tokenizer.json"),
    "T5 (Unigram)": ("t5", "tokenizer.json"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assets", type=Path, default=ROOT.parent / "shared" / "assets",
                        help="folder with gpt2/, bert-base-uncased/ and t5/ (default: "
                             "../shared/assets)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "report.png",
                        help="the PNG to write (default docs/report.png)")
    parser.add_argument("--html", type=Path, help="also keep the HTML report here")
    parser.add_argument("--width", type=int, default=820, help="window width in pixels")
    parser.add_argument("--height", type=int, default=1625,
                        help="height of the part of the page to capture, in pixels")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--top", action="store_true",
                       help="capture the top of the page (title, warnings, tables)")
    where.add_argument("--full-page", action="store_true", help="capture the whole page")
    args = parser.parse_args(argv)

    paths = {name: args.assets / folder / file for name, (folder, file) in TOKENIZERS.items()}
    missing = [str(p) for p in paths.values() if not p.exists()]
    if missing:
        print(f"missing tokenizer files: {', '.join(missing)} (pass --assets DIR)",
              file=sys.stderr)
        return 2
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        print("no chromium on PATH: apt-get install chromium", file=sys.stderr)
        return 2
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("Playwright is not installed: pip install playwright", file=sys.stderr)
        return 2

    comp = compare({name: str(p) for name, p in paths.items()}, TEXTS)
    print(comp.table())
    with tempfile.TemporaryDirectory() as tmp:
        html = args.html or Path(tmp) / "report.html"
        comp.save_html(html, title="GPT-2, BERT and T5 on English, Chinese and code")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, headless=True,
                                        args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": args.width, "height": args.height})
            page.goto(html.resolve().as_uri())
            if args.full_page or args.top:
                page.screenshot(path=str(args.out), full_page=args.full_page)
            else:
                box = page.locator("h2", has_text="Plots").bounding_box()
                top = max(0.0, box["y"] - 16) if box else 0.0
                height = min(float(args.height),
                             page.evaluate("document.documentElement.scrollHeight") - top)
                page.screenshot(path=str(args.out), full_page=True,
                                clip={"x": 0, "y": top, "width": args.width, "height": height})
            browser.close()
    size = args.out.stat().st_size
    print(f"wrote {args.out} ({size / 1024:.0f} KB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
