#!/usr/bin/env python3
"""Benchmark: memory of training on a corpus that is one long line.

The same bytes are written twice: as one line (every newline of the source turned into
a space) and as the source's own lines. Each trainer of tokensmith, and Hugging Face
``tokenizers``' trainer of the same family, trains on both in a fresh process of its
own; the table gives peak memory (``VmHWM``) and time, and the ratio of one line to
many. tokensmith cuts long lines at places where no piece changes (README,
"Reliability"), so its memory should not follow line length. ``tokenizers`` reads a
whole line at a time. Run it from anywhere::

    python benchmarks/long_lines.py                 # 100 MB, every family
    python benchmarks/long_lines.py --mb 200 --families unigram
    python benchmarks/long_lines.py --mb 40 --json benchmarks/results/long_lines.json
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

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = REPO_ROOT.parent / "shared" / "corpus" / "en.txt"
FAMILIES = ("bpe", "wordpiece", "unigram", "sentencepiece-bpe")
PEER = {"bpe": "BpeTrainer", "wordpiece": "WordPieceTrainer", "unigram": "UnigramTrainer"}
# the families as the README's table names them
FAMILY_NAMES = {"bpe": "byte-level BPE", "wordpiece": "WordPiece", "unigram": "Unigram",
                "sentencepiece-bpe": "SentencePiece BPE"}


def _peak_rss() -> int:
    """This process's peak resident memory in bytes: ``VmHWM`` of its own address space
    (``ru_maxrss`` can carry over the parent's resident memory through fork and exec)."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _worker(spec: dict[str, object]) -> None:
    path, family, library = str(spec["path"]), str(spec["family"]), spec["library"]
    size = int(spec["vocab_size"])  # type: ignore[call-overload]
    t0 = time.perf_counter()
    extra: dict[str, object] = {}
    if library == "count":  # counting alone: the memory per distinct piece
        from tokensmith import _core

        counter = _core.WordCounter(json.dumps({"normalizer": None, "pre_tokenizer": {
            "type": "Split", "pattern": {"Regex": r"\S+"}, "behavior": "Isolated",
            "invert": False}}))
        counter.feed_file(path, "strict")
        extra["distinct"] = counter.distinct
    elif library == "tokensmith":
        import tokensmith as ts

        ts.train([path], model=family, vocab_size=size)  # type: ignore[arg-type]
    elif library == "none":  # the interpreter and tokensmith imported, nothing done
        import tokensmith  # noqa: F401
    else:
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers

        model = {"bpe": models.BPE(), "wordpiece": models.WordPiece(unk_token="[UNK]"),
                 "unigram": models.Unigram()}[family]
        tok = Tokenizer(model)
        tok.pre_tokenizer = (pre_tokenizers.ByteLevel() if family == "bpe"
                             else pre_tokenizers.Metaspace() if family == "unigram"
                             else pre_tokenizers.BertPreTokenizer())
        trainer = getattr(trainers, PEER[family])(vocab_size=size, show_progress=False)
        tok.train([path], trainer)
    seconds = time.perf_counter() - t0
    peak = _peak_rss()
    print(json.dumps({"seconds": seconds, "peak": peak, **extra}))


def _run(spec: dict[str, object]) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _files(folder: Path, corpus: Path, n_bytes: int) -> tuple[Path, Path]:
    data = corpus.read_bytes()
    text = (data * (n_bytes // max(len(data), 1) + 1))[:n_bytes].decode("utf-8", "ignore")
    many = folder / "lines.txt"
    many.write_text(text, encoding="utf-8")
    one = folder / "one-line.txt"
    one.write_text(text.replace("\r", " ").replace("\n", " "), encoding="utf-8")
    return one, many


def _table_cell(r: dict[str, float]) -> str:
    return f"{r['peak'] / 2**20:,.0f} MB, {r['seconds']:.1f} s"


def write_json(path: str, rows: list[tuple[str, str, dict[str, dict[str, float]]]],
               args: argparse.Namespace) -> None:
    """The table of ``benchmarks/README.md`` as a results file (see ``render.py``)."""
    from _results import command_line, write_results

    columns = ["family", "library", {"name": "one line", "align": "right"},
               {"name": "lines", "align": "right"}, {"name": "ratio", "format": "{:#.3g}"}]
    table = [[FAMILY_NAMES[family], library, _table_cell(res["one"]), _table_cell(res["many"]),
              res["one"]["peak"] / res["many"]["peak"]] for family, library, res in rows]
    notes = f"{args.mb} MB of `{args.corpus.name}`, vocabulary {args.vocab_size:,}."
    write_results(path, "long_lines.py", command_line("long_lines.py"), columns, table, notes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--mb", type=int, default=100, help="corpus size (default 100 MB)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--families", nargs="*", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--no-peer", action="store_true", help="tokensmith only")
    parser.add_argument("--json", metavar="PATH",
                        help="also write the table as a results file (benchmarks/render.py)")
    args = parser.parse_args()
    if args.worker:
        _worker(json.loads(args.worker))
        return
    print(f"corpus: {args.corpus.name} repeated to {args.mb} MB; vocab {args.vocab_size}")
    print(f"{'family':<18} {'library':<11} {'one line':>18} {'lines':>18} {'memory ratio':>13}")
    measured: list[tuple[str, str, dict[str, dict[str, float]]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        one, many = _files(Path(tmp), args.corpus, args.mb << 20)
        for family in args.families:
            libraries = ["tokensmith"] + ([] if args.no_peer or family not in PEER
                                          else ["tokenizers"])
            for library in libraries:
                res = {}
                for name, path in (("one", one), ("many", many)):
                    res[name] = _run({"path": str(path), "family": family, "library": library,
                                      "vocab_size": args.vocab_size})
                cell = {k: f"{v['peak'] / 2**20:,.0f} MB {v['seconds']:6.1f} s"
                        for k, v in res.items()}
                ratio = res["one"]["peak"] / res["many"]["peak"]
                measured.append((family, library, res))
                print(f"{family:<18} {library:<11} {cell['one']:>18} {cell['many']:>18} "
                      f"{ratio:>12.2f}x", flush=True)
        base = _run({"path": str(many), "family": "bpe", "library": "none", "vocab_size": 0})
        count = _run({"path": str(many), "family": "", "library": "count", "vocab_size": 0})
        per = (count["peak"] - base["peak"]) / int(count["distinct"])
        print(f"counting alone (whitespace-separated words): {int(count['distinct']):,} "
              f"distinct pieces, {count['peak'] / 2**20:,.0f} MB peak "
              f"({base['peak'] / 2**20:,.0f} MB for Python and tokensmith): "
              f"{per:,.0f} bytes per distinct piece")
    if args.json:
        write_json(args.json, measured, args)


if __name__ == "__main__":
    main()
