#!/usr/bin/env python3
"""Benchmark: SuperBPE (``superword_start``) against plain byte-level BPE.

Each corpus is cut at a line break: the first 90% trains, the last 10% is held
out. Every trainer runs in a fresh process (peak memory is its own): tokensmith's
byte-level BPE (the GPT-4 pattern), tokensmith's SuperBPE with the transition at
80% and 90% of the vocabulary (chunks of up to 4 words in stage 2), and
``tokenizers``' ``BpeTrainer`` with the same pattern. The held-out text is then
measured with tokensmith's evaluation (the ``tokenizers`` result loaded from its
``tokenizer.json``, so every row is measured the same way)::

    python benchmarks/train_superbpe.py                        # en and code, 8k and 32k
    python benchmarks/train_superbpe.py --corpus en --vocab-size 32000
    python benchmarks/train_superbpe.py --json benchmarks/results/train_superbpe.json

Printed per corpus and vocabulary: held-out bytes per token (more is better) and
its gain over plain BPE, Rényi efficiency (alpha 2.5), fertility (tokens per
word), training time and peak memory (``VmHWM``).
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
RUNNERS = ("bpe", "superbpe 0.8", "superbpe 0.9", "tokenizers")
NAMES = {"bpe": "tokensmith BPE", "superbpe 0.8": "tokensmith SuperBPE, t = 0.8 V",
         "superbpe 0.9": "tokensmith SuperBPE, t = 0.9 V", "tokenizers": "`tokenizers` BPE"}


def _train(runner: str, path: str, vocab: int, out: str) -> None:
    if runner == "tokenizers":
        import tokensmith as ts
        from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(ts.patterns.resolve("gpt4")), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab, special_tokens=[SPECIAL], show_progress=False,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train([path], trainer)
        tok.save(out)
        return
    import tokensmith as ts

    options = {}
    if runner.startswith("superbpe"):
        options = {"superword_start": int(vocab * float(runner.split()[1])),
                   "superword_words": 4}
    ts.train([path], vocab_size=vocab, special_tokens=[SPECIAL], **options).save(out)


def worker(spec: dict) -> dict:  # type: ignore[type-arg]
    t0 = time.perf_counter()
    _train(spec["runner"], spec["train"], spec["vocab"], spec["out"])
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "rss_mb": _peak_mb()}


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
    comp = ev.compression(tok, lines)
    return {"vocab": tok.vocab_size, "bytes_per_token": comp.bytes_per_token,
            "renyi": ev.renyi_efficiency(tok, lines).efficiency,
            "fertility": ev.fertility(tok, lines).fertility}


def _split(text: str) -> tuple[str, str]:
    cut = text.find("\n", int(len(text) * 0.9))
    cut = len(text) if cut < 0 else cut + 1
    return text[:cut], text[cut:]


def run(corpora: list[str], vocabs: list[int]) -> list[list[object]]:
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
                for runner in RUNNERS:
                    out = str(Path(tmp) / f"{name}-{vocab}-{runner.replace(' ', '-')}.json")
                    spec = {"runner": runner, "train": str(train_path), "vocab": vocab, "out": out}
                    done = subprocess.run(
                        [sys.executable, __file__, "--worker", json.dumps(spec)],
                        capture_output=True, text=True)
                    if done.returncode:
                        print(f"{name} {vocab} {runner}: failed\n{done.stderr[-2000:]}",
                              file=sys.stderr)
                        continue
                    r = {**json.loads(done.stdout.splitlines()[-1]), **measure(out, held)}
                    base = r["bytes_per_token"] if runner == "bpe" else base
                    gain = r["bytes_per_token"] / base - 1 if base else None
                    rows.append([name, vocab, NAMES[runner], r["bytes_per_token"], gain,
                                 r["renyi"], r["fertility"], r["seconds"], r["rss_mb"]])
                    print(f"  {name} {vocab} {runner}: {r['bytes_per_token']:.3f} bytes/token, "
                          f"{r['seconds']:.1f} s", file=sys.stderr)
    return rows


COLUMNS = ["corpus", {"name": "vocab", "format": "{:,}"}, "trainer",
           {"name": "bytes/token", "format": "{:.3f}"},
           {"name": "vs BPE", "format": "{:+.1%}"},
           {"name": "Rényi eff.", "format": "{:.3f}"},
           {"name": "tokens/word", "format": "{:.3f}"},
           {"name": "train s", "format": "{:.1f}"}, {"name": "peak MB", "format": "{:,.0f}"}]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", nargs="+", default=["en", "code"])
    parser.add_argument("--vocab-size", nargs="+", type=int, default=[8000, 32000])
    parser.add_argument("--json", metavar="PATH",
                        help="also write the table as a results file (benchmarks/render.py)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    rows = run(args.corpus, args.vocab_size)
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

        write_results(args.json, "train_superbpe.py", command_line("train_superbpe.py", argv),
                      COLUMNS, rows,
                      notes="Trained on the first 90% of each corpus, measured on the rest; "
                      "SuperBPE chunks of up to 4 words; t is the transition (superword_start) "
                      "as a share of the vocabulary V.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
