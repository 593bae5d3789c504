#!/usr/bin/env python3
"""Benchmark: PickyBPE (``picky_threshold``) against plain byte-level BPE.

Each corpus is cut at a line break: the first 90% trains, the last 10% is held
out. Every trainer runs in a fresh process (peak memory is its own): tokensmith's
byte-level BPE (the GPT-4 pattern) and PickyBPE at each threshold τ. The held-out
text is then measured with tokensmith's evaluation::

    python benchmarks/train_picky.py                       # en, code, zh at 8k and 32k
    python benchmarks/train_picky.py --corpus en --vocab-size 8000 --tau 0.9
    python benchmarks/train_picky.py --json benchmarks/results/train_picky.json

Printed per corpus and vocabulary: held-out bytes per token (more is better) and
its change from plain BPE, Rényi efficiency (alpha 2.5), residues (tokens that
``tokensmith.diagnose`` finds met at IoS >= 0.9 inside longer tokens of the
held-out text, at least 10 times), removals made in training, training time and
peak memory (``VmHWM``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
SPECIAL = "<|endoftext|>"
TAUS = (0.6, 0.7, 0.8, 0.9)


def _name(tau: float | None) -> str:
    return "tokensmith BPE" if tau is None else f"PickyBPE, τ = {tau:g}"


def worker(spec: dict) -> dict:  # type: ignore[type-arg]
    import tokensmith as ts

    options = {} if spec["tau"] is None else {"picky_threshold": spec["tau"]}
    t0 = time.perf_counter()
    tok = ts.train([spec["train"]], vocab_size=spec["vocab"], special_tokens=[SPECIAL], **options)
    seconds = time.perf_counter() - t0
    peak = _peak_mb()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the PortabilityWarning of a PickyBPE file)
        tok.save(spec["out"])
    return {"seconds": seconds, "rss_mb": peak}


def _peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure(path: str, held: str) -> dict[str, float]:
    import tokensmith as ts
    from tokensmith import evaluate as ev

    tok = ts.load(path)
    lines = [line for line in held.splitlines() if line.strip()]
    model = json.loads(tok.to_str(pretty=False))["model"]
    removals = sum(isinstance(e, dict) for e in model.get("events", []))
    return {"vocab": tok.vocab_size,
            "bytes_per_token": ev.compression(tok, lines).bytes_per_token,
            "renyi": ev.renyi_efficiency(tok, lines, alpha=2.5).efficiency,
            "residues": len(ts.diagnose(tok, texts=lines).residues or []),
            "removals": removals}


def _split(text: str) -> tuple[str, str]:
    cut = text.find("\n", int(len(text) * 0.9))
    cut = len(text) if cut < 0 else cut + 1
    return text[:cut], text[cut:]


def run(corpora: list[str], vocabs: list[int], taus: list[float]) -> list[list[object]]:
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in corpora:
            src = CORPUS / f"{name}.txt"
            if not src.exists():
                print(f"skipped {name}: {src} is not there", file=sys.stderr)
                continue
            train, held = _split(src.read_text(encoding="utf-8"))
            train_path = Path(tmp) / f"{name}.train"
            train_path.write_text(train, encoding="utf-8")
            for vocab in vocabs:
                base = None
                for tau in [None, *taus]:
                    out = str(Path(tmp) / f"{name}-{vocab}-{tau}.json")
                    spec = {"tau": tau, "train": str(train_path), "vocab": vocab, "out": out}
                    done = subprocess.run(
                        [sys.executable, __file__, "--worker", json.dumps(spec)],
                        capture_output=True, text=True)
                    if done.returncode:
                        print(f"{name} {vocab} τ={tau}: failed\n{done.stderr[-2000:]}",
                              file=sys.stderr)
                        continue
                    r = {**json.loads(done.stdout.splitlines()[-1]), **measure(out, held)}
                    base = r["bytes_per_token"] if tau is None else base
                    change = r["bytes_per_token"] / base - 1 if base else None
                    rows.append([name, vocab, _name(tau), r["bytes_per_token"], change,
                                 r["renyi"], r["residues"], r["removals"], r["seconds"],
                                 r["rss_mb"]])
                    print(f"  {name} {vocab} τ={tau}: {r['bytes_per_token']:.3f} bytes/token, "
                          f"{r['residues']} residues, {r['removals']} removals, "
                          f"{r['seconds']:.1f} s", file=sys.stderr)
    return rows


COLUMNS = ["corpus", {"name": "vocab", "format": "{:,}"}, "trainer",
           {"name": "bytes/token", "format": "{:.3f}"},
           {"name": "vs BPE", "format": "{:+.2%}"},
           {"name": "Rényi eff.", "format": "{:.4f}"},
           {"name": "residues", "format": "{:,}"},
           {"name": "removals", "format": "{:,}"},
           {"name": "train s", "format": "{:.1f}"}, {"name": "peak MB", "format": "{:,.0f}"}]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", nargs="+", default=["en", "code", "zh"])
    parser.add_argument("--vocab-size", nargs="+", type=int, default=[8000, 32000])
    parser.add_argument("--tau", nargs="+", type=float, default=list(TAUS))
    parser.add_argument("--json", metavar="PATH",
                        help="also write the table as a results file (benchmarks/render.py)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    rows = run(args.corpus, args.vocab_size, args.tau)
    head = [c if isinstance(c, str) else c["name"] for c in COLUMNS]
    print(" | ".join(head))
    for row in rows:
        cells = []
        for value, col in zip(row, COLUMNS, strict=True):
            fmt = "{}" if isinstance(col, str) else col["format"]
            cells.append("—" if value is None else fmt.format(value))
        print(" | ".join(cells))
    if args.json:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _results import command_line, write_results

        write_results(args.json, "train_picky.py", command_line("train_picky.py", argv),
                      COLUMNS, rows,
                      notes="Trained on the first 90% of each corpus, measured on the rest; "
                      "residues: tokensmith.diagnose at IoS >= 0.9, met at least 10 times.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
