"""Peak memory of the merge stage (training from word counts) against the number of
distinct pieces and the vocabulary size, for byte-level BPE and WordPiece.

Each configuration runs in its own process: load the counts of ../shared/corpus
(the top N pieces), note the resident memory, train, note the peak (VmHWM). The
difference is the merge stage's own memory; the script prints it per configuration
and the bytes per distinct piece.

    python benchmarks/merge_memory.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"

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


def main() -> int:
    files = [CORPUS / n for n in ("en.txt", "code.txt", "zh.txt", "zh-news.txt", "ja.txt")]
    files = [f for f in files if f.is_file()]
    if not files:
        print("../shared/corpus is not here: nothing to measure", file=sys.stderr)
        return 1
    import tokensmith as ts

    print(f"{'model':10} {'distinct':>9} {'vocab':>6} {'merge MB':>9} {'bytes/piece':>12}")
    with tempfile.TemporaryDirectory() as d:
        for model in ("bpe", "wordpiece"):
            path = Path(d) / f"{model}.counts"
            ts.count(files, model=model).save(path)  # type: ignore[call-overload]
            for top in (50_000, 100_000, 200_000, 400_000):
                for vocab in (8_000, 32_000):
                    out = subprocess.run([sys.executable, "-c", CHILD, str(path), str(top),
                                          str(vocab), model], capture_output=True, text=True,
                                         check=True)
                    r = json.loads(out.stdout)
                    grew = max(0, r["peak"] - r["before"])
                    print(f"{model:10} {r['distinct']:>9,} {vocab:>6,} {grew / 1e6:>9.1f} "
                          f"{grew / r['distinct']:>12,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
