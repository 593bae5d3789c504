#!/usr/bin/env python3
"""Benchmark: what the stable-ABI (abi3) wheel costs against the build for one CPython.

The abi3 extension reads a ``str`` through CPython's ``PyUnicode_AsUTF8AndSize``
(with the GIL held, a UTF-8 copy cached on every non-ASCII string); the
version-specific build reads the string's code units and converts them itself
(see ``src/utf8.rs``). This script times both on the same inputs, each beside
tiktoken in the same process as a yardstick:

    python benchmarks/abi3.py --wheel dist/tokensmith-*-abi3-*.whl
    python benchmarks/abi3.py            # builds the abi3 wheel first (maturin)
    python benchmarks/abi3.py --wheel dist/tokensmith-*-abi3-*.whl \\
        --json benchmarks/results/abi3.json      # also the README's table

The installed tokensmith (``pip install -e .``) is the version-specific build;
the wheel goes into a temporary virtual environment that sees this
interpreter's other packages (tiktoken). cl100k_base is read from
``../shared/assets`` and the texts from ``../shared/corpus``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
RANKS = SHARED / "assets" / "cl100k_base" / "cl100k_base.tiktoken"
TEXTS = {"en": SHARED / "corpus" / "en.txt", "zh": SHARED / "corpus" / "zh.txt"}
DOC = 1 << 20


def _best(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def worker(repeat: int) -> dict[str, object]:
    """Times in this interpreter: tokensmith (whichever build it imports) and tiktoken."""
    import tiktoken
    import tokensmith as ts

    tok = ts.load(RANKS)
    ref = tiktoken.Encoding("cl100k_base", pat_str=ts.patterns.CL100K,
                            mergeable_ranks=_ranks(), special_tokens={})
    out: dict[str, object] = {"tokensmith": ts._core.__file__}
    for name, path in TEXTS.items():
        text = path.read_text(encoding="utf-8")[:DOC]
        data = len(text.encode())
        assert tok.encode(text) == ref.encode_ordinary(text)
        docs = [text[i:i + 2000] for i in range(0, len(text), 2000)]
        out[f"{name} 1 MB"] = (data / _best(lambda t=text: tok.encode(t), repeat) / 1e6,
                               data / _best(lambda t=text: ref.encode_ordinary(t), repeat) / 1e6)
        out[f"{name} batch 2 KB x{len(docs)}"] = (
            data / _best(lambda d=docs: tok.encode_batch(d), repeat) / 1e6,
            data / _best(lambda d=docs: ref.encode_ordinary_batch(d, num_threads=2),
                         repeat) / 1e6,
        )
    short = "Hello, world! 你好"
    n = 100_000
    out["short string (µs)"] = (
        _best(lambda: [tok.encode(short) for _ in range(n)], repeat) / n * 1e6,
        _best(lambda: [ref.encode_ordinary(short) for _ in range(n)], repeat) / n * 1e6,
    )
    return out


def _ranks() -> dict[bytes, int]:
    import base64

    ranks = {}
    for line in RANKS.read_bytes().splitlines():
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _run(python: str, repeat: int) -> dict[str, object]:
    env = dict(os.environ, RAYON_NUM_THREADS="2")
    proc = subprocess.run([python, __file__, "--worker", "--repeat", str(repeat)],
                          capture_output=True, text=True, env=env, check=False)
    if proc.returncode:
        raise SystemExit(f"{python}: the worker failed:\n{proc.stderr}")
    return json.loads(proc.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def _abi3_wheel(into: Path) -> Path:
    subprocess.run(["maturin", "build", "--release", "--features", "abi3", "-o", str(into)],
                   cwd=ROOT, check=True)
    return next(into.glob("tokensmith-*abi3*.whl"))


def write_json(path: str, full: dict[str, object], abi3: dict[str, object], repeat: int) -> None:
    """The table of ``benchmarks/README.md`` as a results file (see ``render.py``)."""
    from _results import command_line, write_results

    rows = []
    for key, (f_ts, _) in full.items():  # type: ignore[misc]
        a_ts = abi3[key][0]  # type: ignore[index]
        digits = 2 if "µs" in key else 0
        label = key.replace("(µs)", "(µs per call)")
        rows.append([label, f"{f_ts:.{digits}f}", f"{a_ts:.{digits}f}", f"{a_ts / f_ts:.2f}"])
    columns = ["input", *({"name": n, "align": "right"} for n in ("full ABI", "abi3", "abi3/full"))]
    write_results(path, "abi3.py", command_line("abi3.py"), columns, rows,
                  f"cl100k_base, best of {repeat}, MB/s.")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", type=Path, help="the abi3 wheel (default: build it)")
    parser.add_argument("--repeat", type=int, default=5, help="best of N (default 5)")
    parser.add_argument("--json", metavar="PATH",
                        help="also write the table as a results file (benchmarks/render.py)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.repeat)))
        return 0
    missing = [p for p in (RANKS, *TEXTS.values()) if not p.exists()]
    if missing:
        raise SystemExit(f"needs {', '.join(map(str, missing))}")
    with tempfile.TemporaryDirectory(prefix="abi3-bench-") as tmp:
        wheel = args.wheel or _abi3_wheel(Path(tmp) / "dist")
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                       check=True)
        python = str(venv / "bin" / "python")
        subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
                       check=True)
        full, abi3 = _run(sys.executable, args.repeat), _run(python, args.repeat)
        shutil.rmtree(venv)
    assert "abi3" in str(abi3.pop("tokensmith")) and "abi3" not in str(full.pop("tokensmith"))
    print(f"{'input':<26}{'full ABI':>10}{'abi3':>10}{'abi3/full':>11}   (tiktoken in each run)")
    for key, (f_ts, f_tt) in full.items():  # type: ignore[misc]
        a_ts, a_tt = abi3[key]  # type: ignore[misc]
        unit = "" if "µs" in key else " MB/s"
        print(f"{key:<26}{f_ts:>10.2f}{a_ts:>10.2f}{a_ts / f_ts:>10.2f}x   "
              f"tiktoken {f_tt:.2f} / {a_tt:.2f}{unit}")
    if args.json:
        write_json(args.json, full, abi3, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
