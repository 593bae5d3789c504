"""Train SentencePiece-style tokenizers with tokensmith and with `sentencepiece`
on the same data and settings, and compare time, memory and compression.

    python benchmarks/train_sentencepiece.py                 # en.txt and zh.txt, 8k and 32k
    python benchmarks/train_sentencepiece.py --corpus zh --vocab 8000 --models unigram
    python benchmarks/train_sentencepiece.py --corpus ja --rule identity   # text as it is
    python benchmarks/train_sentencepiece.py --corpus en code zh ja pud --vocab 8000 32000
    python benchmarks/train_sentencepiece.py --json benchmarks/results/train_sentencepiece.json

Each corpus from ../shared/corpus/ is split by line: every tenth line is held
out, the rest is the training file. Both libraries read that file with the
same settings (`model_type`, `vocab_size`, `character_coverage`, the
normalization rule — `nmt_nfkc`, spm_train's default, unless `--rule` says
otherwise; tokensmith's charsmap for it is built and cached before the runs — no
sentence-length limit, all sentences, 2 threads);
each run is a fresh process, and its peak memory is its own high-water mark
(VmHWM, which unlike ru_maxrss does not inherit the parent's). Compression is
bytes of held-out text per token, encoded by `sentencepiece` for both
models (tokensmith's `.model` files load there).
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
# (a glob: its files joined, in name order, into one corpus: PUD's 13 languages)
FILES = {"en": "en.txt", "code": "code.txt", "zh": "zh.txt", "ja": "ja.txt",
         "pud": "parallel/pud/*.txt"}

def _corpus_file(name: str, work: Path) -> Path | None:
    """The corpus file of ``name`` (a glob's files joined into one in ``work``)."""
    pattern = FILES[name]
    if "*" not in pattern:
        path = CORPUS / pattern
        return path if path.exists() else None
    parts = sorted(CORPUS.glob(pattern))
    if not parts:
        return None
    joined = work / f"{name}.txt"
    with joined.open("wb") as out:
        for part in parts:
            data = part.read_bytes()
            out.write(data if data.endswith(b"\n") else data + b"\n")
    return joined


RUN_TOKENSMITH = r"""
import json, sys, time
import tokensmith as ts
train, out, model, vocab, coverage, rule = sys.argv[1:7]
t = time.perf_counter()
tok = ts.train(train, model=model, vocab_size=int(vocab), character_coverage=float(coverage),
               normalization_rule_name=rule)
elapsed = time.perf_counter() - t
tok.save(out)
hwm = next(ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))
print(json.dumps({"seconds": elapsed, "rss_mb": int(hwm.split()[1]) / 1024}))
"""

RUN_SENTENCEPIECE = r"""
import json, sys, time
import sentencepiece as spm
train, out, model, vocab, coverage, rule = sys.argv[1:7]
t = time.perf_counter()
spm.SentencePieceTrainer.train(
    input=train, model_prefix=out[: -len(".model")], model_type=model, vocab_size=int(vocab),
    character_coverage=float(coverage), normalization_rule_name=rule,
    max_sentence_length=1 << 30, input_sentence_size=0, num_threads=2, minloglevel=2)
elapsed = time.perf_counter() - t
hwm = next(ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))
print(json.dumps({"seconds": elapsed, "rss_mb": int(hwm.split()[1]) / 1024}))
"""


def split(path: Path, workdir: Path, limit_mb: float | None) -> tuple[Path, str]:
    data = path.read_bytes()
    if limit_mb:
        data = data[: int(limit_mb * 1e6)]
        data = data[: data.rfind(b"\n") + 1]
    lines = data.decode("utf-8", "replace").split("\n")
    train = [ln for i, ln in enumerate(lines) if i % 10 != 9]
    held = [ln for i, ln in enumerate(lines) if i % 10 == 9]
    out = workdir / f"{path.stem}.train.txt"
    out.write_text("\n".join(train), encoding="utf-8")
    return out, "\n".join(held)


def run(script: str, *args: str) -> dict[str, float]:
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bytes_per_token(model_file: Path, held: str) -> float:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(model_file))
    lines = [ln for ln in held.split("\n") if ln.strip()]
    n_tokens = sum(len(ids) for ids in sp.encode(lines))
    return sum(len(ln.encode("utf-8")) for ln in lines) / n_tokens


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", nargs="+", default=["en", "zh"], choices=sorted(FILES))
    ap.add_argument("--vocab", nargs="+", type=int, default=[8000, 32000])
    ap.add_argument("--models", nargs="+", default=["unigram", "bpe"],
                    choices=["unigram", "bpe"])
    ap.add_argument("--coverage", type=float, default=0.9995)
    ap.add_argument("--rule", default="nmt_nfkc",
                    choices=["nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity"],
                    help="the normalization rule of both trainers (default nmt_nfkc)")
    ap.add_argument("--limit-mb", type=float, default=None,
                    help="train on the first N MB only (quick runs)")
    ap.add_argument("--json", metavar="PATH",
                    help="also write the table as a results file (benchmarks/render.py)")
    ap.add_argument("--save", metavar="FILE", help="also write every measurement as JSON")
    args = ap.parse_args()

    # the charsmap of the rule is built once and cached (a few seconds): not in the timings
    from tokensmith._sp_charsmap import charsmap

    charsmap(args.rule)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for corpus in args.corpus:
            path = _corpus_file(corpus, work)
            if path is None:
                print(f"skipping {corpus}: {CORPUS / FILES[corpus]} is not there",
                      file=sys.stderr)
                continue
            train, held = split(path, work, args.limit_mb)
            size_mb = train.stat().st_size / 1e6
            for vocab in args.vocab:
                for model in args.models:
                    ours = work / f"ts-{corpus}-{model}-{vocab}.model"
                    theirs = work / f"sp-{corpus}-{model}-{vocab}.model"
                    ts_model = "unigram" if model == "unigram" else "sentencepiece-bpe"
                    common = (str(vocab), str(args.coverage), args.rule)
                    try:
                        a = run(RUN_TOKENSMITH, str(train), str(ours), ts_model, *common)
                        a["bpt"] = bytes_per_token(ours, held)
                    except RuntimeError as e:
                        a = {"error": str(e).strip().splitlines()[-1]}
                    try:
                        b = run(RUN_SENTENCEPIECE, str(train), str(theirs), model, *common)
                        b["bpt"] = bytes_per_token(theirs, held)
                    except RuntimeError as e:
                        b = {"error": str(e).strip().splitlines()[-1]}
                    row = {"corpus": corpus, "train_mb": size_mb, "model": model,
                           "vocab": vocab, "tokensmith": a, "sentencepiece": b}
                    rows.append(row)
                    print_row(row)
                    sys.stdout.flush()
    if args.save:
        Path(args.save).write_text(json.dumps(rows, indent=2))
    if args.json:
        write_json(args.json, rows, args.rule)


COLUMNS = ["corpus", "model", {"name": "vocab", "format": "{:,}"},
           {"name": "tokensmith s", "format": "{:.1f}"}, {"name": "spm s", "format": "{:.1f}"},
           {"name": "speed-up", "format": "{:.1f}x"}, {"name": "ts MB", "format": "{:,.0f}"},
           {"name": "spm MB", "format": "{:,.0f}"}, {"name": "ts B/tok", "format": "{:.3f}"},
           {"name": "spm B/tok", "format": "{:.3f}"}, {"name": "ts/spm", "format": "{:.3f}"}]


def write_json(path: str, rows: list[dict], rule: str) -> None:
    """The table of ``benchmarks/README.md`` as a results file (see ``render.py``)."""
    from importlib.metadata import version

    from _results import command_line, write_results

    table, failed = [], []
    for row in rows:
        a, b = row["tokensmith"], row["sentencepiece"]
        if "error" in a or "error" in b:
            failed.append(f"{row['corpus']} {row['model']} {row['vocab']:,}")
            continue
        table.append([row["corpus"], row["model"], row["vocab"], a["seconds"], b["seconds"],
                      b["seconds"] / a["seconds"], a["rss_mb"], b["rss_mb"], a["bpt"], b["bpt"],
                      a["bpt"] / b["bpt"]])
    notes = f"`sentencepiece` {version('sentencepiece')}, one run, rule `{rule}`."
    if failed:
        notes += f" Failed: {', '.join(failed)}."
    write_results(path, "train_sentencepiece.py", command_line("train_sentencepiece.py"), COLUMNS,
                  table, notes)


HEADER_PRINTED = False


def print_row(row: dict) -> None:
    global HEADER_PRINTED
    if not HEADER_PRINTED:
        print(f"{'corpus':<7}{'model':<9}{'vocab':>7}  {'tokensmith s':>12} {'spm s':>8} "
              f"{'speed-up':>9}  {'ts MB':>7} {'spm MB':>7}  {'ts B/tok':>9} {'spm B/tok':>9} "
              f"{'ts/spm':>7}")
        HEADER_PRINTED = True
    a, b = row["tokensmith"], row["sentencepiece"]
    if "error" in a or "error" in b:
        print(f"{row['corpus']:<7}{row['model']:<9}{row['vocab']:>7}  "
              f"error: {a.get('error') or b.get('error')}")
        return
    print(f"{row['corpus']:<7}{row['model']:<9}{row['vocab']:>7}  {a['seconds']:>12.1f} "
          f"{b['seconds']:>8.1f} {b['seconds'] / a['seconds']:>8.1f}x  {a['rss_mb']:>7.0f} "
          f"{b['rss_mb']:>7.0f}  {a['bpt']:>9.3f} {b['bpt']:>9.3f} "
          f"{a['bpt'] / b['bpt']:>7.3f}")


if __name__ == "__main__":
    if os.environ.get("TOKENSMITH_NUM_THREADS") is None:
        os.environ["TOKENSMITH_NUM_THREADS"] = "2"
    started = time.time()
    main()
    print(f"({time.time() - started:.0f} s in all)")
