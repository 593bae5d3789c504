#!/usr/bin/env python3
"""Benchmark: parity-aware BPE against classical BPE on the 13 PUD languages.

PUD (``../shared/corpus/parallel/pud/*.txt``) has 1,000 line-aligned sentences per
language. Every variant trains on lines 0-799 of each language; parity-aware BPE
reads its costs on lines 800-899 (the dev set); everything is measured on lines
900-999 (held out). Variants, each at every ``--vocab`` size:

- ``classical``: tokensmith BPE on the concatenation of the 13 training files;
- ``parity``: parity-aware BPE, costs on the parallel dev set;
- ``hybrid``: the same after ``--hybrid`` of the merges chosen classically;
- ``parity-bytes``: parity-aware BPE without a dev set, tokens per byte of each
  language's own training text;
- ``parity-lines``: the same, tokens per line of the training text (PUD's training
  split is itself parallel, so this is close to a dev set of 800 lines);
- ``tokenizers``: Hugging Face ``tokenizers`` BpeTrainer on the concatenation
  (same regex, byte-level), for reference.

Per variant: mean tokens per held-out line of each language, the spread (the most
tokens per line over the fewest, as ``tokensmith.evaluate`` reports parity), the Gini
coefficient of the per-language token counts, bytes per token over all held-out
lines, training time (counting included) and peak RSS. Each run is a fresh process
(``ru_maxrss`` is per process). Run::

    python benchmarks/train_parity.py
    python benchmarks/train_parity.py --vocab 4096 8192 --repeat 3

PUD's training split is ~1.6 MB of text in all; a vocabulary far past ~16k
tokens would be made of whole rare words, so the default sizes stop there.

``--udhr N`` trains instead on the Universal Declaration of Human Rights in the
first N languages of ``../shared/corpus/parallel/udhr/`` (files of 5 KB or more),
to see how training time and memory grow with the number of languages. Its
translations are parallel as whole documents, not line by line, so there is no dev
set: the parity variants measure the training text (``parity-bytes``,
``parity-lines``), and the spread is that of tokens per document, in-sample.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PUD = REPO_ROOT.parent / "shared" / "corpus" / "parallel" / "pud"
UDHR = REPO_ROOT.parent / "shared" / "corpus" / "parallel" / "udhr"
VARIANTS = ("classical", "parity", "hybrid", "parity-bytes", "parity-lines", "tokenizers")
TRAIN, DEV, TEST = (0, 800), (800, 900), (900, 1000)


# --------------------------------------------------------------------------- worker


def _tokensmith(spec: dict) -> tuple[float, object]:
    import tokensmith as ts

    langs: dict[str, str] = spec["train"]
    options: dict = {"vocab_size": spec["vocab"], "special_tokens": []}
    variant = spec["variant"]
    t0 = time.perf_counter()
    if variant == "classical":
        tok = ts.train(list(langs.values()), **options)
    elif variant in ("parity-bytes", "parity-lines"):
        tok = ts.train(languages=langs, parity_measure=variant[7:], **options)
    else:
        start = int(spec["hybrid"] * (spec["vocab"] - 256)) if variant == "hybrid" else 0
        tok = ts.train(languages=langs, parity_dev=spec["dev"], parity_start=start, **options)
    train_s = time.perf_counter() - t0
    return train_s, lambda lines: [len(ids) for ids in tok.encode_batch(lines)]


def _tokenizers(spec: dict) -> tuple[float, object]:
    # (the regex comes from the parent: this process never imports tokensmith)
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(spec["regex"]), "isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    trainer = trainers.BpeTrainer(vocab_size=spec["vocab"], show_progress=False, min_frequency=0,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    t0 = time.perf_counter()
    tok.train(list(spec["train"].values()), trainer)
    train_s = time.perf_counter() - t0
    return train_s, lambda lines: [len(e.ids) for e in tok.encode_batch(lines)]


def worker(spec: dict) -> None:
    train = _tokenizers if spec["variant"] == "tokenizers" else _tokensmith
    train_s, count = train(spec)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tokens = {}
    for lang, path in spec["test"].items():
        lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines() if line]
        tokens[lang] = sum(count(lines))  # type: ignore[operator]
    print(json.dumps({"train_s": train_s, "peak_rss_kib": peak_kib, "tokens": tokens}))


# --------------------------------------------------------------------------- parent


def split(workdir: Path) -> tuple[dict[str, str], dict[str, str], dict[str, str], dict[str, int]]:
    """Train, dev and test files per language, and the test text's bytes."""
    files = sorted(PUD.glob("*.txt"))
    if len(files) < 2:
        sys.exit(f"{PUD}/*.txt not found: this benchmark needs the PUD parallel corpus")
    parts: dict[str, dict[str, str]] = {"train": {}, "dev": {}, "test": {}}
    test_bytes = {}
    for f in files:
        lines = f.read_text(encoding="utf-8").splitlines()
        if len(lines) < TEST[1]:
            sys.exit(f"{f}: {len(lines)} lines, {TEST[1]} expected")
        for name, (a, b) in (("train", TRAIN), ("dev", DEV), ("test", TEST)):
            path = workdir / f"{name}.{f.stem}.txt"
            path.write_text("\n".join(lines[a:b]) + "\n", encoding="utf-8")
            parts[name][f.stem] = str(path)
        test_bytes[f.stem] = sum(len(line.encode("utf-8")) for line in lines[TEST[0]:TEST[1]])
    return parts["train"], parts["dev"], parts["test"], test_bytes


def udhr(n: int) -> tuple[dict[str, str], dict[str, int]]:
    """The first ``n`` UDHR files of 5 KB or more, and their bytes."""
    files = [f for f in sorted(UDHR.glob("*.txt")) if f.stat().st_size >= 5000][:n]
    if len(files) < 2:
        sys.exit(f"{UDHR}/*.txt not found: --udhr needs the UDHR parallel corpus")
    return ({f.stem: str(f) for f in files},
            {f.stem: len(f.read_text(encoding="utf-8").encode("utf-8")) for f in files})


def run(spec: dict) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", json.dumps(spec)]
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "python"))
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{spec['variant']} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def gini(values: list[float]) -> float:
    """Mean absolute difference over twice the mean (0: all equal)."""
    n, mean = len(values), sum(values) / len(values)
    return sum(abs(a - b) for a in values for b in values) / (2 * n * n * mean)


def measure(result: dict, test_bytes: dict[str, int], lines: int = TEST[1] - TEST[0]) -> dict:
    per_line = {lang: t / lines for lang, t in result["tokens"].items()}
    values = list(per_line.values())
    return {
        "spread": max(values) / min(values),
        "gini": gini(values),
        "bytes_per_token": sum(test_bytes.values()) / sum(result["tokens"].values()),
        "worst": max(per_line, key=per_line.__getitem__),
        "best": min(per_line, key=per_line.__getitem__),
        "per_line": per_line,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--vocab", type=int, nargs="+", default=[2048, 4096, 8192, 16384])
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--hybrid", type=float, default=0.5,
                        help="share of the merges the hybrid chooses classically (0.5)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per cell; the fastest counts")
    parser.add_argument("--per-language", action="store_true",
                        help="print the tokens per line of every language")
    parser.add_argument("--udhr", type=int, metavar="N",
                        help="train on the UDHR in N languages instead of PUD")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(json.loads(args.worker))
        return 0
    sys.path.insert(0, str(REPO_ROOT / "python"))
    import tokensmith as ts

    with tempfile.TemporaryDirectory() as tmp:
        lines = TEST[1] - TEST[0]
        if args.udhr:
            train, test_bytes = udhr(args.udhr)
            dev, test, lines = {}, train, 1
            args.variants = [v for v in args.variants if v not in ("parity", "hybrid")]
            print(f"UDHR: {len(train)} languages, {sum(test_bytes.values()) / 1e6:.2f} MB; "
                  f"spread of tokens per document, in-sample")
        else:
            train, dev, test, test_bytes = split(Path(tmp))
            print(f"PUD: {len(train)} languages; train lines {TRAIN[0]}-{TRAIN[1] - 1} "
                  f"({sum(Path(p).stat().st_size for p in train.values()) / 1e6:.2f} MB), "
                  f"dev {DEV[0]}-{DEV[1] - 1}, held-out test {TEST[0]}-{TEST[1] - 1}; "
                  f"hybrid: first {args.hybrid:.0%} of merges classical")
        header = (f"{'vocab':>6} {'variant':<13}{'spread':>7}{'gini':>7}{'bytes/tok':>10}"
                  f"{'worst':>6}{'best':>5}{'train s':>9}{'peak MB':>9}")
        print(header)
        print("-" * len(header))
        for vocab in args.vocab:
            for variant in args.variants:
                spec = {"variant": variant, "vocab": vocab, "train": train, "dev": dev,
                        "test": test, "hybrid": args.hybrid,
                        "regex": ts.patterns.resolve("gpt4")}
                runs = [run(spec) for _ in range(args.repeat)]
                fastest = min(runs, key=lambda r: r["train_s"])
                m = measure(fastest, test_bytes, lines)
                peak = min(r["peak_rss_kib"] for r in runs) / 1024
                print(f"{vocab:>6} {variant:<13}{m['spread']:>7.3f}{m['gini']:>7.4f}"
                      f"{m['bytes_per_token']:>10.3f}{m['worst']:>6}{m['best']:>5}"
                      f"{fastest['train_s']:>9.2f}{peak:>9.1f}")
                if args.per_language:
                    print("       " + " ".join(f"{lang} {v:.1f}"
                                               for lang, v in m["per_line"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
