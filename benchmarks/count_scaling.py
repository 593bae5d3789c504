#!/usr/bin/env python3
"""Benchmark: training on growing corpora (0.3, 1, 3 GB) — throughput and memory.

The corpus of each size is built from ``../shared/corpus`` (the Gutenberg novels,
en, code, zh, zh-news, ja and the parallel texts), copy after copy, each copy with
its own variation (one word in 7 gets the copy's number spelt in letters as a
suffix, so that distinct pieces keep growing with the size, as in real data).
Each contender trains byte-level BPE (vocabulary 32,000, the GPT-4 pattern) or its
nearest equivalent in its own process; the script prints wall time, GB/hour and
peak memory (VmHWM) of counting and of merging:

* ``tokensmith``: ``ts.count`` then ``ts.train(counts=...)``, two processes;
* ``tokensmith-limit``: the same with ``memory_limit`` at a quarter of the counting
  peak of the run above;
* ``tokensmith-ray``: ``ts.count(backend="ray")`` on a local Ray with 2 CPUs;
* ``tokenizers``: ``BpeTrainer`` through ``train_from_iterator`` (one process);
* ``sentencepiece``: BPE with its usual sampling (``input_sentence_size`` 1M lines);
* ``rustbpe``: ``Tokenizer.train_from_iterator``.

With ``--same-words`` every copy is the same text, so the distinct pieces stay
fixed while the corpus grows: what memory is left to grow then is what grows
with the bytes rather than with the pieces.

    python benchmarks/count_scaling.py --sizes 0.3 1 3
    python benchmarks/count_scaling.py --sizes 0.3 --only tokensmith tokenizers
    python benchmarks/count_scaling.py --sizes 0.3 1 3 --same-words --only tokensmith
    python benchmarks/count_scaling.py --sizes 0.3 1 3 --json benchmarks/results/count_scaling.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
VOCAB = 32_000
CONTENDERS = ("tokensmith", "tokensmith-limit", "tokensmith-ray", "tokenizers",
              "sentencepiece", "rustbpe")
# the contenders as the README's table names them
NAMES = {"tokensmith": "tokensmith", "tokensmith-limit": "tokensmith, `memory_limit` ¼",
         "tokensmith-ray": "tokensmith, local Ray", "tokenizers": "`tokenizers`",
         "sentencepiece": "`sentencepiece` (1M-line sample)", "rustbpe": "`rustbpe`"}
COLUMNS = [{"name": "size", "format": "{:.2f} GB", "group": True}, "contender",
           *({"name": n, "format": "{:,.0f}"} for n in ("seconds", "GB/hour", "counting MB",
                                                          "merging MB", "peak MB")),
           {"name": "distinct", "format": "{:,}"}]

CHILD = r"""
import json, sys, time
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
spec = json.loads(sys.argv[1])
kind, path, out = spec["kind"], spec["path"], spec["out"]
t = time.perf_counter()
def lines():
    with open(path, encoding="utf-8") as f:
        yield from f
if kind == "count":
    import tokensmith as ts
    opts = {"memory_limit": spec["limit"]} if spec.get("limit") else {}
    if spec.get("ray"):
        import ray
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        opts["backend"] = "ray"
    counts = ts.count(path, model="bpe", **opts)
    counts.save(out)
    extra = {"distinct": len(counts)}
elif kind == "merge":
    import tokensmith as ts
    counts = ts.WordCounts.load(path)
    ts.train(counts=counts, model="bpe", vocab_size=spec["vocab"])
    extra = {}
elif kind == "tokenizers":
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    pat = spec["pattern"]
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pat), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    trainer = trainers.BpeTrainer(vocab_size=spec["vocab"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(lines(), trainer)
    extra = {}
elif kind == "sentencepiece":
    import sentencepiece as spm
    spm.SentencePieceTrainer.train(input=path, model_prefix=out, vocab_size=spec["vocab"],
                                   model_type="bpe", input_sentence_size=1_000_000,
                                   shuffle_input_sentence=True, num_threads=2,
                                   minloglevel=2, max_sentence_length=1 << 20)
    extra = {}
elif kind == "rustbpe":
    import rustbpe
    tok = rustbpe.Tokenizer()
    tok.train_from_iterator(lines(), spec["vocab"], pattern=spec["pattern"])
    extra = {}
print(json.dumps({"seconds": time.perf_counter() - t, "peak": hwm(), **extra}))
"""


def _letters(n: int) -> str:
    """``n`` in letters (0 → "", 1 → "b", 26 → "ba" …): a suffix that makes new words
    (digits would be cut off by the pattern and make none)."""
    out = ""
    while n:
        n, r = divmod(n, 26)
        out = "abcdefghijklmnopqrstuvwxyz"[r] + out
    return out


def build(size_gb: float, folder: Path, vary: bool = True) -> Path:
    """The corpus of ``size_gb`` GB: copies of the shared texts, each varied
    (unless not ``vary``)."""
    sources = sorted((CORPUS / "gutenberg").glob("*.txt")) + [
        CORPUS / n for n in ("en.txt", "code.txt", "zh.txt", "zh-news.txt", "ja.txt")]
    sources += sorted((CORPUS / "parallel").glob("*/*.txt"))
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in sources if p.is_file()]
    if not texts:
        raise SystemExit("../shared/corpus is not here: nothing to build a corpus from")
    target = int(size_gb * 1e9)
    path = folder / f"corpus-{size_gb}g.txt"
    written = 0
    with open(path, "w", encoding="utf-8") as out:
        copy = 0
        while written < target:
            tag = _letters(copy)
            for text in texts:
                chunk = text
                if vary:
                    words = text.split(" ")
                    words[copy % 7::7] = [w + tag for w in words[copy % 7::7]]
                    chunk = " ".join(words)
                out.write(chunk)
                written += len(chunk.encode("utf-8"))
                if written >= target:
                    break
            copy += 1
    return path


def child(spec: dict) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr else "failed"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(name: str, path: Path, folder: Path, limit: int | None) -> dict:
    from tokensmith.patterns import CL100K

    spec = {"path": str(path), "vocab": VOCAB, "pattern": CL100K, "out": str(folder / name)}
    if not name.startswith("tokensmith"):
        return child({**spec, "kind": name})
    counts = str(folder / f"{name}.counts")
    c = child({**spec, "kind": "count", "out": counts,
               "limit": limit if name == "tokensmith-limit" else None,
               "ray": name == "tokensmith-ray"})
    if "error" in c:
        return c
    m = child({**spec, "kind": "merge", "path": counts})
    if "error" in m:
        return m
    return {"seconds": c["seconds"] + m["seconds"], "count_peak": c["peak"],
            "merge_peak": m["peak"], "peak": max(c["peak"], m["peak"]),
            "distinct": c["distinct"]}


def _mb(r: dict, key: str) -> str:
    return f"{r[key] / 1e6:>9,.0f}" if key in r else f"{'-':>9}"


def table_row(gb: float, name: str, r: dict) -> list[str | float | None]:
    """A row of the README's table (``write_results``)."""
    mb = {k: r[k] / 1e6 if k in r else None for k in ("count_peak", "merge_peak", "peak")}
    return [gb, NAMES[name], r["seconds"], gb / r["seconds"] * 3600, mb["count_peak"],
            mb["merge_peak"], mb["peak"], r.get("distinct")]


def write_json(path: str, rows: list[list[str | float | None]], failed: list[str],
               same_words: bool) -> None:
    """The table of ``benchmarks/README.md`` as a results file (see ``render.py``)."""
    from _results import command_line, write_results

    notes = f"Vocabulary {VOCAB:,}, byte-level BPE, the GPT-4 pattern."
    if same_words:
        notes += " Every copy the same text (`--same-words`)."
    if failed:
        notes += f" Failed: {', '.join(failed)}."
    write_results(path, "count_scaling.py", command_line("count_scaling.py"), COLUMNS, rows, notes)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[0.3, 1.0, 3.0])
    ap.add_argument("--only", nargs="+", choices=CONTENDERS, default=list(CONTENDERS))
    ap.add_argument("--keep", metavar="FOLDER", help="build the corpora here and keep them")
    ap.add_argument("--same-words", action="store_true",
                    help="every copy the same text: distinct pieces fixed as the size grows")
    ap.add_argument("--json", metavar="PATH",
                    help="also write the table as a results file (benchmarks/render.py)")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} cores, load {load:.1f} at the start; vocabulary "
          f"{VOCAB:,}, byte-level BPE, GPT-4 pattern")
    print(f"{'size':>5} {'contender':17} {'seconds':>8} {'GB/hour':>8} {'count MB':>9} "
          f"{'merge MB':>9} {'peak MB':>8} {'distinct':>10}")
    rows: list[list[str | float | None]] = []
    failed: list[str] = []
    with tempfile.TemporaryDirectory(dir=args.keep) as d:
        folder = Path(d)
        for size in args.sizes:
            path = build(size, folder, vary=not args.same_words)
            gb = path.stat().st_size / 1e9
            limit = None
            for name in args.only:
                r = run(name, path, folder, limit)
                if name == "tokensmith" and "count_peak" in r:
                    limit = r["count_peak"] // 4
                if "error" in r:
                    print(f"{gb:>5.2f} {name:17} failed: {r['error'][:80]}")
                    failed.append(f"{name} at {gb:.2f} GB")
                    continue
                rows.append(table_row(gb, name, r))
                print(f"{gb:>5.2f} {name:17} {r['seconds']:>8,.0f} "
                      f"{gb / r['seconds'] * 3600:>8,.1f} {_mb(r, 'count_peak')} "
                      f"{_mb(r, 'merge_peak')} {r['peak'] / 1e6:>8,.0f} "
                      f"{r.get('distinct', '-'):>10}", flush=True)
            path.unlink()
    print(f"load at the end {os.getloadavg()[0]:.1f} ({time.strftime('%Y-%m-%d %H:%M')})")
    if args.json:
        write_json(args.json, rows, failed, args.same_words)
    return 0


if __name__ == "__main__":
    sys.exit(main())
