#!/usr/bin/env python3
"""Benchmark: WordPiece training, tokensmith vs. Hugging Face ``tokenizers``.

Each corpus is cut at a line break: the first 90% trains, the last 10% is held
out. tokensmith (merging by likelihood gain, and by the textbook ratio) and
``tokenizers``' ``WordPieceTrainer`` train with the same BERT pipeline
(lowercasing ``BertNormalizer``, ``BertPreTokenizer``), the same special tokens,
vocabulary size, ``min_frequency`` and alphabet limit, each in a fresh process so
that peak memory is its own; then each encodes the held-out text::

    python benchmarks/train_wordpiece.py                    # en, code, zh at 32,000
    python benchmarks/train_wordpiece.py --corpus en --vocab-size 8000 --raw-json
    python benchmarks/train_wordpiece.py --json benchmarks/results/train_wordpiece.json
    python benchmarks/train_wordpiece.py --vocab-size 8000 --candidates 1 1.25 2 3

``--candidates`` adds likelihood runs that learn that multiple of the vocabulary
and prune it back (``candidates=``; 1 turns the default pruning off).

Printed per corpus: training time, peak memory (``VmHWM``), held-out bytes
per token (more is better) and the share of unknown tokens.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
FILES = {"en": "en.txt", "code": "code.txt", "zh": "zh.txt"}
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
RUNNERS = ("tokensmith", "tokensmith frequency", "tokensmith ratio", "tokenizers")
# the runners as the README's table names them
NAMES = {"tokensmith": "tokensmith (likelihood)", "tokenizers": "`tokenizers`"}


def _train(runner: str, path: str, vocab: int, min_frequency: int):  # type: ignore[no-untyped-def]
    """The trained tokenizer and an ``encode(text) -> ids`` function."""
    if runner.startswith("tokensmith"):
        import tokensmith as ts

        option = runner.split()[1] if " " in runner else "likelihood"
        extra = ({"candidates": round(vocab * float(option[1:]))} if option.startswith("x")
                 else {"score": option})
        tok = ts.train_wordpiece([path], vocab_size=vocab, min_frequency=min_frequency,
                                 limit_alphabet=1000, special_tokens=SPECIALS, **extra)
        return tok.vocab_size, lambda t: tok.encode(t, add_special_tokens=False), "[UNK]", tok
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab, min_frequency=min_frequency,
                                        limit_alphabet=1000, special_tokens=SPECIALS,
                                        show_progress=False)
    tok.train([path], trainer)
    return (tok.get_vocab_size(),
            lambda t: tok.encode(t, add_special_tokens=False).ids, "[UNK]", tok)


def worker(spec: dict) -> dict:  # type: ignore[type-arg]
    t0 = time.perf_counter()
    size, encode, unk, tok = _train(spec["runner"], spec["train"], spec["vocab"],
                                    spec["min_frequency"])
    seconds = time.perf_counter() - t0
    held = Path(spec["held"]).read_text(encoding="utf-8")
    ids = [i for line in held.splitlines() if line.strip() for i in encode(line)]
    unk_id = tok.token_to_id(unk)
    return {"seconds": seconds, "rss_mb": _peak_mb(),
            "vocab": size, "bytes_per_token": len(held.encode()) / max(len(ids), 1),
            "unknown": sum(i == unk_id for i in ids) / max(len(ids), 1)}


def _peak_mb() -> float:
    """This process's peak resident memory. (``ru_maxrss`` would not do: Linux keeps it
    across ``exec``, so a child starts with its parent's peak.)"""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _split(text: str) -> tuple[str, str]:
    cut = text.find("\n", int(len(text) * 0.9))
    cut = len(text) if cut < 0 else cut + 1
    return text[:cut], text[cut:]


def _name(runner: str) -> str:
    """The runner as the README's table names it."""
    if runner.startswith("tokensmith x"):
        multiple = runner.removeprefix("tokensmith x")
        return ("tokensmith (likelihood, no pruning)" if multiple == "1" else
                f"tokensmith (likelihood, {multiple}x candidates)")
    return NAMES.get(runner, runner)


def write_json(path: str, results: dict[str, dict[str, dict]],  # type: ignore[type-arg]
               args: argparse.Namespace) -> None:
    """The table of ``benchmarks/README.md`` as a results file (see ``render.py``)."""
    from _results import command_line, write_results

    columns = ["corpus", "trainer", {"name": "bytes/token", "format": "{:.4f}"},
               {"name": "train s", "format": "{:.1f}"}, {"name": "peak MB", "format": "{:,.0f}"}]
    rows = [[name, _name(runner), r["bytes_per_token"], r["seconds"], r["rss_mb"]]
            for name, per in results.items() for runner, r in per.items()]
    notes = f"Vocabulary {args.vocab_size:,}, `min_frequency` {args.min_frequency}."
    write_results(path, "train_wordpiece.py", command_line("train_wordpiece.py"), columns, rows,
                  notes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", nargs="+", choices=list(FILES), default=list(FILES))
    parser.add_argument("--vocab-size", type=int, default=32_000)
    parser.add_argument("--min-frequency", type=int, default=2)
    parser.add_argument("--json", metavar="PATH",
                        help="also write the table as a results file (benchmarks/render.py)")
    parser.add_argument("--raw-json", action="store_true",
                        help="print every measurement as JSON instead of the table")
    parser.add_argument("--candidates", nargs="+", type=float, default=[], metavar="M",
                        help="also train by likelihood with candidates=M x the vocabulary")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    results: dict[str, dict[str, dict]] = {}  # type: ignore[type-arg]
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.corpus:
            src = CORPUS / FILES[name]
            if not src.exists():
                print(f"skipped {name}: {src} is not there", file=sys.stderr)
                continue
            train, held = _split(src.read_text(encoding="utf-8"))
            paths = {k: Path(tmp) / f"{name}.{k}" for k in ("train", "held")}
            paths["train"].write_text(train, encoding="utf-8")
            paths["held"].write_text(held, encoding="utf-8")
            results[name] = {}
            for runner in RUNNERS + tuple(f"tokensmith x{m:g}" for m in args.candidates):
                spec = {"runner": runner, "train": str(paths["train"]),
                        "held": str(paths["held"]), "vocab": args.vocab_size,
                        "min_frequency": args.min_frequency}
                out = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)],
                                     capture_output=True, text=True, check=True)
                results[name][runner] = json.loads(out.stdout.splitlines()[-1])
    if args.json:
        write_json(args.json, results, args)
    if args.raw_json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"vocab_size {args.vocab_size:,}, min_frequency {args.min_frequency}, "
          f"trained on 90% of each corpus, measured on the rest")
    print(f"{'corpus':<6} {'trainer':<22}{'vocab':>8}{'bytes/token':>13}{'unknown':>9}"
          f"{'train s':>9}{'peak MB':>9}")
    for name, per in results.items():
        for runner, r in per.items():
            print(f"{name:<6} {runner:<22}{r['vocab']:>8,}{r['bytes_per_token']:>13.4f}"
                  f"{100 * r['unknown']:>8.2f}%{r['seconds']:>9.1f}{r['rss_mb']:>9.0f}")
        ts_, hf = per["tokensmith"], per["tokenizers"]
        print(f"{name:<6} tokensmith/tokenizers: bytes/token "
              f"{ts_['bytes_per_token'] / hf['bytes_per_token']:.2f}x, time "
              f"{ts_['seconds'] / hf['seconds']:.2f}x, memory {ts_['rss_mb'] / hf['rss_mb']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
