#!/usr/bin/env python3
"""Benchmark: pruning cl100k_base to the tokens English text uses.

Prunes cl100k_base (``../shared/assets/cl100k_base/cl100k_base.tiktoken``, or
``tokensmith.load("cl100k_base")``) to the tokens the first ``--mb`` MB of
``en.txt`` use (cut at a line break), then measures on held-out English (the
last ``--held-mb`` MB of the same file, cut into documents at blank lines):

* vocabulary size before and after, and how many tokens came back through the
  merge closure (kept because a kept token is built from them);
* bytes per token before and after (UTF-8 bytes / tokens, higher is better);
* the share of held-out documents whose new ids are exactly their old ids
  mapped through the id map (only documents whose old tokens were all kept
  can; among those, every one must);
* the time of the prune (counting, closure, building the new tokenizer),
  next to the time of one batch encode of the same text for scale;
* the embedding check: a random (old_size, 64) matrix cut with
  ``IdMap.resize_embeddings``; for held-out documents whose tokens were all
  kept, the old ids' rows must equal the new ids' rows.

    python benchmarks/prune.py
    python benchmarks/prune.py --mb 2 --en /path/to/en.txt
    python benchmarks/prune.py --keep-ids      # ids kept in place instead
    python benchmarks/prune.py --json benchmarks/results/prune.json

Timing varies with the machine's load, printed first.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared"


def _slice(path: Path, start: int | None, size: int) -> str:
    """``size`` bytes of ``path`` from ``start`` (None: from the end), cut at line breaks."""
    with path.open("rb") as f:
        if start is None:
            f.seek(0, os.SEEK_END)
            start = max(0, f.tell() - size)
        f.seek(start)
        data = f.read(size)
    first = data.find(b"\n") + 1 if start else 0
    return data[first : data.rfind(b"\n") + 1].decode("utf-8", "replace")


def _load_cl100k():
    import tokensmith as ts

    local = SHARED / "assets" / "cl100k_base" / "cl100k_base.tiktoken"
    return ts.load(local if local.exists() else "cl100k_base")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--en", type=Path, default=SHARED / "corpus" / "en.txt",
                    help="English text (default ../shared/corpus/en.txt)")
    ap.add_argument("--mb", type=float, default=10.0,
                    help="MB from the start of the file to prune on (default 10)")
    ap.add_argument("--held-mb", type=float, default=1.5,
                    help="MB from the end of the file to measure on (default 1.5)")
    ap.add_argument("--keep-ids", action="store_true",
                    help="keep ids in place (removed ones become unused special tokens)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random embeddings")
    ap.add_argument("--json", metavar="PATH",
                    help="also write the table as a results file (benchmarks/render.py)")
    args = ap.parse_args(argv)

    import numpy as np
    import tokensmith
    from tokensmith.surgery.prune import _prune

    load1, load5, load15 = os.getloadavg()
    print(f"machine load (1/5/15 min): {load1:.2f} {load5:.2f} {load15:.2f} on "
          f"{os.cpu_count()} cores; tokensmith {tokensmith.__version__}, numpy {np.__version__}")
    if not args.en.exists():
        print(f"{args.en}: not found; pass --en PATH", file=sys.stderr)
        return 2
    size = args.en.stat().st_size
    train_bytes, held_bytes = int(args.mb * 1e6), int(args.held_mb * 1e6)
    if train_bytes + held_bytes > size:
        print(f"{args.en} has {size:,} bytes: --mb and --held-mb overlap", file=sys.stderr)
        return 2
    text = _slice(args.en, 0, train_bytes)
    held_text = _slice(args.en, None, held_bytes)
    held = [d for d in held_text.split("\n\n") if d.strip()]

    tok = _load_cl100k()
    # for scale: one batch encode of the same text, as the prune's counting does it
    docs = [text[k : k + 65536] for k in range(0, len(text), 65536)]
    t0 = time.perf_counter()
    ids, _ = tok.encode_batch_to_numpy(docs, disallowed_special=(), add_special_tokens=False)
    encode_s = time.perf_counter() - t0

    r = _prune(tok, [text], keep_ids=args.keep_ids)
    new, id_map = r.tokenizer, r.id_map

    def bytes_per_token(t) -> tuple[int, float]:
        n = len(t.encode_batch_to_numpy(held, disallowed_special=(),
                                        add_special_tokens=False)[0])
        return n, len(held_text.encode("utf-8")) / n

    n_old, bpt_old = bytes_per_token(tok)
    n_new, bpt_new = bytes_per_token(new)

    old_ids = tok.encode_batch(held, disallowed_special=(), add_special_tokens=False)
    new_ids = new.encode_batch(held, disallowed_special=(), add_special_tokens=False)
    table = id_map.old_to_new
    only_kept = exact = mismatched = 0
    rng = np.random.default_rng(args.seed)
    old_emb = rng.standard_normal((id_map.old_size, 64)).astype(np.float32)
    t0 = time.perf_counter()
    new_emb = id_map.resize_embeddings(old_emb)
    resize_s = time.perf_counter() - t0
    emb_docs = emb_tokens = emb_bad = 0
    for a, b in zip(old_ids, new_ids, strict=True):
        mapped = table[np.asarray(a, dtype=np.int64)]
        if (mapped < 0).any():
            continue
        only_kept += 1
        if mapped.tolist() == b:
            exact += 1
        else:
            mismatched += 1
        emb_docs += 1
        emb_tokens += len(a)
        if not np.array_equal(old_emb[a], new_emb[b]):
            emb_bad += 1

    def row(name: str, before: str, after: str) -> str:
        return f"| {name:<34} | {before:>12} | {after:>12} |"

    mb = len(text.encode("utf-8")) / 1e6
    print(f"\npruned on: {args.en} first {mb:.2f} MB ({len(ids):,} cl100k tokens); "
          f"held out: last {len(held_text.encode('utf-8')) / 1e6:.2f} MB, "
          f"{len(held):,} documents (blank-line separated)"
          f"{'; keep_ids=True' if args.keep_ids else ''}\n")
    print(row("", "cl100k_base", "pruned"))
    print(f"|{'-' * 36}|{'-' * 14}|{'-' * 14}|")
    print(row("tokens in the vocabulary", f"{r.old_tokens:,}", f"{r.new_tokens:,}"))
    print(row("vocab_size (ids)", f"{r.old_size:,}", f"{new.vocab_size:,}"))
    print(row("held-out tokens", f"{n_old:,}", f"{n_new:,}"))
    print(row("held-out bytes / token", f"{bpt_old:.3f}", f"{bpt_new:.3f}"))
    print()
    print(f"kept: {r.chosen:,} used in the text, {r.closure:,} added back by the merge closure, "
          f"{r.protected:,} never removed ({r.why_protected})")
    print(f"prune time: {r.seconds:.2f} s (one batch encode of the same text: {encode_s:.2f} s)")
    share = exact / len(held) if held else 0.0
    print(f"held-out documents whose ids map exactly: {exact:,} of {len(held):,} ({share:.1%}); "
          f"{only_kept:,} use only kept tokens, {mismatched} of those mismatch")
    print(f"embedding check: resize_embeddings {resize_s * 1000:.1f} ms, "
          f"{new_emb.shape[0]:,} x {new_emb.shape[1]} from {old_emb.shape[0]:,} x 64; "
          f"{emb_docs:,} documents ({emb_tokens:,} tokens) with only kept tokens: "
          f"old vectors == new vectors in {emb_docs - emb_bad:,}, differ in {emb_bad}")
    if args.json:
        write_json(args.json, argv, (r.old_tokens, r.new_tokens), (bpt_old, bpt_new),
                   f"{exact:,} of the {only_kept:,} held-out documents that use only kept "
                   f"tokens map id for id; the prune takes {r.seconds:.2f} s.")
    return 0 if mismatched == 0 and emb_bad == 0 else 1


def write_json(path: str, argv: list[str] | None, tokens: tuple[int, int],
               bytes_per_token: tuple[float, float], notes: str) -> None:
    """The table of ``benchmarks/README.md`` as a results file (see ``render.py``)."""
    from _results import command_line, write_results

    columns = ["", {"name": "cl100k_base", "format": "{:,}"}, {"name": "pruned", "format": "{:,}"}]
    rows = [["tokens in the vocabulary", *tokens],
            ["held-out bytes/token", *(round(x, 3) for x in bytes_per_token)]]
    write_results(path, "prune.py", command_line("prune.py", argv), columns, rows, notes)


if __name__ == "__main__":
    sys.exit(main())
