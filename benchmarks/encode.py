#!/usr/bin/env python3
"""Benchmark: encoding speed, tokensmith vs. tiktoken and the other fast BPE encoders.

Runs tokensmith and every peer installed from PyPI (tiktoken, tokenizers,
quicktok, riptoken, bpe_openai, tokie, gigatoken, tokendagger) in the same run,
on the same inputs, for cl100k_base and o200k_base, and prints MB/s per library
with tokensmith's ratio to the fastest exact peer and to tiktoken::

    python benchmarks/encode.py                      # everything, best of 3
    python benchmarks/encode.py --quick              # small inputs, a smoke run
    python benchmarks/encode.py --only tokensmith,tiktoken,gigatoken --raw-json
    python benchmarks/encode.py --json benchmarks/results/encode.json   # also the README's table

Every library runs in its own child process (this script in a hidden
``--worker`` mode), so thread settings are fixed before the library is
imported and a pathological input can be stopped by a timeout. Before a
library is timed on a corpus, its ids are checked against tiktoken's.
See ``benchmarks/README.md`` ("Encoding throughput") for what is measured.
"""

from __future__ import annotations

import argparse
import base64
import gc
import hashlib
import importlib.util
import json
import os
import platform
import random
import resource
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from collections import Counter
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared"
ASSETS = SHARED / "assets"
CORPUS_DIR = SHARED / "corpus"

TOKENSMITH = "tokensmith"
# tokensmith returning Python lists (``encode`` / ``encode_batch``), as tiktoken
# does; shown for reference, never counted as a peer.
TOKENSMITH_LIST = "tokensmith-list"
# Library name -> (module to import, distribution name on PyPI).
LIBRARIES: dict[str, tuple[str, str]] = {
    "tokensmith": ("tokensmith", "tokensmith"),
    "tokensmith-list": ("tokensmith", "tokensmith"),
    "tiktoken": ("tiktoken", "tiktoken"),
    "tokenizers": ("tokenizers", "tokenizers"),
    "quicktok": ("quicktok", "quicktok-v1"),
    "riptoken": ("riptoken", "riptoken"),
    "bpe_openai": ("bpe_openai", "bpe-openai"),
    "tokie": ("tokie", "tokie"),
    "gigatoken": ("gigatoken", "gigatoken"),
    "tokendagger": ("tokendagger", "tokendagger"),
}
ENCODINGS = ("cl100k_base", "o200k_base")
CORPORA = ("en", "code", "zh")
MEASUREMENTS = ("single", "batch", "short", "worst")
TIKTOKEN_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"

SHORT_TEXT = "Hello, world! This is a short sentence."
WARMUP_TEXT = "Warm-up: déjà vu, 中文, code = f(x) + 1;\n"
WORST_CASES = ("a", "spaces", "zh_char", "base64")
WORST_LABELS = {"a": '"a" x N', "spaces": '" " x N', "zh_char": '"中" x N', "base64": "base64"}
SEED = 20261129
NOISY_OTHERS = 0.25  # CPUs used by other processes, on average, that make a run noisy
SLOW_CALL_S = 10.0  # a call slower than this is not repeated (worst cases)


def sizes(quick: bool) -> dict[str, int]:
    """Input sizes; ``--quick`` divides them by ten."""
    k = 10 if quick else 1
    return {
        "doc_bytes": 1_000_000 // k,  # single-threaded document
        "batch_bytes": 4_000_000 // k,  # batch total
        "doc_min": 1024,  # batch documents are 1-4 KB
        "doc_max": 4096,
        "worst_n": 1_000_000 // k,  # characters of each worst case
        "short_blocks": 500 // k,
        "short_calls": 100,  # calls per timed block
    }


# =========================================================================== worker
# A worker is this script run as ``--worker SPEC_JSON``. It limits its own
# threads, constructs one library for one encoding, then runs its tasks and
# prints one JSON line per event on stdout:
#   {"ready": ...}             the library is constructed and warmed up
#   {"unavailable": reason}    it could not be imported or constructed
#   {"progress": task}         one call finished (the parent's per-call timeout restarts)
#   {"task": id, "result": {...}}


class Lib:
    """One library for one encoding, behind a uniform interface.

    ``encode`` and ``encode_batch`` are what is timed: each library's own
    call, returning its own type. ``ids`` / ``batch_ids`` turn those results
    into lists for the exactness check (not timed).
    """

    def __init__(self, version: str, encode, encode_batch, ids=list, batch_ids=None, how="",  # type: ignore[no-untyped-def]
                 encode_short=None, short_ids=None):
        self.version = version
        self.encode = encode
        self.encode_batch = encode_batch
        self.ids = ids
        self.batch_ids = batch_ids or (lambda result: [list(x) for x in result])
        self.how = how
        # the call timed on a short string, when another is faster there
        self.encode_short = encode_short or encode
        self.short_ids = short_ids or ids


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


def _load_tokensmith(spec: dict) -> Lib:
    """tokensmith with numpy output, as gigatoken and quicktok are timed
    (lists without numpy)."""
    import tokensmith as ts

    if importlib.util.find_spec("numpy") is None:
        return _load_tokensmith_list(spec)
    tok = ts.load(spec["rank_file"])

    def batch_ids(result):  # type: ignore[no-untyped-def]
        ids, offsets = result
        flat, bounds = ids.tolist(), offsets.tolist()
        return [flat[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]

    return Lib(
        ts.__version__,
        lambda t: tok.encode_to_numpy(t, disallowed_special=()),
        lambda ts_: tok.encode_batch_to_numpy(ts_, disallowed_special=()),
        ids=lambda r: r.tolist(),
        batch_ids=batch_ids,
        how="ts.load(rank file); encode_to_numpy / encode_batch_to_numpy"
            "(disallowed_special=()) -> numpy; short string: encode -> list",
        encode_short=lambda t: tok.encode(t, disallowed_special=()),
        short_ids=list,
    )


def _load_tokensmith_list(spec: dict) -> Lib:
    import tokensmith as ts

    tok = ts.load(spec["rank_file"])
    return Lib(
        ts.__version__,
        lambda t: tok.encode(t, disallowed_special=()),
        lambda ts_: tok.encode_batch(ts_, disallowed_special=()),
        how="ts.load(rank file); encode / encode_batch(disallowed_special=()) -> lists",
    )


def _load_tiktoken(spec: dict) -> Lib:
    import tiktoken

    enc = tiktoken.get_encoding(spec["encoding"])  # from TIKTOKEN_CACHE_DIR, set by the parent
    n = spec["threads"]
    return Lib(
        tiktoken.__version__,
        lambda t: enc.encode(t, disallowed_special=()),
        lambda ts_: enc.encode_batch(ts_, num_threads=n, disallowed_special=()),
        how=f"get_encoding; encode / encode_batch(num_threads={n}, disallowed_special=())",
    )


def _load_tokenizers(spec: dict) -> Lib:
    import tokenizers

    if not spec.get("hf_json"):
        raise RuntimeError(spec.get("hf_json_error") or "no tokenizer.json")
    tok = tokenizers.Tokenizer.from_file(spec["hf_json"])
    return Lib(
        tokenizers.__version__,
        lambda t: tok.encode(t, add_special_tokens=False).ids,
        lambda ts_: [e.ids for e in tok.encode_batch_fast(ts_, add_special_tokens=False)],
        how="Tokenizer.from_file(tokenizer.json); encode(...).ids / encode_batch_fast",
    )


def _load_quicktok(spec: dict) -> Lib:
    import quicktok

    enc = quicktok.get_encoding(spec["encoding"])  # bundled data
    n = spec["threads"]

    def batch_ids(result):  # type: ignore[no-untyped-def]
        tokens, offsets = result
        flat, bounds = tokens.tolist(), offsets.tolist()
        return [flat[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]

    return Lib(
        _version("quicktok-v1"),
        enc.encode_ordinary,
        lambda ts_: enc.encode_batch(ts_, n),
        batch_ids=batch_ids,
        how=f"get_encoding (bundled); encode_ordinary / encode_batch(threads={n}) -> numpy",
    )


def _load_riptoken(spec: dict) -> Lib:
    import riptoken

    enc = riptoken.get_encoding(spec["encoding"])  # wraps tiktoken's Encoding
    return Lib(
        riptoken.__version__,
        enc.encode_ordinary,
        enc.encode_ordinary_batch,
        how="get_encoding (via tiktoken); encode_ordinary / encode_ordinary_batch",
    )


def _load_bpe_openai(spec: dict) -> Lib:
    import bpe_openai

    enc = bpe_openai.get_encoding(spec["encoding"])  # bundled data
    # The Encoding wrapper refuses texts of 1,000,000 characters or more, so
    # single texts go straight to the Rust binding it calls underneath.
    core = enc._backend
    n = spec["threads"]
    return Lib(
        bpe_openai.__version__,
        core.encode,
        lambda ts_: enc.encode_ordinary_batch(ts_, num_threads=n),
        how=f"get_encoding (bundled); binding encode / encode_ordinary_batch(num_threads={n})",
    )


def _load_tokie(spec: dict) -> Lib:
    import tokie

    if not spec.get("hf_json"):
        raise RuntimeError(spec.get("hf_json_error") or "no tokenizer.json")
    tok = tokie.Tokenizer.from_json(spec["hf_json"])
    return Lib(
        _version("tokie"),
        lambda t: tok.encode(t, add_special_tokens=False).ids,
        lambda ts_: [e.ids for e in tok.encode_batch(ts_, add_special_tokens=False)],
        how="Tokenizer.from_json(tokenizer.json); encode(...).ids / encode_batch",
    )


def _load_gigatoken(spec: dict) -> Lib:
    import gigatoken

    tok = gigatoken.Tokenizer.from_tiktoken(spec["rank_file"])
    return Lib(
        _version("gigatoken"),
        tok.encode,
        lambda ts_: tok.encode_batch_list(ts_, parallel=spec["threads"] > 1),
        ids=lambda r: r.tolist(),
        how="Tokenizer.from_tiktoken(rank file); encode -> numpy / encode_batch_list",
    )


def _load_tokendagger(spec: dict) -> Lib:
    # Not exercised here: tokendagger did not build on this machine. It is a
    # tiktoken look-alike; build it from tiktoken's definition of the encoding.
    import tiktoken
    import tokendagger

    tt = tiktoken.get_encoding(spec["encoding"])
    enc = tokendagger.Encoding(
        name=tt.name, pat_str=tt._pat_str, mergeable_ranks=tt._mergeable_ranks,
        special_tokens=tt._special_tokens,
    )
    n = spec["threads"]
    return Lib(
        _version("tokendagger"),
        lambda t: enc.encode(t, disallowed_special=()),
        lambda ts_: enc.encode_batch(ts_, num_threads=n, disallowed_special=()),
        how=f"Encoding(tiktoken's definition); encode / encode_batch(num_threads={n})",
    )


LOADERS = {
    "tokensmith": _load_tokensmith,
    "tokensmith-list": _load_tokensmith_list,
    "tiktoken": _load_tiktoken,
    "tokenizers": _load_tokenizers,
    "quicktok": _load_quicktok,
    "riptoken": _load_riptoken,
    "bpe_openai": _load_bpe_openai,
    "tokie": _load_tokie,
    "gigatoken": _load_gigatoken,
    "tokendagger": _load_tokendagger,
}


def _emit(**msg: Any) -> None:
    print(json.dumps(msg), flush=True)


def _pin(threads: int) -> list[int]:
    """Restrict this process to ``threads`` CPUs (before any library starts a thread)."""
    if not hasattr(os, "sched_setaffinity"):
        return []
    cpus = sorted(os.sched_getaffinity(0))[:threads]
    os.sched_setaffinity(0, cpus)
    return cpus


def _timed(fn, arg, warmup=None):  # type: ignore[no-untyped-def]
    """(result, wall seconds, CPU seconds of the whole process) of one call,
    after ``warmup()`` if given.

    The garbage collector runs first and is paused from then until the timed
    call returns. It must not run between the warm-up and the timed call: a
    collection walks every object of the Python heap and pushes out of the
    CPU's caches what the warm-up left there (tokensmith, cl100k English,
    fresh processes: about 10% slower with a collection in between).
    """
    gc.collect()
    gc.disable()
    try:
        if warmup is not None:
            warmup()
        c0, t0 = time.process_time(), time.perf_counter()
        result = fn(arg)
        t1, c1 = time.perf_counter(), time.process_time()
    finally:
        gc.enable()
    return result, t1 - t0, c1 - c0


def _first_mismatch(got: list[int], ref: list[int]) -> int | None:
    if got == ref:
        return None
    for i, (a, b) in enumerate(zip(got, ref, strict=False)):
        if a != b:
            return i
    return min(len(got), len(ref))


def _digest(ids: list[int]) -> str:
    return hashlib.sha1(array("I", ids).tobytes()).hexdigest()


def _read_ids(path: str) -> list[int]:
    a = array("I")
    a.frombytes(Path(path).read_bytes())
    return a.tolist()


def _task_doc(lib: Lib, task: dict) -> dict:
    # Warm up on a different text of the same corpus: caches then hold the
    # corpus's common pieces, but nothing of the timed document itself. Both
    # texts are read first: reading one (a file read and a decode, megabytes
    # of memory touched) between the warm-up and the timed call would push
    # the warm-up's work out of the caches.
    text = Path(task["input"]).read_text(encoding="utf-8")
    warm = Path(task["warmup"]).read_text(encoding="utf-8")
    _emit(progress=task["id"])
    result, s, cpu = _timed(lib.encode, text, warmup=lambda: lib.encode(warm))
    _emit(progress=task["id"])
    ids = lib.ids(result)
    out: dict[str, Any] = {"bytes": len(text.encode("utf-8")), "tokens": len(ids), "s": s,
                           "cpu_s": cpu}
    if task.get("ref"):
        bad = _first_mismatch(ids, _read_ids(task["ref"]))
        out["exact"] = bad is None
        if bad is not None:
            out["mismatch"] = f"first mismatch at token {bad:,}"
    return out


def _task_batch(lib: Lib, task: dict) -> dict:
    # Warm up (threads, caches) on documents cut from a different part of the
    # corpus; both sets read first, as for one document.
    docs = json.loads(Path(task["input"]).read_text(encoding="utf-8"))
    warm = json.loads(Path(task["warmup"]).read_text(encoding="utf-8"))
    _emit(progress=task["id"])
    result, s, cpu = _timed(
        lib.encode_batch, docs, warmup=lambda: lib.batch_ids(lib.encode_batch(warm))
    )
    _emit(progress=task["id"])
    got = lib.batch_ids(result)
    flat = [i for doc in got for i in doc]
    out: dict[str, Any] = {"bytes": sum(len(d.encode("utf-8")) for d in docs), "docs": len(docs),
                           "tokens": len(flat), "s": s, "cpu_s": cpu}
    if task.get("ref"):
        lengths = _read_ids(task["ref_lengths"])
        bad = _first_mismatch(flat, _read_ids(task["ref"]))
        out["exact"] = bad is None and [len(d) for d in got] == lengths
        if bad is None and not out["exact"]:
            out["mismatch"] = "same ids, different document boundaries"
        elif bad is not None:
            doc, start = 0, 0
            while doc < len(lengths) and start + lengths[doc] <= bad:
                start += lengths[doc]
                doc += 1
            out["mismatch"] = (
                f"first mismatch at token {bad:,} (document {doc}, its token {bad - start})"
            )
    return out


def _task_short(lib: Lib, task: dict) -> dict:
    text, encode = task["text"], lib.encode_short
    ids = lib.short_ids(encode(text))
    out: dict[str, Any] = {"chars": len(text), "tokens": len(ids)}
    if task.get("ref_ids") is not None:
        bad = _first_mismatch(ids, task["ref_ids"])
        out["exact"] = bad is None
        if bad is not None:
            out["mismatch"] = f"first mismatch at token {bad}"
    calls = task["calls"]
    for _ in range(calls * 10):  # warm-up
        encode(text)
    per_call = []
    gc.disable()
    try:
        for _ in range(task["blocks"]):
            t0 = time.perf_counter()
            for _ in range(calls):
                encode(text)
            per_call.append((time.perf_counter() - t0) / calls)
    finally:
        gc.enable()
    out["s"] = statistics.median(per_call)
    return out


def worst_case_text(case: str, n: int) -> str:
    if case == "a":
        return "a" * n
    if case == "spaces":
        return " " * n
    if case == "zh_char":
        return "中" * n
    if case == "base64":
        raw = random.Random(SEED).randbytes(n * 3 // 4 + 3)
        return base64.b64encode(raw).decode("ascii")[:n]
    raise ValueError(case)


def _task_worst(lib: Lib, task: dict) -> dict:
    # No warm-up on this input: the process is warm from a short text already.
    text = worst_case_text(task["case"], task["n"])
    result, s, cpu = _timed(lib.encode, text)
    _emit(progress=task["id"])
    ids = lib.ids(result)
    return {"chars": len(text), "bytes": len(text.encode("utf-8")), "tokens": len(ids),
            "sha1": _digest(ids), "s": s, "cpu_s": cpu}


TASKS = {"doc": _task_doc, "batch": _task_batch, "short": _task_short, "worst": _task_worst}


def _settle_numpy() -> float:
    """Import numpy (when installed) and wait until the threads it starts are idle.

    numpy's OpenBLAS starts a thread per further CPU when numpy is imported,
    and they spin for about a tenth of a second before they sleep: a library
    that first imports numpy just before its timed call (tokensmith and
    quicktok do, on their first numpy result) would lose one of the two
    batch CPUs to that spin. So every worker imports numpy first and waits
    for its process to use no CPU while asleep. Returns the seconds waited.
    """
    if importlib.util.find_spec("numpy") is None:
        return 0.0
    import numpy  # noqa: F401

    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 3.0:
        c, w = time.process_time(), time.perf_counter()
        time.sleep(0.05)
        if time.process_time() - c < 0.05 * (time.perf_counter() - w):
            break
    return time.perf_counter() - t0


def worker(spec: dict) -> None:
    cpus = _pin(spec["threads"])
    settle_s = _settle_numpy()
    module = LIBRARIES[spec["library"]][0]
    t0 = time.perf_counter()
    try:
        lib = LOADERS[spec["library"]](spec)
        lib.ids(lib.encode(WARMUP_TEXT))
    except ImportError as e:
        if importlib.util.find_spec(module) is None:
            _emit(unavailable="not installed", detail=str(e))
        else:
            _emit(unavailable=f"import failed: {e}")
        return
    except Exception as e:  # noqa: BLE001 - any failure to construct is reported, not raised
        _emit(unavailable=f"cannot construct {spec['encoding']}: {type(e).__name__}: {e}")
        return
    _emit(
        ready=True, version=lib.version, how=lib.how, cpus=cpus,
        load_s=time.perf_counter() - t0, numpy_settle_s=settle_s,
        rayon_num_threads=os.environ.get("RAYON_NUM_THREADS"),
    )
    for task in spec["tasks"]:
        try:
            result = TASKS[task["kind"]](lib, task)
        except Exception as e:  # noqa: BLE001 - reported per task
            result = {"error": f"{type(e).__name__}: {e}"}
        _emit(task=task["id"], result=result)


# =========================================================================== parent


class _Lines:
    """Read the worker's stdout line by line with a timeout per line."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.fd = proc.stdout.fileno()  # type: ignore[union-attr]
        self.buf = b""

    def readline(self, timeout: float) -> str | None:
        """The next line, ``None`` at end of output; raises TimeoutError."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                raise TimeoutError
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                if self.buf:
                    line, self.buf = self.buf, b""
                    return line.decode()
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()


def _tail(path: Path, n: int = 600) -> str:
    text = path.read_text(errors="replace").strip() if path.exists() else ""
    return text[-n:]


def run_group(spec: dict, env: dict[str, str], timeout: float, workdir: Path) -> dict:
    """Run one worker's tasks, restarting it after a task times out or crashes."""
    pending = list(spec["tasks"])
    info: dict[str, Any] | None = None
    results: dict[str, dict] = {}
    load_timeout = max(timeout, 120.0)
    while pending:
        err = workdir / f"stderr-{spec['library']}-{spec['encoding']}-{spec['threads']}.txt"
        cmd = [
            sys.executable, str(Path(__file__).resolve()), "--worker",
            json.dumps(dict(spec, tasks=pending)),
        ]
        with err.open("w") as err_f:
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=err_f)
        lines = _Lines(proc)
        wait = load_timeout
        started = False
        try:
            while True:
                try:
                    line = lines.readline(wait)
                except TimeoutError:
                    proc.kill()
                    proc.wait()
                    if not started:
                        return {"unavailable": f"no answer within {wait:.0f} s of starting"}
                    task = pending.pop(0)
                    results[task["id"]] = {"timeout": timeout}
                    break
                if line is None:
                    rc = proc.wait()
                    if not started:
                        return {"unavailable": f"worker exited ({rc}): {_tail(err)}"}
                    if pending:
                        task = pending.pop(0)
                        results[task["id"]] = {"error": f"worker exited ({rc}): {_tail(err)}"}
                    break
                if not line.strip():
                    continue
                msg = json.loads(line)
                if "unavailable" in msg:
                    proc.wait()
                    return msg
                if "ready" in msg:
                    started = True
                    info = info or msg
                elif "task" in msg:
                    results[msg["task"]] = msg["result"]
                    pending = [t for t in pending if t["id"] != msg["task"]]
                wait = timeout
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
    return dict(info or {}, results=results)


def _char_cut(data: bytes, end: int) -> int:
    """``end`` moved back so that ``data[:end]`` ends on a UTF-8 character boundary."""
    end = min(end, len(data))
    while 0 < end < len(data) and (data[end] & 0xC0) == 0x80:
        end -= 1
    return end


def split_documents(data: bytes, total: int, lo: int, hi: int) -> list[str]:
    """Deterministic 1-4 KB documents from the start of ``data``, about ``total`` bytes."""
    rng = random.Random(SEED)
    docs, pos = [], 0
    while pos < len(data) and pos < total:
        end = _char_cut(data, pos + rng.randint(lo, hi))
        if end <= pos:  # cannot happen with UTF-8, but never loop forever
            end = min(len(data), pos + hi)
        docs.append(data[pos:end].decode("utf-8"))
        pos = end
    return docs


def prepare_inputs(corpora: dict[str, Path], sz: dict[str, int], workdir: Path) -> dict:
    """Per corpus: the document (its first 1 MB), the batch (1-4 KB documents from its
    start, about 4 MB) and the warm-up text (its last 1 MB, which neither overlaps)."""
    inputs: dict[str, Any] = {}
    for name, path in corpora.items():
        size = path.stat().st_size
        with path.open("rb") as f:
            f.seek(max(0, size - sz["doc_bytes"]))
            warm = f.read()
            start = 0
            while start < len(warm) and (warm[start] & 0xC0) == 0x80:  # continuation byte
                start += 1
            warm = warm[start:]
            # What may be used from the start: up to 4 MB, and never the warm-up text.
            limit = min(size - len(warm), max(sz["doc_bytes"], sz["batch_bytes"]))
            f.seek(0)
            head = f.read(limit + 4)
        head = head[: _char_cut(head, limit)]
        doc = head[: _char_cut(head, sz["doc_bytes"])]
        docs = split_documents(head, sz["batch_bytes"], sz["doc_min"], sz["doc_max"])
        warm_docs = split_documents(warm, len(warm), sz["doc_min"], sz["doc_max"])
        files = {
            "doc": doc,
            "warmup": warm or WARMUP_TEXT.encode("utf-8"),
            "batch": json.dumps(docs).encode("utf-8"),
            "warmup_batch": json.dumps(warm_docs or [WARMUP_TEXT]).encode("utf-8"),
        }
        inputs[name] = {}
        for key, blob in files.items():
            path_out = workdir / f"{name}-{key}"
            path_out.write_bytes(blob)
            inputs[name][key] = str(path_out)
        inputs[name].update(
            doc_bytes=len(doc), warmup_bytes=len(warm), batch_docs=len(docs),
            batch_bytes=sum(len(d.encode("utf-8")) for d in docs),
        )
    return inputs


def tiktoken_cache(encodings: list[str], workdir: Path) -> Path:
    """A TIKTOKEN_CACHE_DIR holding the rank files under the names tiktoken looks for."""
    cache = workdir / "tiktoken-cache"
    cache.mkdir(exist_ok=True)
    for name in encodings:
        key = hashlib.sha1(TIKTOKEN_URL.format(name=name).encode()).hexdigest()
        shutil.copyfile(rank_file(name), cache / key)
    return cache


def rank_file(encoding: str) -> Path:
    return ASSETS / encoding / f"{encoding}.tiktoken"


def make_references(encodings: list[str], inputs: dict, workdir: Path) -> dict:
    """tiktoken's ids for every benchmark input (in this process, untimed)."""
    try:
        import tiktoken
    except ImportError:
        return {}
    refs: dict[str, Any] = {}
    for enc_name in encodings:
        enc = tiktoken.get_encoding(enc_name)
        r: dict[str, Any] = {"short": enc.encode(SHORT_TEXT, disallowed_special=())}
        for corpus, inp in inputs.items():
            text = Path(inp["doc"]).read_text(encoding="utf-8")
            path = workdir / f"ref-{enc_name}-{corpus}-doc.bin"
            path.write_bytes(array("I", enc.encode(text, disallowed_special=())).tobytes())
            r[f"doc:{corpus}"] = str(path)
            docs = json.loads(Path(inp["batch"]).read_text(encoding="utf-8"))
            got = enc.encode_batch(docs, disallowed_special=())
            path = workdir / f"ref-{enc_name}-{corpus}-batch.bin"
            path.write_bytes(array("I", [i for d in got for i in d]).tobytes())
            lengths = workdir / f"ref-{enc_name}-{corpus}-batch-lengths.bin"
            lengths.write_bytes(array("I", [len(d) for d in got]).tobytes())
            r[f"batch:{corpus}"] = (str(path), str(lengths))
        refs[enc_name] = r
    return refs


def busy_cpu_s() -> float | None:
    """CPU seconds used by every process on the machine since boot (Linux), or None."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]
        user, nice, system, _idle, _iowait, irq, softirq = map(int, fields)
    except (OSError, ValueError):
        return None
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def own_cpu_s() -> float:
    """CPU seconds used by this process and its (finished) workers."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def tokensmith_build() -> str:
    """The repository commit and the time the installed extension was built."""
    try:
        head = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        head, dirty = "", ""
    spec = importlib.util.find_spec("tokensmith._core")
    built = ""
    if spec and spec.origin and os.path.exists(spec.origin):
        built = time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(spec.origin)))
    parts = [f"commit {head}" + (" + uncommitted changes" if dirty else "") if head else "",
             f"extension built {built}" if built else ""]
    return ", ".join(p for p in parts if p) or "unknown"


def make_hf_json(encoding: str, workdir: Path) -> tuple[str | None, str | None]:
    """A Hugging Face tokenizer.json for the encoding (for tokenizers and tokie)."""
    path = workdir / f"{encoding}.tokenizer.json"
    try:
        import tokensmith as ts

        ts.load(str(rank_file(encoding))).save(path, pretty=False)
    except Exception as e:  # noqa: BLE001
        return None, f"no tokenizer.json for {encoding} (tokensmith could not write one: {e})"
    return str(path), None


def worker_env(threads: int, cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        RAYON_NUM_THREADS=str(threads),
        # numpy's OpenBLAS starts a thread per core on import that spins for
        # a while: no library here uses BLAS, and the spinning threads took
        # CPU from the timed calls of every library that imports numpy
        OPENBLAS_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        TOKENIZERS_PARALLELISM="true" if threads > 1 else "false",
        TIKTOKEN_CACHE_DIR=str(cache),
        HF_HUB_OFFLINE="1",
        TOKENSMITH_OFFLINE="1",
    )
    return env


def build_tasks(measure: list[str], corpora: list[str], inputs: dict, refs: dict,
                sz: dict[str, int]) -> tuple[list[dict], list[dict]]:
    """(single-threaded tasks, batch tasks) for one encoding."""
    single: list[dict] = []
    batch: list[dict] = []
    for c in corpora:
        if "single" in measure:
            single.append({"id": f"single:{c}", "kind": "doc", "input": inputs[c]["doc"],
                           "warmup": inputs[c]["warmup"], "ref": refs.get(f"doc:{c}")})
        if "batch" in measure:
            ref = refs.get(f"batch:{c}") or (None, None)
            batch.append({"id": f"batch:{c}", "kind": "batch", "input": inputs[c]["batch"],
                          "warmup": inputs[c]["warmup_batch"], "ref": ref[0],
                          "ref_lengths": ref[1]})
    if "short" in measure:
        single.append({"id": "short", "kind": "short", "text": SHORT_TEXT,
                       "ref_ids": refs.get("short"), "blocks": sz["short_blocks"],
                       "calls": sz["short_calls"]})
    if "worst" in measure:
        for case in WORST_CASES:
            single.append({"id": f"worst:{case}", "kind": "worst", "case": case,
                           "n": sz["worst_n"]})
    return single, batch


def _finished(rounds: list[dict]) -> bool:
    """No more rounds for an input that timed out, failed, or took over SLOW_CALL_S."""
    return any("timeout" in r or "error" in r or r.get("s", 0) > SLOW_CALL_S for r in rounds)


def combine(kind: str, rounds: list[dict]) -> dict:
    """The best of the rounds, with every run's time and the exactness of all."""
    ok = [r for r in rounds if "s" in r]
    if not ok:
        return rounds[0]
    best = min(ok, key=lambda r: r["s"])
    out = {k: v for k, v in best.items() if k not in ("s", "cpu_s", "exact", "mismatch")}
    out["runs"] = [r["s"] for r in ok]
    out["best_s"] = best["s"]
    if "cpu_s" in best:
        out["cpu_per_wall"] = best["cpu_s"] / best["s"]
    exact = [r.get("exact") for r in ok]
    if any(e is False for e in exact):
        out["exact"] = False
        out["mismatch"] = next(r["mismatch"] for r in ok if r.get("exact") is False)
    elif exact and all(e is True for e in exact):
        out["exact"] = True
    if kind in ("single", "batch"):
        out["mb_s"] = best["bytes"] / 1e6 / best["s"]
    elif kind == "short":
        out["us"] = best["s"] * 1e6
    if len(ok) < len(rounds):
        out["failed_rounds"] = [r for r in rounds if "s" not in r]
    return out


# --------------------------------------------------------------------------- report


def _speed(kind: str, r: dict | None) -> float | None:
    """Higher is faster: MB/s, calls per µs, or inputs per second."""
    if not r or "error" in r or "timeout" in r:
        return None
    if kind in ("single", "batch"):
        return r["mb_s"]
    if kind == "short":
        return 1.0 / r["us"]
    return 1.0 / r["best_s"]


def _exact(kind: str, task: str, enc_results: dict, lib: str) -> bool | None:
    """Whether ``lib`` gave tiktoken's ids for this input (None: not checked)."""
    r = enc_results.get(lib, {}).get("results", {}).get(task)
    if not r or "error" in r or "timeout" in r:
        return None
    if kind != "worst":
        return r.get("exact")
    ref = enc_results.get("tiktoken", {}).get("results", {}).get(task)
    if ref and "sha1" in ref:
        return r["sha1"] == ref["sha1"]
    # tiktoken failed on this input: the reference is the ids that more than
    # half of the libraries that finished agree on (None if there is none).
    digests = [v["results"][task]["sha1"] for v in enc_results.values()
               if "sha1" in v.get("results", {}).get(task, {})]
    if digests:
        common, count = Counter(digests).most_common(1)[0]
        if count * 2 > len(digests):
            return r["sha1"] == common
    return None


def summarize(kind: str, task: str, enc_results: dict, libs: list[str]) -> dict:
    """tokensmith's speed ratio to the fastest exact peer and to tiktoken (>1: faster)."""
    get = enc_results.get
    ts = _speed(kind, get(TOKENSMITH, {}).get("results", {}).get(task))
    out: dict[str, Any] = {}
    best_lib, best = None, None
    for lib in libs:
        if lib in (TOKENSMITH, TOKENSMITH_LIST):
            continue
        s = _speed(kind, get(lib, {}).get("results", {}).get(task))
        if s is not None and _exact(kind, task, enc_results, lib) and (best is None or s > best):
            best_lib, best = lib, s
    if ts is not None and best is not None:
        out["fastest_exact_peer"] = {"library": best_lib, "ratio": ts / best}
    tt = _speed(kind, get("tiktoken", {}).get("results", {}).get(task))
    if ts is not None and tt is not None:
        out["tiktoken"] = ts / tt
    return out


def summaries(results: dict, libs: list[str]) -> dict:
    """``summarize`` for every encoding and input."""
    return {
        enc: {
            task: summarize(task.split(":")[0], task, er, libs)
            for task in sorted({t for lib in libs for t in er.get(lib, {}).get("results", {})})
        }
        for enc, er in results.items()
    }


TITLES = {
    "single": "single-threaded, one {doc} document (MB/s, best of {repeat}; higher is faster)",
    "batch": "batch, 2 threads, {ndocs} documents of 1-4 KB, {batch} in all "
             "(MB/s, best of {repeat}; higher is faster)",
    "short": "short string, {chars} characters (µs per call, median; lower is faster)",
    "worst": "worst cases, {n} characters each, single-threaded (seconds per input, best of "
             "{repeat}, calls over 10 s not repeated; in brackets: time / the library's own "
             "time for the {doc} English document)",
}


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} KB"


def _cell(kind: str, r: dict | None, exact: bool | None, en_s: float | None) -> str:
    if r is None:
        return "-"
    if "timeout" in r:
        return f"timeout (>{r['timeout']:.0f} s)"
    if "error" in r:
        return "error"
    mark = "" if exact is not False else " †"
    if kind in ("single", "batch"):
        return f"{r['mb_s']:.1f}{mark}"
    if kind == "short":
        return f"{r['us']:.2f}{mark}"
    rel = f" ({r['best_s'] / en_s:.1f}x)" if en_s else ""
    return f"{r['best_s']:.3f}{rel}{mark}"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [row[0].ljust(widths[0])]
        cells += [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
        out.append("  ".join(cells).rstrip())
    return out


def render(report: dict) -> str:
    s = report["settings"]
    out = [
        f"tokensmith encoding benchmark, {s['date']}: {s['cpu_count']} CPUs, "
        f"Python {s['python']}, {s['platform']}",
        f"1-minute load average before the run: {s['load_average_before']:.2f}; "
        + (f"other processes used {s['other_processes_cpus']:.2f} CPUs on average during "
           f"the run ({s['wall_s'] / 60:.1f} min)"
           if s["other_processes_cpus"] is not None else "")
        + ("  (noisy)" if s["noisy"] else ""),
        "versions: " + ", ".join(f"{k} {v}" for k, v in s["versions"].items()),
        f"tokensmith build: {s['tokensmith_build']}",
        f"command: {s['command']}",
        "ratios are speeds (tokensmith / peer): above 1x tokensmith is faster.  "
        "† = ids differ from tiktoken's (excluded from the fastest-exact-peer bar)",
    ]
    libs = s["libraries"]
    inp = s["inputs"]
    for enc in s["encodings"]:
        er = report["results"][enc]
        out += ["", f"=== {enc} ==="]
        for kind in s["measure"]:
            if kind in ("single", "batch"):
                cols = [(f"{kind}:{c}", c) for c in s["corpora"]]
            elif kind == "short":
                cols = [("short", "µs")]
            else:
                cols = [(f"worst:{w}", WORST_LABELS[w]) for w in WORST_CASES]
            title = TITLES[kind].format(
                doc=_mb(s["sizes"]["doc_bytes"]), repeat=s["repeat"],
                ndocs=", ".join(f"{c} {inp[c]['batch_docs']:,}" for c in s["corpora"]),
                batch=", ".join(f"{c} {_mb(inp[c]['batch_bytes'])}" for c in s["corpora"]),
                chars=len(SHORT_TEXT), n=f"{s['sizes']['worst_n']:,}",
            )
            out += ["", title]
            rows = [["library"] + [label for _, label in cols]]
            notes: list[str] = []
            for lib in libs:
                lr = er.get(lib, {})
                if "unavailable" in lr:
                    rows.append([lib] + [lr["unavailable"].split(":")[0]] + [""] * (len(cols) - 1))
                    continue
                en = lr.get("results", {}).get("single:en") if kind == "worst" else None
                en_s = en.get("best_s") if en and "best_s" in en else None
                row = [lib]
                for task, label in cols:
                    r = lr.get("results", {}).get(task)
                    exact = _exact(kind, task, er, lib)
                    row.append(_cell(kind, r, exact, en_s))
                    if r and exact is False:
                        tt = er.get("tiktoken", {}).get("results", {}).get(task, {})
                        why = r.get("mismatch") or (
                            "ids differ from tiktoken's" if "sha1" in tt else
                            "ids differ from those most libraries give (tiktoken failed here)")
                        notes.append(f"† {lib} inexact on {label}: {why}")
                    if r and "error" in r:
                        notes.append(f"{lib} on {label}: {r['error']}")
                rows.append(row)
            out += _table(rows)
            bar, vs_tt = [], []
            for task, label in cols:
                sm = report["summary"][enc].get(task, {})
                fp = sm.get("fastest_exact_peer")
                bar.append(f"{label} {fp['ratio']:.2f}x ({fp['library']})" if fp else
                           f"{label} n/a")
                tt = sm.get("tiktoken")
                tt_r = er.get("tiktoken", {}).get("results", {}).get(task, {})
                failed = ("tiktoken timed out" if "timeout" in tt_r else
                          "tiktoken failed" if "error" in tt_r else "n/a")
                vs_tt.append(f"{label} {tt:.2f}x" if tt else f"{label} {failed}")
            if TOKENSMITH in libs:
                out.append("tokensmith / fastest exact peer: " + " | ".join(bar))
                out.append("tokensmith / tiktoken: " + " | ".join(vs_tt))
            out += notes
        reasons = [f"{lib}: {er[lib]['unavailable']}" for lib in libs
                   if "unavailable" in er.get(lib, {})]
        if reasons:
            out += ["", "unavailable: " + "; ".join(reasons)]
    return "\n".join(out)


def _readme_cell(report: dict, enc: str, task: str) -> str:
    """tokensmith's MB/s on one input, with its ratio to the fastest exact peer."""
    r = report["results"][enc].get(TOKENSMITH, {}).get("results", {}).get(task)
    if not r or "mb_s" not in r:
        return "error" if r else "-"
    peer = report["summary"][enc].get(task, {}).get("fastest_exact_peer")
    return f"{r['mb_s']:.1f}" + (f" ({peer['ratio']:.2f}x {peer['library']})" if peer else "")


def write_json(path: str, report: dict, argv: list[str] | None) -> None:
    """The table of ``benchmarks/README.md`` as a results file (see ``render.py``):
    tokensmith's MB/s and its ratio to the fastest exact peer, per encoding and input."""
    from _results import command_line, write_results

    s = report["settings"]
    inputs = {"single": f"{s['sizes']['doc_bytes'] / 1e6:g} MB, single-threaded",
              "batch": f"{s['sizes']['doc_min'] // 1024}-{s['sizes']['doc_max'] // 1024} KB "
                       "docs, 2 threads"}
    columns = ["encoding", "input", *({"name": c, "align": "right"} for c in s["corpora"])]
    rows = [[enc, inputs[kind], *(_readme_cell(report, enc, f"{kind}:{c}") for c in s["corpora"])]
            for enc in s["encodings"] for kind in ("single", "batch") if kind in s["measure"]]
    others = s["other_processes_cpus"]
    load = f"{s['load_average_before']:.2f} before the run" + (
        f"; other processes {others:.2f} CPUs" if others is not None else "")
    build = s["tokensmith_build"]
    notes = (f"{build[:1].upper()}{build[1:]}; best of {s['repeat']}, tokensmith's MB/s (in "
             "brackets: its ratio to the fastest exact peer).")
    write_results(path, "encode.py", command_line("encode.py", argv), columns, rows, notes, load)


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Encoding speed of tokensmith and its peers (tiktoken, tokenizers, "
        "quicktok, riptoken, bpe_openai, tokie, gigatoken, tokendagger), same inputs, same run."
    )
    parser.add_argument("--repeat", type=int, default=3, metavar="N",
                        help="best of N timed runs per measurement (default 3)")
    parser.add_argument("--quick", action="store_true",
                        help="inputs ten times smaller (100 KB document, 400 KB batch, "
                        "100,000-character worst cases): a smoke run")
    parser.add_argument("--only", metavar="LIB,...",
                        help=f"libraries to run (default all: {','.join(LIBRARIES)})")
    parser.add_argument("--encodings", default=",".join(ENCODINGS), metavar="NAME,...",
                        help="default cl100k_base,o200k_base")
    parser.add_argument("--corpora", default=",".join(CORPORA), metavar="NAME,...",
                        help=f"files NAME.txt in {CORPUS_DIR} (default en,code,zh)")
    parser.add_argument("--measure", default=",".join(MEASUREMENTS), metavar="WHAT,...",
                        help="any of single,batch,short,worst (default all)")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="S",
                        help="seconds allowed per call before it is reported as a timeout "
                        "(default 60)")
    parser.add_argument("--raw-json", action="store_true",
                        help="print the whole report as JSON instead of the tables")
    parser.add_argument("--json", metavar="PATH",
                        help="also write the README's table as a results file "
                        "(benchmarks/render.py)")
    parser.add_argument("--save", type=Path, metavar="PATH",
                        help="also write the JSON report to PATH")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        worker(json.loads(args.worker))
        return 0

    def names(value: str, allowed, what: str) -> list[str]:  # type: ignore[no-untyped-def]
        got = [v.strip() for v in value.split(",") if v.strip()]
        bad = [v for v in got if allowed is not None and v not in allowed]
        if bad or not got:
            parser.error(f"unknown {what}: {', '.join(bad) or '(none)'}; "
                         f"choose from {', '.join(allowed)}")
        return got

    libs = names(args.only, LIBRARIES, "library") if args.only else list(LIBRARIES)
    libs = [lib for lib in LIBRARIES if lib in libs]  # fixed order: tokensmith first
    encodings = names(args.encodings, ENCODINGS, "encoding")
    measure = [m for m in MEASUREMENTS if m in names(args.measure, MEASUREMENTS, "measurement")]
    corpus_names = names(args.corpora, None, "corpus")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if "worst" in measure and "single" in measure and "en" not in corpus_names:
        print("note: without the en corpus, worst cases are not compared to English",
              file=sys.stderr)
    corpora = {c: CORPUS_DIR / f"{c}.txt" for c in corpus_names}
    missing = [str(p) for p in [*corpora.values(), *map(rank_file, encodings)] if not p.is_file()]
    if missing:
        sys.exit("error: not found: " + ", ".join(missing) + f" (expected under {SHARED})")

    sz = sizes(args.quick)
    load_before = os.getloadavg()[0]
    busy0, own0, wall0 = busy_cpu_s(), own_cpu_s(), time.monotonic()
    cpu_count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    noisy_at = 0.5
    if load_before >= noisy_at:
        print(f"note: 1-minute load average is {load_before:.2f}: timings may be noisy if other "
              "processes are using the CPU", file=sys.stderr)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    results: dict[str, dict[str, dict]] = {}
    with tempfile.TemporaryDirectory(prefix="tokensmith-encode-") as tmp:
        workdir = Path(tmp)
        log("preparing inputs and tiktoken's reference ids …")
        inputs = prepare_inputs(corpora, sz, workdir)
        cache = tiktoken_cache(encodings, workdir)
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)  # for the references made here
        refs = make_references(encodings, inputs, workdir)
        if not refs:
            log("note: tiktoken is not installed: ids cannot be checked, no peer counts as exact")
        groups: dict[str, tuple[list[dict], list[dict]]] = {}
        hf: dict[str, tuple[str | None, str | None]] = {}
        for enc in encodings:
            groups[enc] = build_tasks(measure, corpus_names, inputs, refs.get(enc, {}), sz)
            hf[enc] = (None, "not needed")
            if any(lib in libs for lib in ("tokenizers", "tokie")):
                hf[enc] = make_hf_json(enc, workdir)
        state: dict[str, dict[str, dict]] = {enc: {lib: {} for lib in libs} for enc in encodings}
        # Every timed call is the first time its process sees that input (a
        # library may cache pieces), so each round starts fresh processes; the
        # rounds alternate the libraries so that background load hits all alike.
        for rnd in range(args.repeat):
            for enc in encodings:
                for lib in libs:
                    st = state[enc][lib]
                    if "unavailable" in st:
                        continue
                    if importlib.util.find_spec(LIBRARIES[lib][0]) is None:
                        st["unavailable"] = "not installed"
                        continue
                    for threads, tasks in zip((1, 2), groups[enc], strict=True):
                        todo = [t for t in tasks if not _finished(st.get(t["id"], []))]
                        if not todo:
                            continue
                        log(f"round {rnd + 1}/{args.repeat}, {enc}: {lib}, {len(todo)} "
                            f"input(s), {threads} thread(s) …")
                        spec = {
                            "library": lib, "encoding": enc, "threads": threads, "tasks": todo,
                            "rank_file": str(rank_file(enc)), "hf_json": hf[enc][0],
                            "hf_json_error": hf[enc][1],
                        }
                        got = run_group(spec, worker_env(threads, cache), args.timeout, workdir)
                        if "unavailable" in got:
                            st["unavailable"] = got["unavailable"]
                            break
                        for task_id, r in got.pop("results").items():
                            st.setdefault(task_id, []).append(r)
                        st.setdefault("workers", {}).setdefault(f"threads={threads}", got)
        for enc in encodings:
            results[enc] = {}
            for lib in libs:
                st = state[enc][lib]
                if "unavailable" in st:
                    results[enc][lib] = {"unavailable": st["unavailable"]}
                    continue
                results[enc][lib] = {
                    "results": {k: combine(k.split(":")[0], v) for k, v in st.items()
                                if k != "workers"},
                    "workers": st.get("workers", {}),
                }
    for inp in inputs.values():
        for key in ("doc", "warmup", "batch", "warmup_batch"):
            del inp[key]  # temporary paths

    summary = summaries(results, libs)
    load_after = os.getloadavg()[0]
    busy1, own1, wall1 = busy_cpu_s(), own_cpu_s(), time.monotonic()
    others = None
    if busy0 is not None and busy1 is not None:
        # Average number of CPUs kept busy by other processes while this ran.
        others = max(0.0, (busy1 - busy0) - (own1 - own0)) / (wall1 - wall0)
    versions = {}
    for lib in libs:
        from importlib.metadata import PackageNotFoundError, version

        try:
            versions[lib] = version(LIBRARIES[lib][1])
        except PackageNotFoundError:
            versions[lib] = "not installed"
    report = {
        "settings": {
            "date": time.strftime("%Y-%m-%d"),
            "command": " ".join(["python benchmarks/encode.py", *(argv or sys.argv[1:])]),
            "libraries": libs, "encodings": encodings, "corpora": corpus_names,
            "measure": measure, "repeat": args.repeat, "quick": args.quick,
            "timeout_s": args.timeout, "sizes": sz, "inputs": inputs,
            "short_text": SHORT_TEXT, "cpu_count": cpu_count,
            "python": sys.version.split()[0], "platform": platform.platform(terse=True),
            "load_average_before": load_before, "load_average_after": load_after,
            "other_processes_cpus": others, "wall_s": wall1 - wall0,
            "noisy": others >= NOISY_OTHERS if others is not None else load_before >= noisy_at,
            "versions": versions,
            "tokensmith_build": tokensmith_build(),
        },
        "results": results,
        "summary": summary,
    }
    if args.save:
        args.save.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n",
                             encoding="utf-8")
    if args.raw_json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(render(report))
    if args.json:
        write_json(args.json, report, argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
