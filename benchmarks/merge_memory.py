"""Peak memory of the merge stage (training from word counts) against the number of
distinct pieces and the vocabulary size, for byte-level BPE and WordPiece.

Each configuration runs in its own process: load the counts of ../shared/corpus
(the top N pieces), note the resident memory, train, note the peak (VmHWM). The
difference is the merge stage's own memory; the script prints it per configuration
and the bytes per distinct piece.

    python benchmarks/merge_memory.py
    python benchmarks/merge_memory.py --json benchmarks/results/merge_memory.json

(``--json``: the table of ``docs/counts.md``, each model and size with both vocabularies.)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
MODEL_NAMES = {"bpe": "byte-level BPE", "wordpiece": "WordPiece"}  # as docs/counts.md has them
TOPS = (50_000, 100_000, 200_000, 400_000)
VOCABS = (8_000, 32_000)

CHILD = r"""
import json, sys, tokensmith as ts
def rss(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
counts = ts.WordCounts.load(sys.argv[1]).filter(top=int(sys.argv[2]))
before = rss("VmRSS:")
ts.train(counts=counts, model=sys.argv[4], vocab_size=int(sys.argv[3]))
print(json.dumps({"distinct": len(counts), "before": before, "peak": rss("VmHWM:")}))
"""


def write_json(path: str, measured: dict[tuple[str, int], list[tuple[int, int]]]) -> None:
    """The table of ``docs/counts.md`` as a results file (see ``render.py``): for each
    model and number of pieces, (merge stage, distinct) at each vocabulary size."""
    from _results import command_line, write_results

    right = {"align": "right"}
    columns = ["model", {"name": "distinct pieces", "format": "{:,}"},
               {"name": "vocabulary", **right}, {"name": "merge stage", **right},
               {"name": "per piece", **right}]
    rows = []
    for (model, _), runs in measured.items():
        distinct = runs[0][1]
        rows.append([MODEL_NAMES[model], distinct, " / ".join(f"{v:,}" for v in VOCABS),
                     " / ".join(f"{grew / 1e6:.0f}" for grew, _ in runs) + " MB",
                     " / ".join(f"{grew / d:,.0f}" for grew, d in runs) + " B"])
    write_results(path, "merge_memory.py", command_line("merge_memory.py"), columns, rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", metavar="PATH",
                    help="also write the table as a results file (benchmarks/render.py)")
    args = ap.parse_args()
    files = [CORPUS / n for n in ("en.txt", "code.txt", "zh.txt", "zh-news.txt", "ja.txt")]
    files = [f for f in files if f.is_file()]
    if not files:
        print("../shared/corpus is not here: nothing to measure", file=sys.stderr)
        return 1
    import tokensmith as ts

    print(f"{'model':10} {'distinct':>9} {'vocab':>6} {'merge MB':>9} {'bytes/piece':>12}")
    measured: dict[tuple[str, int], list[tuple[int, int]]] = {}
    with tempfile.TemporaryDirectory() as d:
        for model in ("bpe", "wordpiece"):
            path = Path(d) / f"{model}.counts"
            ts.count(files, model=model).save(path)  # type: ignore[call-overload]
            for top in TOPS:
                for vocab in VOCABS:
                    out = subprocess.run([sys.executable, "-c", CHILD, str(path), str(top),
                                          str(vocab), model], capture_output=True, text=True,
                                         check=True)
                    r = json.loads(out.stdout)
                    grew = max(0, r["peak"] - r["before"])
                    measured.setdefault((model, top), []).append((grew, r["distinct"]))
                    print(f"{model:10} {r['distinct']:>9,} {vocab:>6,} {grew / 1e6:>9.1f} "
                          f"{grew / r['distinct']:>12,.0f}")
    if args.json:
        write_json(args.json, measured)
    return 0


if __name__ == "__main__":
    sys.exit(main())
