#!/usr/bin/env python3
"""Render ``benchmarks/results/*.json`` into the tables of the benchmark docs.

    python benchmarks/render.py            # rewrite the tables in place
    python benchmarks/render.py --check    # exit 1 if a document differs from its JSON

A table lives in a document (``benchmarks/README.md``, the README's Speed section,
``docs/counts.md``) between ``<!-- results:NAME -->`` and ``<!-- /results -->``;
everything between the two markers is rewritten from ``benchmarks/results/NAME.json``
(the table, then a line of when, where and notes), the prose around them is left
alone. A script writes such a file with ``--json PATH`` (see ``_results.py``).

Schema of a results file (one JSON object):

``script``   the script's file name, e.g. ``"train_bpe.py"``
``command``  the command that measured it, from the repository's root
``date``     ``"YYYY-MM-DD"``
``machine``  cores and memory, e.g. ``"2 cores, 24 GB"``
``load``     the machine's load average while it ran (free text: ``"0.85"``, ``"1.2-1.6"``;
             a script writes the averages at its end, ``"0.85 / 0.70 / 0.52 (1 / 5 / 15 min)"``)
``columns``  a list of ``{"name": header, "format": ..., "align": ..., "group": ...}``:
             ``format`` is a ``str.format`` template for number cells
             (``"{:,.0f}"``, ``"{:.1f}x"``); ``align`` is ``"left"`` or ``"right"``
             (right when there is a ``format``, else left); ``group: true`` leaves a
             cell empty where it, and every group column before it, equals the row
             above's (a row label that spans rows)
``rows``     a list of rows, one cell a column: a string (Markdown, shown as it is),
             a number (shown through the column's ``format``) or null (empty)
``notes``    a sentence or two printed under the table (what was run, what differs)
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
DOCUMENTS = (HERE / "README.md", HERE.parent / "README.md", HERE.parent / "docs" / "counts.md")
BLOCK = re.compile(r"(<!-- results:([\w.-]+) -->\n)(.*?)(<!-- /results -->)", re.DOTALL)


def cell(value: Any, column: dict[str, Any]) -> str:
    """One cell as Markdown."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.replace("|", "\\|")
    return column.get("format", "{}").format(value)


def grouped(rows: list[list[str]], columns: list[dict[str, Any]]) -> list[list[str]]:
    """The rows with each group column left empty where it repeats the row above."""
    out, above = [], None
    for row in rows:
        shown = list(row)
        same = above is not None
        for k, col in enumerate(columns):
            if not col.get("group"):
                continue
            same = same and above is not None and row[k] == above[k]
            if same:
                shown[k] = ""
        out.append(shown)
        above = row
    return out


def table(data: dict[str, Any]) -> list[str]:
    """The Markdown table of a results file."""
    columns = data["columns"]
    rows = [[cell(v, c) for v, c in zip(r, columns, strict=True)] for r in data["rows"]]

    def line(cells: list[str]) -> str:
        return "|" + "".join(f" {c} |" if c else " |" for c in cells)

    right = [c.get("align", "right" if "format" in c else "left") == "right" for c in columns]
    rule = "|" + "".join("---:|" if r else "---|" for r in right)
    return [line([c["name"] for c in columns]), rule, *map(line, grouped(rows, columns))]


def caption(data: dict[str, Any]) -> str:
    """The lines under a table: when, where, at what load; the notes."""
    text = f"Measured {data['date']} on {data['machine']}, load {data['load']}."
    if data.get("notes"):
        text += " " + data["notes"]
    return textwrap.fill(text, 79, break_long_words=False, break_on_hyphens=False)


def block(data: dict[str, Any]) -> str:
    """What goes between a table's two markers."""
    return "\n".join(table(data)) + "\n\n" + caption(data) + "\n"


def load_results(folder: Path = RESULTS) -> dict[str, dict[str, Any]]:
    """Every results file by name (its file name without ``.json``)."""
    return {p.stem: json.loads(p.read_text(encoding="utf-8"))
            for p in sorted(folder.glob("*.json"))}


def render(text: str, results: dict[str, dict[str, Any]], used: set[str]) -> str:
    """``text`` with every marked table rendered from ``results`` (names added to ``used``)."""
    def replace(m: re.Match[str]) -> str:
        name = m.group(2)
        if name not in results:
            raise SystemExit(f"error: no benchmarks/results/{name}.json for a marked table")
        used.add(name)
        return m.group(1) + block(results[name]) + m.group(4)

    return BLOCK.sub(replace, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if a document differs from its JSON")
    args = parser.parse_args(argv)
    results, stale = load_results(), []
    used: set[str] = set()
    for doc in DOCUMENTS:
        old = doc.read_text(encoding="utf-8")
        new = render(old, results, used)
        if new == old:
            continue
        stale.append(doc)
        if args.check:
            name = str(doc.relative_to(HERE.parent))
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(True), new.splitlines(True), name, f"{name} (rendered)"))
        else:
            doc.write_text(new, encoding="utf-8")
            print(f"rewrote {doc.relative_to(HERE.parent)}")
    for name in sorted(set(results) - used):
        print(f"note: results/{name}.json has no marked table", file=sys.stderr)
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
