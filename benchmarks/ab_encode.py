"""Compare two builds of tokensmith with `encode.py`, in alternating runs.

A change that must not cost speed (a refactor of the engine, say) is checked
by running `benchmarks/encode.py` on the build before and the build after,
turn by turn on the same machine, and comparing each row's best time across
all runs of each build. This script runs the rounds (swapping the extension
module between runs) or, with `--compare`, only reads saved reports.

    # the two extension modules, built from the two commits:
    python benchmarks/ab_encode.py --before /tmp/before.so --after /tmp/after.so --rounds 3
    # or reports already saved by `encode.py --save`:
    python benchmarks/ab_encode.py --compare 'before:/tmp/b_*.json' 'after:/tmp/a_*.json'

Rows: every encoding x (single / batch on en, code, zh; the short string; the
four worst cases). Each cell is MB/s (or µs, or seconds for the worst cases)
best over all of the build's timed runs; the ratios are after/before in
speed (above 1: faster), of the best and of the median run (a row whose runs
are bimodal, as the worst cases' can be, is read by its median). The
machine's load at each run is printed: compare within a run.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORE_GLOB = "_core*.so"


def _core_path() -> Path:
    found = sorted((HERE.parent / "python" / "tokensmith").glob(CORE_GLOB))
    if len(found) != 1:
        sys.exit(f"expected one extension module in python/tokensmith, found {len(found)}")
    return found[0]


def _run(build: Path, report: Path, extra: list[str]) -> float:
    shutil.copyfile(build, _core_path())
    load = os.getloadavg()[0]
    cmd = [sys.executable, str(HERE / "encode.py"), "--save", str(report), *extra]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return load


def _times(report: dict) -> dict[tuple[str, str], tuple[float, list[float]]]:
    """(encoding, row) -> (size, every timed run in seconds)."""
    out: dict[tuple[str, str], tuple[float, list[float]]] = {}
    for enc, libs in report["results"].items():
        rows = libs.get("tokensmith", {}).get("results", {})
        for row, r in rows.items():
            if r.get("exact") is False or not r.get("runs"):
                continue
            size = r["bytes"] / 1e6 if row.startswith(("single", "batch")) else 1.0
            out[(enc, row)] = (size, list(r["runs"]))
    return out


def _speeds(paths: list[str]) -> dict[tuple[str, str], tuple[float, float]]:
    """(encoding, row) -> (best, median) speed over every run of every
    report: higher is faster (MB/s, or 1 / seconds)."""
    runs: dict[tuple[str, str], tuple[float, list[float]]] = {}
    for p in paths:
        for key, (size, times) in _times(json.loads(Path(p).read_text())).items():
            runs.setdefault(key, (size, []))[1].extend(times)
    return {key: (size / min(t), size / statistics.median(t)) for key, (size, t) in runs.items()}


def _unit(row: str) -> str:
    if row.startswith(("single", "batch")):
        return "MB/s"
    return "µs" if row == "short" else "s"


def _shown(row: str, speed: float) -> str:
    unit = _unit(row)
    if unit == "MB/s":
        return f"{speed:.1f}"
    return f"{1e6 / speed:.2f}" if unit == "µs" else f"{1 / speed:.4f}"


def table(before: list[str], after: list[str]) -> str:
    b, a = _speeds(before), _speeds(after)
    lines = ["| encoding | row | unit | before (best) | after (best) | after/before, best |"
             " after/before, median |",
             "|---|---|---|---:|---:|---:|---:|"]
    for key in sorted(b.keys() & a.keys()):
        enc, row = key
        (bb, bm), (ab, am) = b[key], a[key]
        lines.append(f"| {enc} | {row} | {_unit(row)} | {_shown(row, bb)} | "
                     f"{_shown(row, ab)} | {ab / bb:.3f} | {am / bm:.3f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, help="extension module built before the change")
    ap.add_argument("--after", type=Path, help="extension module built after it")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("/tmp/ab_encode"), help="where reports go")
    ap.add_argument("--compare", nargs=2, metavar="NAME:GLOB",
                    help="only compare saved reports: before:GLOB after:GLOB")
    ap.add_argument("encode_args", nargs="*", help="passed to encode.py (after --)")
    args = ap.parse_args()
    if args.compare:
        before, after = (sorted(glob.glob(c.split(":", 1)[1])) for c in args.compare)
        print(table(before, after))
        return
    if not (args.before and args.after):
        ap.error("--before and --after (or --compare)")
    args.out.mkdir(parents=True, exist_ok=True)
    extra = args.encode_args or ["--only", "tokensmith,tiktoken", "--repeat", "5"]
    keep = args.out / "current.so"
    shutil.copyfile(_core_path(), keep)
    reports: dict[str, list[str]] = {"before": [], "after": []}
    try:
        for k in range(args.rounds):
            for name, build in (("before", args.before), ("after", args.after)):
                report = args.out / f"{name}_{k}.json"
                load = _run(build, report, extra)
                print(f"round {k + 1} {name}: load {load:.2f}", flush=True)
                reports[name].append(str(report))
    finally:
        shutil.copyfile(keep, _core_path())
    print(table(reports["before"], reports["after"]))


if __name__ == "__main__":
    main()
