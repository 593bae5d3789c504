#!/usr/bin/env python3
"""Benchmark: every trainer and training option, side by side with the peers'
trainers, on the same text — the one table of trained-tokenizer quality.

    python benchmarks/train_table.py                       # en, code, zh, pud at 8k and 32k
    python benchmarks/train_table.py --corpus zh --vocab 8000 --runners bpe,tokenizers-bpe
    python benchmarks/train_table.py --json benchmarks/results/train_table.json

Corpora (``../shared/corpus/``): ``en``, ``code`` and ``zh`` are cut to their
first ``--limit-mb`` MB (at a line break; default 10), trained on the first 90%
(cut at a line break) and measured on the rest; ``pud`` is the 13 languages of
the parallel PUD corpus, lines 0-799 of each language trained on (joined),
800-899 the development set of parity-aware training, 900-999 measured.

Runners (each a fresh process; its peak memory is its own ``VmHWM``):

- byte-level BPE: tokensmith (``bpe``), with SuperBPE (``superbpe``:
  ``superword_start`` at 0.9 of the vocabulary, chunks of up to 4 words), with
  parity-aware merges (``parity``, ``pud`` only: one language per PUD file,
  the development lines as ``parity_dev``), with PickyBPE (``picky``: τ 0.9,
  where this tokensmith has ``picky_threshold``), and ``tokenizers``' BpeTrainer
  with the same pattern (``tokenizers-bpe``);
- WordPiece: tokensmith (likelihood score, ``wordpiece``) and ``tokenizers``'
  WordPieceTrainer (``tokenizers-wordpiece``), both with BERT's uncased
  normalizer and pre-tokenizer, ``min_frequency`` 2, ``limit_alphabet`` 1000;
- Unigram and SentencePiece BPE: tokensmith (``unigram``, ``sp-bpe``) and
  ``spm_train`` (``sentencepiece-unigram``, ``sentencepiece-bpe``) with the same
  options (``nmt_nfkc``, character coverage 0.9995, all sentences, 2 threads).

Measured on the held-out text with ``tokensmith.evaluate`` (each trained file
loaded by tokensmith, which encodes it id for id as its own library does):
bytes per token, Rényi efficiency (α 2.5), fertility (tokens per word), and the
parity spread on PUD's lines 900-999 (the largest premium over English divided
by the smallest; meaningful for the ``pud`` rows, a property of the others).
A run the trainer refuses (a vocabulary larger than the text allows) is listed
with its error.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parents[1] / "shared" / "corpus"
PUD = CORPUS / "parallel" / "pud"
TRAIN, DEV, TEST = (0, 800), (800, 900), (900, 1000)
RUNNERS = (
    "bpe", "superbpe", "parity", "picky", "tokenizers-bpe",
    "wordpiece", "tokenizers-wordpiece",
    "unigram", "sentencepiece-unigram",
    "sp-bpe", "sentencepiece-bpe",
)
COVERAGE = 0.9995
SUPERWORD_AT = 0.9
PICKY_THRESHOLD = 0.9
BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


# ----------------------------------------------------------------- worker side


def _peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _tokenizers(spec: dict[str, Any]) -> None:
    # the pattern comes from the parent: this process never imports tokensmith
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    vocab = spec["vocab"]
    if spec["runner"] == "tokenizers-bpe":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(spec["pattern"]), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
        tok.decoder = decoders.ByteLevel()
        trainer: Any = trainers.BpeTrainer(
            vocab_size=vocab, show_progress=False,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    else:
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece()
        trainer = trainers.WordPieceTrainer(
            vocab_size=vocab, min_frequency=2, limit_alphabet=1000, show_progress=False,
            special_tokens=BERT_SPECIALS)
    tok.train(spec["train"], trainer)
    tok.save(spec["out"])


def _sentencepiece(spec: dict[str, Any]) -> None:
    import sentencepiece as spm

    joined = spec["out"] + ".txt"
    with open(joined, "wb") as f:
        for path in spec["train"]:
            f.write(Path(path).read_bytes())
    spm.SentencePieceTrainer.train(
        input=joined, model_prefix=spec["out"][: -len(".model")],
        model_type=spec["runner"].split("-")[1], vocab_size=spec["vocab"],
        character_coverage=COVERAGE, max_sentence_length=1 << 30, input_sentence_size=0,
        num_threads=2, minloglevel=2)


def _tokensmith(spec: dict[str, Any]) -> None:
    import tokensmith as ts

    runner, vocab, files = spec["runner"], spec["vocab"], spec["train"]
    options: dict[str, Any] = {"vocab_size": vocab}
    if runner == "superbpe":
        options.update(superword_start=int(vocab * SUPERWORD_AT), superword_words=4)
    elif runner == "picky":
        options.update(picky_threshold=PICKY_THRESHOLD)
    elif runner in ("unigram", "sp-bpe"):
        options.update(model="unigram" if runner == "unigram" else "sentencepiece-bpe",
                       character_coverage=COVERAGE)
    if runner == "wordpiece":
        tok = ts.train_wordpiece(files, vocab_size=vocab, min_frequency=2, limit_alphabet=1000,
                                 special_tokens=BERT_SPECIALS)
    elif runner == "parity":
        tok = ts.train(languages=spec["languages"], parity_dev=spec["dev"], **options)
    else:
        tok = ts.train(files, **options)
    tok.save(spec["out"])


def worker(spec: dict[str, Any]) -> None:
    t0 = time.perf_counter()
    if spec["runner"].startswith("tokenizers-"):
        _tokenizers(spec)
    elif spec["runner"].startswith("sentencepiece-"):
        _sentencepiece(spec)
    else:
        _tokensmith(spec)
    print(json.dumps({"seconds": time.perf_counter() - t0, "rss_mb": _peak_mb()}))


# ----------------------------------------------------------------- parent side


class Corpus:
    """One corpus: training files, held-out lines, and per-language files for parity."""

    def __init__(self, train: list[str], held: list[str],
                 languages: dict[str, str] | None = None, dev: dict[str, str] | None = None):
        self.train, self.held, self.languages, self.dev = train, held, languages, dev


def _cut(data: bytes, at: int) -> int:
    cut = data.rfind(b"\n", 0, at) + 1
    return cut or at


def prepare(name: str, work: Path, limit_mb: float) -> Corpus | None:
    if name == "pud":
        return _prepare_pud(work)
    src = CORPUS / f"{name}.txt"
    if not src.exists():
        return None
    data = src.read_bytes()
    data = data[: _cut(data, int(limit_mb * 1e6))] if len(data) > limit_mb * 1e6 else data
    cut = _cut(data, int(len(data) * 0.9))
    train = work / f"{name}.train.txt"
    train.write_bytes(data[:cut])
    held = [ln for ln in data[cut:].decode("utf-8", "replace").splitlines() if ln.strip()]
    return Corpus([str(train)], held)


def _prepare_pud(work: Path) -> Corpus | None:
    files = sorted(PUD.glob("*.txt"))
    if len(files) < 2:
        return None
    languages: dict[str, str] = {}
    dev: dict[str, str] = {}
    held: list[str] = []
    for f in files:
        lines = f.read_text(encoding="utf-8").splitlines()
        for part, (a, b), into in (("train", TRAIN, languages), ("dev", DEV, dev)):
            path = work / f"pud.{part}.{f.stem}.txt"
            path.write_text("\n".join(lines[a:b]) + "\n", encoding="utf-8")
            into[f.stem] = str(path)
        held += [ln for ln in lines[TEST[0]:TEST[1]] if ln.strip()]
    return Corpus(list(languages.values()), held, languages, dev)


def pud_test() -> dict[str, list[str]]:
    return {f.stem: f.read_text(encoding="utf-8").splitlines()[TEST[0]:TEST[1]]
            for f in sorted(PUD.glob("*.txt"))}


def supported(runner: str, corpus: Corpus) -> str | None:
    """Why ``runner`` does not run on ``corpus`` (None: it does)."""
    if runner == "parity" and corpus.languages is None:
        return "parity needs per-language files (pud only)"
    if runner == "picky":
        if importlib.util.find_spec("tokensmith._train_picky") is None:
            return "this tokensmith has no picky_threshold"
    return None


def train_one(runner: str, corpus: Corpus, vocab: int, work: Path) -> dict[str, Any]:
    import tokensmith as ts

    suffix = ".model" if runner.startswith("sentencepiece-") else ".json"
    out = str(work / f"{runner}-{vocab}{suffix}")
    spec = {"runner": runner, "vocab": vocab, "train": corpus.train, "out": out,
            "languages": corpus.languages, "dev": corpus.dev,
            "pattern": ts.patterns.resolve("gpt4")}
    env = dict(os.environ, PYTHONPATH=str(HERE.parent / "python"))
    done = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)],
                          capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        last = done.stderr.strip().splitlines()[-1:] or ["failed"]
        return {"error": last[0][:160]}
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "file": out}


def measure(path: str, held: list[str], parallel: dict[str, list[str]] | None) -> dict[str, Any]:
    import tokensmith as ts
    from tokensmith import evaluate as ev

    tok = ts.load(path)
    out = {"bytes_per_token": ev.compression(tok, held).bytes_per_token,
           "renyi": ev.renyi_efficiency(tok, held).efficiency,
           "fertility": ev.fertility(tok, held).fertility, "parity": None}
    if parallel:
        out["parity"] = ev.parity(tok, parallel).spread
    return out


def run(args: argparse.Namespace) -> list[list[Any]]:
    parallel = pud_test() if PUD.exists() else None
    rows: list[list[Any]] = []
    for name in args.corpus:
        with tempfile.TemporaryDirectory() as tmp:
            corpus = prepare(name, Path(tmp), args.limit_mb)
            if corpus is None:
                print(f"skipped {name}: its files are not in {CORPUS}", file=sys.stderr)
                continue
            for vocab in args.vocab:
                for runner in args.runners:
                    why = supported(runner, corpus)
                    if why:
                        continue
                    r = train_one(runner, corpus, vocab, Path(tmp))
                    if "error" in r:
                        rows.append([name, vocab, runner, None, None, None, None, None, None,
                                     f"refused: {r['error']}"])
                    else:
                        m = measure(r["file"], corpus.held, parallel)
                        rows.append([name, vocab, runner, m["bytes_per_token"], m["renyi"],
                                     m["fertility"], m["parity"], r["seconds"], r["rss_mb"], ""])
                    print(" | ".join("" if c is None else f"{c:.3f}" if isinstance(c, float)
                                     else str(c) for c in rows[-1]), file=sys.stderr, flush=True)
    return rows


def merge_rows(old: list[list[Any]], new: list[list[Any]]) -> list[list[Any]]:
    """``old`` with the rows of ``new`` in place of those with the same corpus,
    vocabulary and trainer (new ones after the last of their corpus and vocabulary)."""
    fresh = {tuple(r[:3]): r for r in new}
    out = [fresh.pop(tuple(r[:3]), r) for r in old]
    for key, row in fresh.items():
        last = max((i for i, r in enumerate(out) if tuple(r[:2]) == key[:2]), default=len(out) - 1)
        out.insert(last + 1, row)
    return out


COLUMNS: list[Any] = [
    {"name": "corpus", "group": True}, {"name": "vocab", "format": "{:,}"}, "trainer",
    {"name": "bytes/token", "format": "{:.3f}"}, {"name": "Rényi 2.5", "format": "{:.3f}"},
    {"name": "fertility", "format": "{:.3f}"}, {"name": "parity spread", "format": "{:.3f}"},
    {"name": "train s", "format": "{:.1f}"}, {"name": "peak MB", "format": "{:,.0f}"}, "note",
]
NOTES = ("en, code, zh: the first --limit-mb MB, trained on 90%, measured on the rest; pud: "
         "13 languages, lines 0-799 trained on, 900-999 measured (800-899: parity_dev). "
         "Parity spread on PUD lines 900-999 for every row. Each run a fresh process "
         "(VmHWM); sentencepiece and tokensmith's Unigram/SentencePiece BPE with nmt_nfkc, "
         "coverage 0.9995; WordPiece uncased, min_frequency 2, limit_alphabet 1000.")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", nargs="+", default=["en", "code", "zh", "pud"])
    ap.add_argument("--vocab", nargs="+", type=int, default=[8000, 32000])
    ap.add_argument("--runners", default=",".join(RUNNERS), help=f"default {','.join(RUNNERS)}")
    ap.add_argument("--limit-mb", type=float, default=10.0, help="MB of en/code/zh (default 10)")
    ap.add_argument("--json", metavar="PATH", help="also write the table as a results file")
    ap.add_argument("--update", action="store_true",
                    help="with --json: keep the file's other rows, replace those measured now")
    args = ap.parse_args(argv)
    args.runners = [r for r in args.runners.split(",") if r]
    unknown = [r for r in args.runners if r not in RUNNERS]
    if unknown:
        ap.error(f"unknown runner(s): {', '.join(unknown)}")
    rows = run(args)
    for row in rows:
        print(" | ".join("" if c is None else f"{c:.3f}" if isinstance(c, float) else str(c)
                         for c in row))
    if args.json:
        sys.path.insert(0, str(HERE))
        from _results import command_line, write_results

        load = None
        if args.update and Path(args.json).exists():
            old = json.loads(Path(args.json).read_text(encoding="utf-8"))
            rows = merge_rows(old["rows"], rows)
            load = f"{old['load']}; rows re-measured at {os.getloadavg()[0]:.2f}"
        write_results(args.json, "train_table.py", command_line("train_table.py", argv),
                      COLUMNS, rows, notes=NOTES, load=load)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(json.loads(sys.argv[2]))
        sys.exit(0)
    sys.exit(main())
