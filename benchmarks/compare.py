#!/usr/bin/env python3
"""Benchmark: GPT-2, BERT, T5, cl100k and o200k side by side with ``tokensmith.compare``.

Measures the five reference tokenizers in ``../shared/assets`` on the first
megabyte of ``../shared/corpus/{en,code,zh}.txt`` (documents cut at blank
lines) and on the 13-language parallel sentences of
``../shared/corpus/parallel/pud``, and prints the comparison tables::

    python benchmarks/compare.py                      # text tables
    python benchmarks/compare.py --markdown           # the tables of benchmarks/README.md
    python benchmarks/compare.py --html report.html   # plus the HTML report with plots
    python benchmarks/compare.py --max-bytes 200000   # a quicker run
    python benchmarks/compare.py --json benchmarks/results/compare.json   # the README's table

The same comparison from the command line::

    tokensmith compare ../shared/assets/gpt2/tokenizer.json \\
        ../shared/assets/bert-base-uncased/tokenizer.json ../shared/assets/t5/tokenizer.json \\
        ../shared/assets/cl100k_base/cl100k_base.tiktoken \\
        ../shared/assets/o200k_base/o200k_base.tiktoken \\
        --text ../shared/corpus/{en,code,zh}.txt --max-bytes 1000000 \\
        --parallel ../shared/corpus/parallel/pud/*.txt --pivot en

Missing files are skipped with a message (the comparison covers what is there).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared"
ASSETS = SHARED / "assets"
CORPUS = SHARED / "corpus"

TOKENIZERS = {
    "gpt2": ASSETS / "gpt2" / "tokenizer.json",
    "bert-base-uncased": ASSETS / "bert-base-uncased" / "tokenizer.json",
    "t5": ASSETS / "t5" / "tokenizer.json",
    "cl100k_base": ASSETS / "cl100k_base" / "cl100k_base.tiktoken",
    "o200k_base": ASSETS / "o200k_base" / "o200k_base.tiktoken",
}
TEXTS = ("en", "code", "zh")


def read_prefix(path: Path, max_bytes: int) -> str:
    """The first ``max_bytes`` of a UTF-8 file, cut after its last whole line."""
    with path.open("rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        data = data[: data.rfind(b"\n", 0, max_bytes) + 1]
    return data.decode("utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-bytes", type=int, default=1_000_000,
                        help="bytes read from each corpus file (default 1,000,000)")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--html", metavar="PATH", help="also write the HTML report")
    parser.add_argument("--save", metavar="PATH",
                        help="also write the whole comparison as JSON (Comparison.to_json)")
    parser.add_argument("--json", metavar="PATH",
                        help="also write the cost table as a results file (benchmarks/render.py)")
    args = parser.parse_args(argv)

    from tokensmith.compare import compare
    from tokensmith.evaluate import split_documents

    tokenizers = {n: str(p) for n, p in TOKENIZERS.items() if p.exists()}
    for n, p in TOKENIZERS.items():
        if n not in tokenizers:
            print(f"skipping {n}: {p} is not present", file=sys.stderr)
    texts = {}
    for name in TEXTS:
        path = CORPUS / f"{name}.txt"
        if path.exists():
            texts[name] = split_documents(read_prefix(path, args.max_bytes))
        else:
            print(f"skipping {path}: not present", file=sys.stderr)
    pud = sorted((CORPUS / "parallel" / "pud").glob("*.txt"))
    parallel = {p.stem: p.read_text(encoding="utf-8").splitlines() for p in pud} or None
    if not tokenizers or not (texts or parallel):
        print("nothing to compare: ../shared/assets and ../shared/corpus are needed",
              file=sys.stderr)
        return 1

    start = time.perf_counter()
    comp = compare(tokenizers, texts, parallel=parallel, pivot="en")
    elapsed = time.perf_counter() - start
    sizes = ", ".join(f"{n} {sum(len(d.encode()) for d in docs):,} B" for n, docs in
                      texts.items())
    print(f"# {len(comp.names)} tokenizers; texts: {sizes}; "
          f"{len(parallel or {})} parallel languages; {elapsed:.1f} s\n")
    print(comp.table("markdown" if args.markdown else "text"))
    if args.html:
        print(f"\nwrote {comp.save_html(args.html, title='GPT-2, BERT, T5, cl100k, o200k')}",
              file=sys.stderr)
    if args.save:
        Path(args.save).write_text(comp.to_json(), encoding="utf-8")
    if args.json:
        write_json(args.json, comp, argv)
    return 0


COLUMNS = ["tokenizer", {"name": "text", "align": "right"}] + [
    {"name": name, "format": fmt} for name, fmt in (
        ("tokens", "{:,}"), ("bytes/tok", "{:,.2f}"), ("chars/tok", "{:,.2f}"),
        ("tok/1k chars", "{:,.1f}"), ("docs", "{:,}"), ("mean len", "{:,.1f}"),
        ("p95 len", "{:,}"), ("max len", "{:,}"))]


def write_json(path: str, comp, argv: list[str] | None) -> None:  # type: ignore[no-untyped-def]
    """The cost table of ``benchmarks/README.md`` as a results file (see ``render.py``)."""
    from _results import command_line, write_results

    rows = []
    for name in comp.names:
        for text, e in comp.results.get(name, {}).items():
            if e.compression is None or e.lengths is None:
                continue
            k, n = e.compression, e.lengths
            rows.append([name, text, k.tokens, k.bytes_per_token, k.chars_per_token,
                         k.tokens_per_1k_chars, n.documents, n.mean, n.p95, n.max])
    write_results(path, "compare.py", command_line("compare.py", argv), COLUMNS, rows,
                  "Token counts, which the load does not change; lengths are tokens per document.")


if __name__ == "__main__":
    sys.exit(main())
