"""Extend Llama-2's SentencePiece model and cl100k with tokens learned on Chinese,
and compare with the other ways of getting there.

    python benchmarks/extend.py                      # N = 5,000 and 20,000
    python benchmarks/extend.py --sizes 5000 --quick # one size, fewer rows
    python benchmarks/extend.py --json benchmarks/results/extend.json

`zh.txt` from ../shared/corpus/ is cut at the line break nearest 90%: the
first part is the new text, the rest is held out. For each base tokenizer and
each N the rows are:

* tokensmith `extend` (continued training: the base's own merges first, new
  ones after the last id); the same with `protect=` set to 1 MB of English
  (`en.txt`), so that new tokens that would change it are left out; and with
  `scripts=["Han"]` too, so that every new token holds a Chinese character;
* the Chinese-LLaMA recipe (Llama-2 only): `sentencepiece` trains a BPE model
  of N pieces on the new text, and its pieces Llama-2 lacks are appended
  (`tokensmith.merge`); the time is sentencepiece's training plus the merge;
* training from scratch on the new text with tokensmith (and, for cl100k, with
  `tokenizers`' BpeTrainer): the vocabulary size the extension adds, for the
  time and memory of extending against training.

Measured: tokens per character of the held-out Chinese (lower is better),
the share of English documents whose ids changed (paragraphs of the first
1 MB of the Gutenberg novels, which `protect` never saw; the protected text
is technical English, whose words the Chinese man pages share), the new
tokens actually added, seconds and peak memory. Every row runs in a fresh process; peak
memory is its own high-water mark (VmHWM).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared"
CORPUS = SHARED / "corpus"
ASSETS = SHARED / "assets"
BASES = {
    "llama2": ASSETS / "llama2" / "tokenizer.model",
    "cl100k": ASSETS / "cl100k_base" / "cl100k_base.tiktoken",
}

# Each worker gets: base path, work dir, N; prints JSON with seconds, rss_mb and
# the path of the tokenizer it made.
_PRELUDE = r"""
import json, sys, time
from pathlib import Path
import tokensmith as ts
base, work, n = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
train = (work / "train.txt").read_text(encoding="utf-8").splitlines()
def done(seconds, tok, name):
    path = tok.save(work / name)
    hwm = next(ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))
    print(json.dumps({"seconds": seconds, "rss_mb": int(hwm.split()[1]) / 1024,
                      "path": str(path)}))
"""

EXTEND = _PRELUDE + r"""
tok = ts.load(base)
mode = sys.argv[4] if len(sys.argv) > 4 else ""
protect = None
if mode:
    protect = json.loads((work / "protect.json").read_text(encoding="utf-8"))
scripts = ["Han"] if mode == "han" else None
t = time.perf_counter()
new = tok.extend(texts=train, add=n, protect=protect, scripts=scripts)
elapsed = time.perf_counter() - t
done(elapsed, new, f"extend-{n}-{mode or 'x'}" + Path(base).suffix)
"""

RECIPE = _PRELUDE + r"""
import sentencepiece as spm
tok = ts.load(base)
t = time.perf_counter()
spm.SentencePieceTrainer.train(
    input=str(work / "train.txt"), model_prefix=str(work / f"zh-{n}"), model_type="bpe",
    vocab_size=n, character_coverage=0.9995, byte_fallback=True, num_threads=2,
    max_sentence_length=1 << 30, input_sentence_size=0, minloglevel=2)
donor = ts.load(str(work / f"zh-{n}.model"))
merged = ts.merge(tok, donor)
elapsed = time.perf_counter() - t
done(elapsed, merged, f"recipe-{n}.model")
"""

SCRATCH = _PRELUDE + r"""
model = sys.argv[4]
t = time.perf_counter()
if model == "tokenizers":
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=n + 256, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    hf.train_from_iterator(train, trainer=trainer)
    elapsed = time.perf_counter() - t
    hwm = next(ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))
    print(json.dumps({"seconds": elapsed, "rss_mb": int(hwm.split()[1]) / 1024, "path": ""}))
    sys.exit(0)
size = n + 256 if model == "bpe" else n
tok = ts.train(texts=train, model=model, vocab_size=size, special_tokens=[],
               **({"byte_fallback": True} if model != "bpe" else {}))
elapsed = time.perf_counter() - t
done(elapsed, tok, f"scratch-{model}-{n}" + (".json" if model == "bpe" else ".model"))
"""


def prepare(work: Path) -> tuple[str, list[str], list[str]]:
    """The new text (written to work/train.txt), held-out Chinese, protected and
    measured English documents (the protected ones written to work/protect.json)."""
    zh = (CORPUS / "zh.txt").read_text(encoding="utf-8")
    cut = zh.index("\n", int(len(zh) * 0.9))
    (work / "train.txt").write_text(zh[:cut], encoding="utf-8")
    held = zh[cut + 1 :]
    with open(CORPUS / "en.txt", encoding="utf-8") as f:
        protected = [d for d in f.read(1_100_000).split("\n\n") if d.strip()]
    (work / "protect.json").write_text(json.dumps(protected), encoding="utf-8")
    novels = ""
    for path in sorted((CORPUS / "gutenberg").glob("*.txt")):
        novels += path.read_text(encoding="utf-8", errors="replace")[:250_000] + "\n\n"
        if len(novels) > 1_000_000:
            break
    measured = [d for d in novels.replace("\r\n", "\n").split("\n\n") if d.strip()]
    return held, protected, measured


def run(script: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"worker failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(base, path: str, held: str, english: list[str]) -> dict:
    import tokensmith as ts

    if not path:
        return {}
    new = ts.load(path) if not path.endswith(".tiktoken") else _rank_file(path, base)
    chars = len(held)
    changed = sum(a != b for a, b in zip(base.encode_batch(english, disallowed_special=()),
                                         new.encode_batch(english, disallowed_special=()),
                                         strict=True))
    return {
        "per_char": len(new.encode(held, disallowed_special=())) / chars,
        "changed": changed / len(english),
        "new_tokens": new.vocab_size - base.vocab_size,
    }


def _rank_file(path: str, base):  # type: ignore[no-untyped-def]
    from tokensmith.formats import tiktoken

    src = base._tiktoken
    return tiktoken.load(path, pattern=src.pattern, special_tokens=src.special_tokens)


def rows_for(name: str, n: int, work: Path, quick: bool) -> list[tuple[str, dict]]:
    base = str(BASES[name])
    rows = [("tokensmith extend", run(EXTEND, base, str(work), str(n)))]
    rows.append(("tokensmith extend, English protected",
                 run(EXTEND, base, str(work), str(n), "protect")))
    rows.append(("tokensmith extend, protected, scripts=Han",
                 run(EXTEND, base, str(work), str(n), "han")))
    if name == "llama2":
        rows.append(("Chinese-LLaMA recipe (sentencepiece + merge)",
                     run(RECIPE, base, str(work), str(n))))
        if not quick:
            rows.append(("from scratch: tokensmith sentencepiece-bpe",
                         run(SCRATCH, base, str(work), str(n), "sentencepiece-bpe")))
    else:
        rows.append(("from scratch: tokensmith byte-level BPE",
                     run(SCRATCH, base, str(work), str(n), "bpe")))
        if not quick:
            rows.append(("from scratch: tokenizers BpeTrainer",
                         run(SCRATCH, base, str(work), str(n), "tokenizers")))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[5000, 20000])
    ap.add_argument("--bases", nargs="+", choices=sorted(BASES), default=["llama2", "cl100k"])
    ap.add_argument("--quick", action="store_true", help="leave out the from-scratch peers")
    ap.add_argument("--save", metavar="JSON", help="also write the figures as JSON")
    ap.add_argument("--json", metavar="PATH",
                    help="also write the table as a results file (benchmarks/render.py)")
    args = ap.parse_args()
    missing = [p for p in [CORPUS / "zh.txt", CORPUS / "en.txt", CORPUS / "gutenberg",
                           *BASES.values()]
               if not p.exists()]
    if missing:
        raise SystemExit(f"needs ../shared: {missing[0]} is missing")
    import tokensmith as ts

    print(f"tokensmith extend benchmark, {time.strftime('%Y-%m-%d')}: {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}; 1-minute load average before the run: "
          f"{os.getloadavg()[0]:.2f}")
    results: list[dict] = []
    before_of: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        held, _, english = prepare(work)
        print(f"new text: 90% of zh.txt ({len((work / 'train.txt').read_text()):,} chars); "
              f"held out: {len(held):,} chars; English: {len(english):,} paragraphs of "
              f"novels (not protected)")
        for name in args.bases:
            base = ts.load(str(BASES[name]))
            before = len(base.encode(held, disallowed_special=())) / len(held)
            before_of[name] = before
            print(f"\n=== {name} ({base.vocab_size:,} ids): held-out Chinese "
                  f"{before:.3f} tokens/char before ===")
            print(f"{'N':>6}  {'method':<46} {'new':>6} {'tok/char':>8} {'vs base':>7} "
                  f"{'en changed':>10} {'seconds':>8} {'peak MB':>8}")
            for n in args.sizes:
                for label, r in rows_for(name, n, work, args.quick):
                    # a tokenizer trained from scratch has other ids: time and memory only
                    scratch = label.startswith("from scratch")
                    m = {} if scratch else measure(base, r["path"], held, english)
                    row = {"base": name, "n": n, "method": label, **r, **m}
                    results.append(row)
                    print(_line(row, before))
    print("\nnew: tokens actually added (a donor's pieces the base already has are not); "
          "en changed: share of English documents whose ids differ from the base's")
    if args.save:
        Path(args.save).write_text(json.dumps(results, indent=1), encoding="utf-8")
    if args.json:
        write_json(args.json, results, before_of)


# bases and methods as the README's table names them
BASE_NAMES = {"llama2": "Llama-2", "cl100k": "cl100k"}
METHOD_NAMES = {
    "tokensmith extend": "extend",
    "tokensmith extend, English protected": "extend, English protected",
    "tokensmith extend, protected, scripts=Han": "extend, protected, scripts=Han",
    "Chinese-LLaMA recipe (sentencepiece + merge)": "Chinese-LLaMA recipe",
    "from scratch: tokensmith sentencepiece-bpe": "from scratch (tokensmith SP-BPE)",
    "from scratch: tokensmith byte-level BPE": "from scratch (tokensmith)",
    "from scratch: tokenizers BpeTrainer": "from scratch (`tokenizers`)",
}
COLUMNS = [{"name": "base", "group": True}, {"name": "N", "format": "{:,}", "group": True},
           "method", {"name": "new", "format": "{:,}"}, {"name": "tokens/char", "format": "{:.3f}"},
           {"name": "vs base", "format": "{:.2f}x"},
           {"name": "English changed", "format": "{:.1%}"}, {"name": "s", "format": "{:.1f}"},
           {"name": "peak MB", "format": "{:,.0f}"}]


def write_json(path: str, results: list[dict], before: dict[str, float]) -> None:
    """The table of ``benchmarks/README.md`` as a results file (see ``render.py``)."""
    from _results import command_line, write_results

    rows = []
    for r in results:
        base = f"{BASE_NAMES[r['base']]} ({before[r['base']]:.3f} before)"
        measured = [r["new_tokens"], r["per_char"], r["per_char"] / before[r["base"]],
                    r["changed"]] if "per_char" in r else [None] * 4
        rows.append([base, r["n"], METHOD_NAMES.get(r["method"], r["method"]), *measured,
                     r["seconds"], r["rss_mb"]])
    write_results(path, "extend.py", command_line("extend.py"), COLUMNS, rows, "One run a row.")


def _line(row: dict, before: float) -> str:
    if "per_char" not in row:
        blank = "-"
        return (f"{row['n']:>6}  {row['method']:<46} {blank:>6} {blank:>8} {blank:>7} "
                f"{blank:>10} {row['seconds']:>8.1f} {row['rss_mb']:>8.0f}")
    return (f"{row['n']:>6}  {row['method']:<46} {row['new_tokens']:>6,} "
            f"{row['per_char']:>8.3f} {row['per_char'] / before:>6.2f}x "
            f"{row['changed']:>9.1%} {row['seconds']:>8.1f} {row['rss_mb']:>8.0f}")


if __name__ == "__main__":
    main()
