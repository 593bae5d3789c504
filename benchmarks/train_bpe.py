#!/usr/bin/env python3
"""Benchmark: byte-level BPE training, tokensmith vs. Hugging Face ``tokenizers``.

Both libraries train on the same file(s) with the same settings (byte-level
BPE, the GPT-4/cl100k pre-tokenizer regex, the same vocabulary size and
special token), each in its own fresh Python process so that peak memory
(``ru_maxrss``) is measured per trainer. Run it from anywhere::

    python benchmarks/train_bpe.py
    python benchmarks/train_bpe.py --threads 2 --repeat 3
    python benchmarks/train_bpe.py --holdout --repeat 3 --json benchmarks/results/train_bpe.json

See ``benchmarks/README.md`` for what is measured.
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

LIBRARIES = ("tokensmith", "tokenizers")
NAMES = {"tokensmith": "tokensmith", "tokenizers": "`tokenizers`"}  # as the README's table has them
SPECIAL = "<|endoftext|>"
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = REPO_ROOT.parent / "shared" / "corpus" / "en.txt"
SAMPLE_BYTES = 1_000_000  # held-out sample without --holdout: the last 1 MB
HOLDOUT_FRACTION = 0.9  # with --holdout: train on the first 90 %, measure on the rest


# --------------------------------------------------------------------------- worker
# A worker is this script run as ``--worker SPEC_JSON``: it trains one library,
# then prints one JSON line with its measurements on stdout.


def _train_tokensmith(files: list[str], vocab_size: int, regex: str):  # type: ignore[no-untyped-def]
    import tokensmith as ts

    assert ts.patterns.resolve("gpt4") == regex
    t0 = time.perf_counter()
    tok = ts.train(files, vocab_size=vocab_size, special_tokens=[SPECIAL], pattern="gpt4")
    train_s = time.perf_counter() - t0
    return tok, train_s, tok.vocab_size, lambda text: tok.encode(text, disallowed_special=())


def _train_tokenizers(files: list[str], vocab_size: int, regex: str):  # type: ignore[no-untyped-def]
    # The regex comes from the parent (tokensmith.patterns.CL100K), so this
    # process never imports tokensmith and its memory is tokenizers' alone.
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(regex), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[SPECIAL],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
        min_frequency=0,
    )
    t0 = time.perf_counter()
    tok.train(files, trainer)
    train_s = time.perf_counter() - t0
    return tok, train_s, tok.get_vocab_size(), lambda text: tok.encode(text).ids


def worker(spec: dict) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF)
    train = _train_tokensmith if spec["library"] == "tokensmith" else _train_tokenizers
    tok, train_s, vocab, encode = train(spec["files"], spec["vocab_size"], spec["regex"])
    after = resource.getrusage(resource.RUSAGE_SELF)
    # Peak RSS up to the end of training (ru_maxrss is KiB on Linux), taken
    # before the held-out encoding so that encoding buffers do not count.
    peak_kib = after.ru_maxrss
    # CPU seconds of all threads (includes the library import): less sensitive
    # than wall time to other processes competing for the cores.
    cpu_s = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)

    text = Path(spec["sample"]).read_text(encoding="utf-8")
    t0 = time.perf_counter()
    ids = encode(text)
    encode_s = time.perf_counter() - t0
    n_bytes = len(text.encode("utf-8"))
    tokens = sorted(tok.get_vocab()) if spec.get("dump_vocab") else None
    result = {
        "library": spec["library"],
        "train_s": train_s,
        "peak_rss_kib": peak_kib,
        "rss_before_import_kib": before.ru_maxrss,
        "import_and_train_cpu_s": cpu_s,
        "peak_rss_kib_after_encode": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "vocab_size": vocab,
        "sample_bytes": n_bytes,
        "sample_tokens": len(ids),
        "bytes_per_token": n_bytes / len(ids) if ids else float("nan"),
        "encode_s": encode_s,
    }
    if tokens is not None:
        result["vocab"] = tokens
    print(json.dumps(result))


# --------------------------------------------------------------------------- parent


def run_worker(spec: dict, env: dict[str, str]) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall_s = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(
            f"error: the {spec['library']} worker failed (exit code {proc.returncode}):\n"
            f"{proc.stderr.strip()}"
        )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wall_s"] = wall_s
    return result


def _split_point(path: Path, fraction: float) -> int:
    """Byte offset near ``fraction`` of the file, moved forward to just after a newline."""
    size = path.stat().st_size
    with path.open("rb") as f:
        f.seek(int(size * fraction))
        f.readline()
        return f.tell()


def _tail(path: Path, n_bytes: int) -> bytes:
    """The last ``n_bytes`` of a file, starting on a UTF-8 character boundary."""
    size = path.stat().st_size
    with path.open("rb") as f:
        f.seek(max(0, size - n_bytes))
        data = f.read()
    start = 0
    while start < len(data) and (data[start] & 0xC0) == 0x80:  # continuation byte
        start += 1
    return data[start:]


def prepare(files: list[Path], holdout: bool, workdir: Path) -> tuple[list[str], Path, int]:
    """Training files, held-out sample file and training bytes."""
    sample = workdir / "sample.txt"
    if not holdout:
        # The sample is the last 1 MB of the corpus (of the last file); it is
        # part of the training data too, so the figure is informational.
        sample.write_bytes(_tail(files[-1], SAMPLE_BYTES))
        return [str(p) for p in files], sample, sum(p.stat().st_size for p in files)
    train_files: list[str] = []
    held: list[bytes] = []
    total = 0
    for i, path in enumerate(files):
        cut = _split_point(path, HOLDOUT_FRACTION)
        data = path.read_bytes()
        part = workdir / f"train-{i}-{path.name}"
        part.write_bytes(data[:cut])
        train_files.append(str(part))
        held.append(data[cut:])
        total += cut
    sample.write_bytes(b"".join(held))
    return train_files, sample, total


def best(runs: list[dict]) -> dict:
    """Best of N: the minimum of each measurement over the runs."""
    out = dict(runs[0])
    for key in ("train_s", "wall_s", "peak_rss_kib", "encode_s", "import_and_train_cpu_s"):
        out[key] = min(r[key] for r in runs)
    return out


def _mb(n_bytes: float) -> str:
    return f"{n_bytes / 1e6:.1f} MB"


def render(report: dict) -> str:
    s = report["settings"]
    names = " + ".join(Path(f).name for f in s["files"])
    threads = s["threads"] if s["threads"] is not None else f"default ({s['cpu_count']} cores)"
    repeat = f", best of {s['repeat']}" if s["repeat"] > 1 else ""
    if s["holdout"]:
        sample = (
            f"trained on the first 90% ({_mb(s['train_bytes'])}), "
            f"bytes/token on the last 10% ({_mb(s['sample_bytes'])}, held out)"
        )
    else:
        sample = (
            f"trained on all of it, bytes/token on the last {_mb(s['sample_bytes'])} "
            f"(also trained on)"
        )
    lines = [
        f"corpus: {names} ({_mb(s['corpus_bytes'])}), vocab {s['vocab_size']:,}, "
        f"threads: {threads}{repeat}",
        sample,
        f"{'library':<12}{'train s':>8}{'wall s':>9}{'peak RSS MB':>14}{'vocab':>8}"
        f"{'bytes/token':>14}",
    ]
    for lib in LIBRARIES:
        r = report["results"][lib]
        lines.append(
            f"{lib:<12}{r['train_s']:>8.2f}{r['wall_s']:>9.2f}"
            f"{r['peak_rss_kib'] / 1024:>14.1f}{r['vocab_size']:>8}{r['bytes_per_token']:>14.2f}"
        )
    ratio = report["ratios"]
    lines.append(
        f"ratio (tokenizers / tokensmith): train time {ratio['train_time']:.1f}x, "
        f"wall time {ratio['wall_time']:.1f}x, peak memory {ratio['peak_memory']:.1f}x"
    )
    if "shared_vocab" in report:
        lines.append(
            f"tokens in both vocabularies: {report['shared_vocab']:,} of {s['vocab_size']:,}"
        )
    return "\n".join(lines)


def write_json(path: str, report: dict, argv: list[str] | None) -> None:
    """The table of ``benchmarks/README.md`` as a results file (see ``render.py``)."""
    from _results import command_line, write_results

    s = report["settings"]
    measured = "held-out bytes/token" if s["holdout"] else "bytes/token (trained on)"
    columns = ["library", {"name": "train s", "format": "{:.2f}"},
               {"name": "peak MB", "format": "{:,.0f}"}, {"name": measured, "format": "{:.2f}"}]
    rows = [[NAMES[lib], r["train_s"], r["peak_rss_kib"] / 1024, r["bytes_per_token"]]
            for lib, r in report["results"].items()]
    notes = f"Best of {s['repeat']}." if s["repeat"] > 1 else "One run."
    write_results(path, "train_bpe.py", command_line("train_bpe.py", argv), columns, rows, notes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Train byte-level BPE with tokensmith and with Hugging Face tokenizers "
        "(BpeTrainer) on the same corpus and compare time, peak memory and quality."
    )
    parser.add_argument(
        "--file", action="append", type=Path, metavar="PATH",
        help=f"training corpus (repeatable; default {DEFAULT_CORPUS})",
    )
    parser.add_argument("--vocab-size", type=int, default=32_000, help="default 32000")
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="N",
        help="run each trainer N times (fresh process each) and keep the best (default 1)",
    )
    parser.add_argument(
        "--threads", type=int, metavar="N",
        help="set RAYON_NUM_THREADS=N for both libraries (default: rayon's default)",
    )
    parser.add_argument(
        "--holdout", action="store_true",
        help="train on the first 90%% of each file and measure bytes/token on the last 10%%",
    )
    parser.add_argument("--json", metavar="PATH",
                        help="also write the table as a results file (benchmarks/render.py)")
    parser.add_argument("--raw-json", action="store_true",
                        help="print the whole report as JSON instead of the table")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        worker(json.loads(args.worker))
        return 0
    from tokensmith.patterns import CL100K

    files = args.file or [DEFAULT_CORPUS]
    missing = [f for f in files if not f.is_file()]
    if missing:
        hint = (
            " (the default corpus lives in ../shared/corpus/ next to the repository; "
            "pass --file PATH to use another)" if not args.file else ""
        )
        sys.exit(f"error: corpus file not found: {', '.join(map(str, missing))}{hint}")
    if args.vocab_size < 257:
        parser.error("--vocab-size must be at least 257 (256 bytes + the special token)")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be at least 1")

    env = dict(os.environ)
    if args.threads is not None:
        env["RAYON_NUM_THREADS"] = str(args.threads)
    threads = args.threads
    if threads is None and env.get("RAYON_NUM_THREADS"):
        threads = int(env["RAYON_NUM_THREADS"])

    load_before = os.getloadavg()[0]
    if load_before >= 0.5 and not args.raw_json:
        print(
            f"note: 1-minute load average is {load_before:.2f}: other processes are using the "
            f"CPU, timings may be noisy" + (" (try --repeat 3)" if args.repeat < 3 else ""),
            file=sys.stderr,
        )
    with tempfile.TemporaryDirectory(prefix="tokensmith-bench-") as tmp:
        train_files, sample, train_bytes = prepare(files, args.holdout, Path(tmp))
        runs: dict[str, list[dict]] = {lib: [] for lib in LIBRARIES}
        for i in range(args.repeat):
            # Alternate the libraries so that background load hits both alike.
            for lib in LIBRARIES:
                spec = {
                    "library": lib, "files": train_files, "vocab_size": args.vocab_size,
                    "sample": str(sample), "dump_vocab": i == 0, "regex": CL100K,
                }
                if not args.raw_json:
                    print(f"run {i + 1}/{args.repeat}: training {lib} …", file=sys.stderr)
                runs[lib].append(run_worker(spec, env))
        sample_bytes = sample.stat().st_size

    vocabs = {lib: set(runs[lib][0].pop("vocab")) for lib in LIBRARIES}
    results = {lib: best(runs[lib]) for lib in LIBRARIES}
    ts, hf = results["tokensmith"], results["tokenizers"]
    report = {
        "settings": {
            "files": [str(f.resolve()) for f in files],
            "corpus_bytes": sum(f.stat().st_size for f in files),
            "train_bytes": train_bytes,
            "sample_bytes": sample_bytes,
            "holdout": args.holdout,
            "vocab_size": args.vocab_size,
            "special_tokens": [SPECIAL],
            "pattern": "gpt4 (cl100k)",
            "threads": threads,
            "cpu_count": os.cpu_count(),
            "repeat": args.repeat,
            "load_average_before": load_before,
            "load_average_after": os.getloadavg()[0],
            "python": sys.version.split()[0],
            "versions": _versions(),
        },
        "results": results,
        "runs": runs,
        "ratios": {
            "train_time": hf["train_s"] / ts["train_s"],
            "wall_time": hf["wall_s"] / ts["wall_s"],
            "peak_memory": hf["peak_rss_kib"] / ts["peak_rss_kib"],
        },
        "shared_vocab": len(vocabs["tokensmith"] & vocabs["tokenizers"]),
    }
    if args.raw_json:
        print(json.dumps(report, indent=2))
    else:
        print(render(report))
    if args.json:
        write_json(args.json, report, argv)
    return 0


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in LIBRARIES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


if __name__ == "__main__":
    sys.exit(main())
