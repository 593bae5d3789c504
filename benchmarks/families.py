#!/usr/bin/env python3
"""Benchmark: every tokenizer family against its peers — encode, decode, load.

``encode.py`` measures the byte-level BPE encodings (cl100k, o200k); this script
measures the other families with the same method, and decoding and loading:

- **encode**: BERT WordPiece and T5 Unigram (``tokenizer.json``), a SentencePiece
  Unigram ``.model`` (32,000 pieces, trained here by ``sentencepiece`` on the
  shared corpora with its defaults, cached in the work folder) and Llama-2's
  ``.model`` (SentencePiece BPE); one 1 MB document on one pinned core, the
  best of ``--repeat`` calls on it (``single``), and, in the same process, one
  call each on two more 1 MB documents it has not seen (``unseen``: a library
  that keeps whole chunks or lines across calls gains on ``single`` what it
  cannot on ``unseen``); 2 MB of 1-4 KB documents as a batch on two cores
  (``batch``); on ``en``, ``code`` and ``zh``; MB/s of text;
- **decode**: the ids of each document back to ``str`` and to ``bytes``, cl100k
  and Llama-3, one core; MB/s of text;
- **load**: a fresh process imports the library, loads Llama-3's
  ``tokenizer.json``, o200k or T5 and encodes one short string: resident memory
  after that (and its peak) and the wall time of the three (cold start).

Every library runs in its own process, pinned to its cores, one after another
and in alternating order over ``--rounds`` rounds; a figure is the best of
``--repeat`` calls in the best round. Ids (and decoded text) are checked
against the reference library of the file (``tokenizers`` for
``tokenizer.json``, ``sentencepiece`` for ``.model``, tiktoken for cl100k); a
library whose output differs is marked † and does not set the bar. The ratio
column is tokensmith over the fastest exact peer.

    python benchmarks/families.py                     # everything (about 15 minutes)
    python benchmarks/families.py --quick             # smaller inputs, one round
    python benchmarks/families.py --measure encode --families bert,t5
    python benchmarks/families.py --json benchmarks/results/families.json

Peers that are not installed are reported as such (``pip install tokenizers
sentencepiece tiktoken quicktok-v1 gigatoken tokie kitoken``).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared"
ASSETS = SHARED / "assets"
CORPUS = SHARED / "corpus"
sys.path.insert(0, str(HERE))

from encode import split_documents  # noqa: E402  (same batches as encode.py)

TIKTOKEN_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

# family -> (file, reference library, libraries)
FAMILIES: dict[str, tuple[str, str, list[str]]] = {
    "bert": (
        "bert-base-uncased/tokenizer.json",
        "tokenizers",
        ["tokensmith", "tokenizers", "tokie", "kitoken"],
    ),
    "t5": ("t5/tokenizer.json", "tokenizers", ["tokensmith", "tokenizers", "tokie", "kitoken"]),
    "sp-unigram": ("(trained)", "sentencepiece", ["tokensmith", "sentencepiece", "kitoken"]),
    "llama2": (
        "llama2/tokenizer.model",
        "sentencepiece",
        ["tokensmith", "sentencepiece", "gigatoken", "kitoken", "tokenizers", "tokie"],
    ),
}
DECODERS: dict[str, tuple[str, str, list[str]]] = {
    "cl100k": (
        "cl100k_base/cl100k_base.tiktoken",
        "tiktoken",
        ["tokensmith", "tiktoken", "quicktok", "gigatoken", "kitoken", "tokenizers", "tokie"],
    ),
    "llama3": (
        "llama3/tokenizer.json",
        "tokenizers",
        ["tokensmith", "tokenizers", "tiktoken", "gigatoken", "kitoken", "tokie"],
    ),
}
LOADS: dict[str, tuple[str, list[str]]] = {
    "llama3": (
        "llama3/tokenizer.json",
        ["tokensmith", "tokenizers", "tokie", "kitoken", "gigatoken"],
    ),
    "o200k": (
        "o200k_base/o200k_base.tiktoken",
        ["tokensmith", "tiktoken", "quicktok", "gigatoken", "kitoken"],
    ),
    "t5": ("t5/tokenizer.json", ["tokensmith", "tokenizers", "tokie", "kitoken"]),
}
SHORT = "Hello, world! The quick brown fox."
# single: one 1 MB document encoded --repeat times (the best call); unseen: one
# call each on 1 MB documents the process has not encoded before (a library that
# keeps whole chunks or lines across calls finds nothing there to reuse);
# batch: 2 MB of 1-4 KB documents on two cores.
ENCODE_KINDS = ("single", "unseen", "batch")
UNSEEN = 2


# ---------------------------------------------------------------- libraries (worker side)


class Lib:
    """One library with one tokenizer: its own calls, and how to read their results."""

    def __init__(
        self,
        encode: Callable[[str], Any] | None = None,
        encode_batch: Callable[[list[str]], Any] | None = None,
        decode_str: Callable[[list[int]], str] | None = None,
        decode_bytes: Callable[[list[int]], bytes] | None = None,
        ids: Callable[[Any], list[int]] = list,
        batch_ids: Callable[[Any], list[list[int]]] | None = None,
    ) -> None:
        self.encode, self.encode_batch = encode, encode_batch
        self.decode_str, self.decode_bytes = decode_str, decode_bytes
        self.ids = ids
        # the call a cold start times (``encode`` unless a library says otherwise)
        self.first: Callable[[str], Any] | None = encode
        self.batch_ids = batch_ids or (lambda r: [list(x) for x in r])


def _np_list(r: Any) -> list[int]:
    return r.tolist() if hasattr(r, "tolist") else list(r)


def _tiktoken_encoding(path: str) -> Any:
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    ranks = load_tiktoken_bpe(path)
    # the pattern only matters for encoding: cl100k's is right for cl100k and
    # Llama-3, whose ids this script only decodes
    return tiktoken.Encoding(
        name=Path(path).stem, pat_str=CL100K_PATTERN, mergeable_ranks=ranks, special_tokens={}
    )


def _tokensmith(path: str) -> Lib:
    """tokensmith as each format's reference reads text: special tokens written in
    the text are matched in a ``tokenizer.json`` (as ``tokenizers`` does) and are
    text in a ``.model`` or a rank file; ids as numpy arrays when numpy is there,
    as gigatoken and quicktok return them (``encode.py`` times it the same way)."""
    import importlib.util

    import tokensmith as ts

    base = ts.load(path)
    suffix = Path(path).suffix
    tok = base.hf() if suffix == ".json" else base
    kw: dict[str, Any] = {} if suffix == ".tiktoken" else {"add_special_tokens": False}
    if suffix != ".json":
        kw["disallowed_special"] = ()
    if importlib.util.find_spec("numpy") is None:
        return Lib(
            lambda t: tok.encode(t, **kw),
            lambda b: tok.encode_batch(b, **kw),
            base.decode,
            base.decode_bytes,
        )

    def batch_ids(r: Any) -> list[list[int]]:
        ids, offsets = r[0].tolist(), r[1].tolist()
        return [ids[a:b] for a, b in zip(offsets, offsets[1:], strict=False)]

    lib = Lib(
        lambda t: tok.encode_to_numpy(t, **kw),
        lambda b: tok.encode_batch_to_numpy(b, **kw),
        base.decode,
        base.decode_bytes,
        ids=_np_list,
        batch_ids=batch_ids,
    )
    lib.first = lambda t: tok.encode(t, **kw)  # a cold start does not import numpy
    return lib


def load_lib(name: str, path: str, threads: int, hf_json: str | None = None) -> Lib:  # noqa: C901
    """``name`` with the tokenizer at ``path`` (one arm a library); ``hf_json``: the
    same tokenizer as a ``tokenizer.json``, for libraries that read only that."""
    p = Path(path)
    json_path = hf_json or (path if p.suffix == ".json" else str(p.with_name("tokenizer.json")))
    if name == "tokensmith":
        return _tokensmith(path)
    if name == "tokenizers":
        import tokenizers

        h = tokenizers.Tokenizer.from_file(json_path)
        return Lib(
            lambda t: h.encode(t, add_special_tokens=False).ids,
            lambda b: [e.ids for e in h.encode_batch_fast(b, add_special_tokens=False)],
            lambda ids: h.decode(ids, skip_special_tokens=False),
        )
    if name == "sentencepiece":
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=path)
        return Lib(sp.encode, lambda b: sp.encode(b, num_threads=threads), sp.decode)
    if name == "tiktoken":
        enc = _tiktoken_encoding(
            path if p.suffix == ".tiktoken" else str(p.with_name("tokenizer.model"))
        )
        return Lib(
            lambda t: enc.encode(t, disallowed_special=()),
            lambda b: enc.encode_batch(b, num_threads=threads, disallowed_special=()),
            enc.decode,
            enc.decode_bytes,
        )
    if name == "quicktok":
        import quicktok

        enc = quicktok.get_encoding(p.stem)
        return Lib(enc.encode_ordinary, decode_str=enc.decode, decode_bytes=enc.decode_bytes)
    if name == "tokie":
        import tokie

        k = tokie.Tokenizer.from_json(json_path)
        return Lib(
            lambda t: k.encode(t, add_special_tokens=False).ids,
            lambda b: [e.ids for e in k.encode_batch(b, add_special_tokens=False)],
            k.decode,
            k.decode_bytes,
        )
    if name == "kitoken":
        import kitoken

        if p.suffix == ".json":
            kt = kitoken.Kitoken.from_tokenizers_file(path)
        elif p.suffix == ".tiktoken":
            kt = kitoken.Kitoken.from_tiktoken_file(path)
        else:
            kt = kitoken.Kitoken.from_sentencepiece_file(path)
        return Lib(
            lambda t: kt.encode(t, False), lambda b: kt.encode_all(b, False), decode_bytes=kt.decode
        )
    if name == "gigatoken":
        import gigatoken

        G = gigatoken.Tokenizer
        if p.suffix == ".json":
            g = G.from_json(p.read_text(encoding="utf-8"))
        elif p.suffix == ".tiktoken":
            g = G.from_tiktoken(path)
        else:
            g = G.from_sentencepiece(path)
        return Lib(
            g.encode,
            lambda b: g.encode_batch_list(b, parallel=threads > 1),
            decode_bytes=g.decode,
            ids=_np_list,
            batch_ids=lambda r: [_np_list(x) for x in r],
        )
    raise ValueError(f"unknown library {name!r}")


# ---------------------------------------------------------------- worker


def _digest(rows: list[list[int]]) -> str:
    h = hashlib.sha1()
    for r in rows:
        h.update(json.dumps(r).encode())
        h.update(b";")
    return h.hexdigest()


def _best(fn: Callable[[Any], Any], arg: Any, repeat: int) -> tuple[Any, float]:
    """(result, best wall seconds) of ``repeat`` calls after one warm-up; no
    garbage collection inside a timed call."""
    result = fn(arg)
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter()
            fn(arg)
            best = min(best, time.perf_counter() - t0)
        finally:
            gc.enable()
    return result, best


def _status_mb(field: str) -> float:
    """``VmRSS`` or ``VmHWM`` (its peak) of this process, MB. (Not ``ru_maxrss``: a
    child keeps its parent's across ``exec``.)"""
    with open("/proc/self/status") as f:
        line = next(ln for ln in f if ln.startswith(field + ":"))
    return int(line.split()[1]) * 1024 / 1e6


def _rss_mb() -> float:
    return _status_mb("VmRSS")


def run_load(spec: dict) -> dict:
    """Import, load, encode one short string: times and memory (a fresh process)."""
    t0 = time.perf_counter()
    rss0 = _rss_mb()
    lib = load_lib(spec["lib"], spec["path"], 1, spec.get("hf_json"))  # import, then load
    t1 = time.perf_counter()
    fn = lib.first or (lambda t: lib.decode_bytes([1]))  # type: ignore[misc]
    fn(SHORT)
    t2 = time.perf_counter()
    return {
        "cold_s": t2 - t0,
        "rss_mb": _rss_mb(),
        "grew_mb": _rss_mb() - rss0,
        "peak_mb": _status_mb("VmHWM"),
        "load_s": t1 - t0,
    }


def run_tasks(spec: dict) -> dict:
    lib = load_lib(spec["lib"], spec["path"], spec["threads"], spec.get("hf_json"))
    out: dict[str, Any] = {}
    for task in spec["tasks"]:
        kind, corpus = task.split(":")
        data = json.loads(Path(spec["inputs"][corpus]).read_text(encoding="utf-8"))
        try:
            out[task] = _run_one(lib, kind, data, spec["repeat"])
        except Exception as e:  # a peer that fails on an input is reported, not fatal
            out[task] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
    return out


def _unseen(lib: Lib, data: dict) -> dict:
    """Each of ``data["unseen"]`` encoded once, after one warm-up call on the
    first document: the best MB/s of documents the process had not seen."""
    assert lib.encode is not None
    lib.encode(data["doc"])
    best, ids = None, []
    for doc in data["unseen"]:
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter()
            r = lib.encode(doc)
            s = time.perf_counter() - t0
        finally:
            gc.enable()
        ids.append(lib.ids(r))
        size = len(doc.encode())
        if best is None or size / s > best["bytes"] / best["s"]:
            best = {"s": s, "bytes": size}
    if best is None:
        return {"error": "no unseen documents"}
    return {**best, "sha1": _digest(ids)}


def _run_one(lib: Lib, kind: str, data: dict, repeat: int) -> dict:
    if kind == "unseen":
        return _unseen(lib, data) if lib.encode else {"error": "no single-text call"}
    if kind == "single":
        if lib.encode is None:
            return {"error": "no single-text call"}
        r, s = _best(lib.encode, data["doc"], repeat)
        return {"s": s, "bytes": len(data["doc"].encode()), "sha1": _digest([lib.ids(r)])}
    if kind == "batch":
        if lib.encode_batch is None:
            return {"error": "no batch call"}
        r, s = _best(lib.encode_batch, data["batch"], repeat)
        return {
            "s": s,
            "bytes": sum(len(d.encode()) for d in data["batch"]),
            "sha1": _digest(lib.batch_ids(r)),
        }
    fn = lib.decode_str if kind == "str" else lib.decode_bytes
    if fn is None:
        return {"error": f"no decode to {kind}"}
    text, s = _best(fn, data["ids"], repeat)
    want = data["text"] if kind == "str" else data["text"].encode("utf-8", "surrogatepass")
    return {"s": s, "bytes": len(data["text"].encode()), "equal": text == want}


def worker(spec: dict) -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[: spec["threads"]])
    try:
        result = run_load(spec) if spec.get("load") else run_tasks(spec)
    except Exception as e:
        result = {"unavailable": f"{type(e).__name__}: {str(e)[:300]}"}
    print(json.dumps(result), flush=True)


# ---------------------------------------------------------------- parent


def spawn(spec: dict, timeout: float) -> dict:
    env = dict(
        os.environ, RAYON_NUM_THREADS=str(spec["threads"]), TOKIE_NUM_THREADS=str(spec["threads"])
    )
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # cold starts as installed: bytecode cached
    try:
        p = subprocess.run(
            [sys.executable, __file__, "--worker", json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return {"unavailable": f"timed out after {timeout:.0f} s"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return {"unavailable": f"exit {p.returncode}: {p.stderr.strip()[-300:]}"}
    return json.loads(lines[-1])


def read_prefix(path: Path, n: int) -> str:
    data = path.read_bytes()[: n + 1]
    return data[: data.rfind(b"\n", 0, n) + 1].decode("utf-8")


def train_unigram(workdir: Path, quick: bool) -> Path:
    """A 32,000-piece SentencePiece Unigram model trained on the shared corpora
    (sentencepiece's defaults: nmt_nfkc), cached in ``workdir``."""
    model = workdir / "sp-unigram-32k.model"
    if model.exists():
        return model
    import sentencepiece as spm

    text = workdir / "sp-unigram-train.txt"
    with text.open("w", encoding="utf-8") as f:
        for name in ("en", "code", "zh"):
            f.write(read_prefix(CORPUS / f"{name}.txt", 2_000_000 if not quick else 500_000))
    spm.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(model.with_suffix("")),
        vocab_size=32000 if not quick else 8000,
        model_type="unigram",
        minloglevel=2,
    )
    return model


def prepare(workdir: Path, corpora: list[str], quick: bool) -> dict[str, dict]:
    """Per corpus: the 1 MB document, the 2 MB batch (the text after it) and up
    to ``UNSEEN`` more 1 MB documents after the first (for ``unseen``)."""
    doc_n, batch_n = (100_000, 200_000) if quick else (1_000_000, 2_000_000)
    out = {}
    for c in corpora:
        data = (CORPUS / f"{c}.txt").read_bytes()
        doc = read_prefix(CORPUS / f"{c}.txt", doc_n)
        rest = data[len(doc.encode()) :]
        out[c] = {
            "doc": doc,
            "batch": split_documents(rest, batch_n, 1000, 4000),
            "unseen": _slices(rest, doc_n, UNSEEN),
        }
    return out


def _slices(data: bytes, n: int, most: int) -> list[str]:
    """Up to ``most`` pieces of ``data`` of about ``n`` bytes, cut at line breaks
    (the last may be shorter, and is left out under half that)."""
    out = []
    while data and len(out) < most:
        cut = data.rfind(b"\n", 0, n) + 1 if len(data) > n else len(data)
        piece, data = data[: cut or n], data[cut or n :]
        if len(piece) >= n // 2:
            out.append(piece.decode("utf-8", "replace"))
    return out


def write_inputs(workdir: Path, name: str, inputs: dict[str, dict]) -> dict[str, str]:
    paths = {}
    for c, d in inputs.items():
        path = workdir / f"{name}-{c}.json"
        path.write_text(json.dumps(d), encoding="utf-8")
        paths[c] = str(path)
    return paths


def measure(
    libs: list[str],
    path: str,
    tasks: list[str],
    inputs: dict[str, str],
    args: argparse.Namespace,
    hf_json: str | None = None,
) -> dict[str, dict]:
    """Every library's results, best over the rounds (alternating order)."""
    best: dict[str, dict] = {lib: {} for lib in libs}
    for rnd in range(args.rounds):
        order = libs if rnd % 2 == 0 else libs[::-1]
        for lib in order:
            for threads in sorted(
                {1 if t.startswith(("single", "unseen", "str", "bytes")) else 2 for t in tasks}
            ):
                mine = [t for t in tasks if (threads == 1) == (not t.startswith("batch"))]
                res = spawn(
                    {
                        "lib": lib,
                        "path": path,
                        "threads": threads,
                        "tasks": mine,
                        "inputs": inputs,
                        "repeat": args.repeat,
                        "hf_json": hf_json,
                    },
                    args.timeout,
                )
                for t in mine:
                    r = res.get(t) or {"error": res.get("unavailable", "no result")}
                    old = best[lib].get(t)
                    if old is None or ("s" in r and ("s" not in old or r["s"] < old["s"])):
                        best[lib][t] = r
            print(f"  round {rnd + 1}: {lib} done", file=sys.stderr, flush=True)
    return best


def mbs(r: dict | None) -> float | None:
    return r["bytes"] / r["s"] / 1e6 if r and "s" in r else None


def encode_rows(
    args: argparse.Namespace, workdir: Path, inputs: dict[str, dict]
) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for fam in args.families:
        file, ref, libs = FAMILIES[fam]
        path = (
            str(train_unigram(workdir, args.quick)) if fam == "sp-unigram" else str(ASSETS / file)
        )
        if not Path(path).exists():
            print(f"{fam}: {path} missing, skipped", file=sys.stderr)
            continue
        print(f"encode {fam} ({Path(path).name})", file=sys.stderr)
        paths = write_inputs(workdir, "enc", inputs)
        tasks = [f"{k}:{c}" for c in args.corpora for k in ENCODE_KINDS]
        res = measure(libs, path, tasks, paths, args)
        for c in args.corpora:
            for kind in ENCODE_KINDS:
                rows.extend(_ratio_rows(fam, c, kind, f"{kind}:{c}", res, ref, libs, by="sha1"))
    return rows


def _ratio_rows(
    label: str, corpus: str, kind: str, task: str, res: dict, ref: str, libs: list[str], by: str
) -> list[list[Any]]:
    """One row per library: MB/s, exactness, and tokensmith's ratio to the
    fastest exact peer (on tokensmith's row)."""
    want = res.get(ref, {}).get(task, {}).get("sha1") if by == "sha1" else None
    rows, speeds = [], {}
    for lib in libs:
        r = res[lib].get(task, {})
        exact = (
            (r.get("sha1") == want and want is not None) if by == "sha1" else r.get("equal", False)
        )
        speed = mbs(r)
        speeds[lib] = (speed, exact)
        cell = r.get("error") or r.get("unavailable")
        rows.append(
            [
                label,
                corpus,
                kind,
                lib,
                speed,
                "" if speed is None else ("yes" if exact else "† no"),
                None,
                cell[:60] if speed is None and cell else "",
            ]
        )
    peers = [s for lib, (s, ok) in speeds.items() if lib != "tokensmith" and ok and s]
    mine = speeds.get("tokensmith", (None, False))
    if peers and mine[0] and mine[1]:
        rows[libs.index("tokensmith")][6] = mine[0] / max(peers)
    return rows


def summary(rows: list[list[Any]], corpora: list[str]) -> list[list[Any]]:
    """tokensmith's MB/s a tokenizer, run and text, with its ratio to the
    fastest exact peer, from the per-library rows."""
    groups: dict[tuple[str, str], dict[str, str]] = {}
    for label, corpus, kind, lib, speed, _exact, ratio, _note in rows:
        if lib != "tokensmith":
            continue
        peers = [
            r
            for r in rows
            if r[:3] == [label, corpus, kind] and r[3] != "tokensmith" and r[5] == "yes" and r[4]
        ]
        best = max(peers, key=lambda r: r[4], default=None)
        if speed is None:
            cell = "—"
        elif best is None or ratio is None:
            cell = f"{speed:.0f} (no exact peer)" if speed else "—"
        else:
            cell = f"{speed:.0f} ({ratio:.2f}x {best[3]})"
        groups.setdefault((label, kind), {})[corpus] = cell
    return [
        [label, kind, *(cells.get(c, "") for c in corpora)]
        for (label, kind), cells in groups.items()
    ]


def decode_rows(
    args: argparse.Namespace, workdir: Path, inputs: dict[str, dict]
) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for name in args.decoders:
        file, ref, libs = DECODERS[name]
        path = ASSETS / file
        if not path.exists():
            print(f"{name}: {path} missing, skipped", file=sys.stderr)
            continue
        print(f"decode {name}", file=sys.stderr)
        hf_json = None
        if path.suffix == ".tiktoken":  # for tokenizers and tokie: tokensmith writes one
            import tokensmith as ts

            hf_json = str(ts.load(path).save(workdir / f"{name}-tokenizer.json"))
        ref_lib = load_lib(ref, str(path), 1)
        data = {}
        for c in args.corpora:
            ids = ref_lib.ids(ref_lib.encode(inputs[c]["doc"])) if ref_lib.encode else []
            data[c] = {"ids": ids, "text": inputs[c]["doc"]}
        paths = write_inputs(workdir, f"dec-{name}", data)
        tasks = [f"{k}:{c}" for c in args.corpora for k in ("str", "bytes")]
        res = measure(libs, str(path), tasks, paths, args, hf_json)
        for c in args.corpora:
            for kind in ("str", "bytes"):
                rows.extend(_ratio_rows(name, c, kind, f"{kind}:{c}", res, ref, libs, by="equal"))
    return rows


def load_rows(args: argparse.Namespace) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for name in args.loads:
        file, libs = LOADS[name]
        path = ASSETS / file
        if not path.exists():
            print(f"{name}: {path} missing, skipped", file=sys.stderr)
            continue
        print(f"load {name}", file=sys.stderr)
        runs: dict[str, list[dict]] = {lib: [] for lib in libs}
        for rnd in range(max(3, args.rounds)):
            for lib in libs if rnd % 2 == 0 else libs[::-1]:
                runs[lib].append(
                    spawn({"lib": lib, "path": str(path), "threads": 1, "load": True}, args.timeout)
                )
        for lib in libs:
            ok = [r for r in runs[lib] if "rss_mb" in r]
            if not ok:
                err = runs[lib][0].get("unavailable", "?") if runs[lib] else "?"
                rows.append([name, lib, None, None, None, None, err[:60]])
                continue
            med = statistics.median
            rows.append(
                [
                    name,
                    lib,
                    med(r["rss_mb"] for r in ok),
                    med(r["grew_mb"] for r in ok),
                    med(r["peak_mb"] for r in ok),
                    1000 * med(r["cold_s"] for r in ok),
                    "",
                ]
            )
    return rows


ENCODE_COLUMNS: list[Any] = [
    {"name": "tokenizer", "group": True},
    {"name": "text", "group": True},
    {"name": "run", "group": True},
    "library",
    {"name": "MB/s", "format": "{:.1f}"},
    "exact",
    {"name": "tokensmith / fastest exact peer", "format": "{:.2f}x"},
    "note",
]
LOAD_COLUMNS: list[Any] = [
    {"name": "tokenizer", "group": True},
    "library",
    {"name": "RSS after load, MB", "format": "{:.0f}"},
    {"name": "grew by, MB", "format": "{:.0f}"},
    {"name": "peak, MB", "format": "{:.0f}"},
    {"name": "cold start, ms", "format": "{:.0f}"},
    "note",
]


def show(title: str, columns: list[Any], rows: list[list[Any]]) -> None:
    names = [c if isinstance(c, str) else c["name"] for c in columns]
    fmts = [None if isinstance(c, str) else c.get("format") for c in columns]
    print(f"\n{title}\n" + " | ".join(names))
    for r in rows:
        cells = [
            "" if v is None else (f.format(v) if f and isinstance(v, (int, float)) else str(v))
            for v, f in zip(r, fmts, strict=True)
        ]
        print(" | ".join(cells))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--measure", default="encode,decode,load", help="any of encode,decode,load")
    ap.add_argument("--families", default=",".join(FAMILIES), help=f"default {','.join(FAMILIES)}")
    ap.add_argument("--decoders", default=",".join(DECODERS), help=f"default {','.join(DECODERS)}")
    ap.add_argument("--loads", default=",".join(LOADS), help=f"default {','.join(LOADS)}")
    ap.add_argument("--corpora", default="en,code,zh", help="files NAME.txt in ../shared/corpus")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds (default 2)")
    ap.add_argument("--repeat", type=int, default=3, help="best of N calls a round (default 3)")
    ap.add_argument("--quick", action="store_true", help="inputs ten times smaller, one round")
    ap.add_argument("--timeout", type=float, default=300, help="seconds a worker may take")
    ap.add_argument(
        "--workdir", help="keep inputs and the trained model here (default: a temporary folder)"
    )
    ap.add_argument(
        "--json",
        help="also write results files: PATH (summary), PATH-detail (every library), PATH-load",
    )
    args = ap.parse_args(argv)
    for key in ("measure", "families", "decoders", "loads", "corpora"):
        setattr(args, key, [x for x in getattr(args, key).split(",") if x])
    unknown = [f for f in args.families if f not in FAMILIES] + [
        d for d in args.decoders if d not in DECODERS
    ]
    if unknown:
        ap.error(f"unknown tokenizer(s): {', '.join(unknown)}")
    if args.quick:
        args.rounds = 1
    if not CORPUS.exists():
        print(f"{CORPUS} is missing: nothing to measure", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(args.workdir or tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        inputs = prepare(workdir, args.corpora, args.quick)
        tables = []
        if "encode" in args.measure:
            tables.append(
                (
                    "encode",
                    "Encode (MB/s of text)",
                    ENCODE_COLUMNS,
                    encode_rows(args, workdir, inputs),
                )
            )
        if "decode" in args.measure:
            tables.append(
                (
                    "decode",
                    "Decode (MB/s of text)",
                    ENCODE_COLUMNS,
                    decode_rows(args, workdir, inputs),
                )
            )
        if "load" in args.measure:
            tables.append(("load", "Load: memory and cold start", LOAD_COLUMNS, load_rows(args)))
    for _, title, cols, rows in tables:
        show(title, cols, rows)
    speed_rows = [r for key, _, _, rows in tables if key in ("encode", "decode") for r in rows]
    if speed_rows:
        cols = [{"name": "tokenizer", "group": True}, "run", *args.corpora]
        tables.append(
            (
                "summary",
                "tokensmith, MB/s (ratio to the fastest exact peer)",
                cols,
                summary(speed_rows, args.corpora),
            )
        )
        show(*tables[-1][1:])
    if args.json:
        from _results import command_line, write_results

        for key, _, cols, rows in tables:
            if key in ("encode", "decode"):
                continue
            path = args.json if key == "summary" else args.json.replace(".json", f"-{key}.json")
            write_results(
                path, "families.py", command_line("families.py", argv), cols, rows, notes=NOTES[key]
            )
        if speed_rows:
            write_results(
                args.json.replace(".json", "-detail.json"),
                "families.py",
                command_line("families.py", argv),
                ENCODE_COLUMNS,
                speed_rows,
                notes=NOTES["encode"] + " " + NOTES["decode"],
            )
    return 0


NOTES = {
    "encode": "single: one 1 MB document, one pinned core, best of --repeat calls; "
    "unseen: one call each on two more 1 MB documents the process has not seen (the best); "
    "batch: 2 MB of 1-4 KB documents, two cores. "
    "Best of --repeat calls (after a warm-up) in the best of --rounds rounds, the libraries "
    "in alternating order; † ids differ from the reference "
    "(tokenizers for tokenizer.json, sentencepiece for .model).",
    "decode": "The reference's ids of each 1 MB document, decoded on one pinned core; "
    "† output differs from the text.",
    "summary": "Encode: one 1 MB document on one pinned core (single: the same document "
    "--repeat times; unseen: documents the process has not encoded before), 2 MB of 1-4 KB "
    "documents on two (batch); decode: the reference's ids of each 1 MB document back to str "
    "or bytes, one core. Peers: tokenizers, sentencepiece, tiktoken, quicktok, gigatoken, "
    "tokie, kitoken; only those whose output equals the reference's count.",
    "load": "A fresh process: import, load, encode one short string; medians of 3 processes. "
    "RSS after load and its growth from before the import.",
}

if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(json.loads(sys.argv[2]))
        sys.exit(0)
    sys.exit(main())
