"""Parallel paths: big documents cut at safe line breaks, batches, thread
counts, numpy output, fork safety, many added tokens, long inputs."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import subprocess
import sys

import pytest
import tokensmith as ts

from .conftest import asset, make_text

LINES = ["x\n", "x.\n/y", "a  \nb", "\n \n c", "  \n\n  d", "e\r\nf", "g\n\n\nh", "\t\n\ti",
         "end.\n", "\u3000\nz", "中\n文", "'s\n'S", "1\n2", "  ", "\n/", "k\n "]


def big_text(seed: int, size: int = 1_300_000) -> str:
    rng = random.Random(seed)
    parts: list[str] = []
    n = 0
    while n < size:
        piece = make_text(rng.randrange(10_000), 40) if rng.random() < 0.5 else rng.choice(LINES)
        parts.append(piece)
        n += len(piece)
    return "".join(parts)


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    return [make_text(i) for i in range(40)]


@pytest.mark.parametrize("pattern", ["gpt2", "gpt4", "o200k", r"\w+|\s+|[^\w\s]+"])
def test_big_documents_match_the_single_pass(corpus, pattern) -> None:
    tok = ts.train(texts=corpus, vocab_size=500, pattern=pattern)
    for seed in range(3):
        text = big_text(seed)
        chunked = tok.encode(text, disallowed_special=())
        # encode_full always runs one sequential pass
        single = tok.encode_full(text, disallowed_special=()).ids
        assert chunked == single
        assert tok.decode(chunked) == text


def test_big_documents_with_special_tokens(corpus) -> None:
    tok = ts.train(texts=corpus, vocab_size=500)
    text = big_text(7).replace("end.\n", "end.<|endoftext|>\n")
    ids = tok.encode(text, allowed_special="all")
    assert ids == tok.encode_full(text, allowed_special="all").ids
    assert ids.count(tok.special_tokens["<|endoftext|>"]) == text.count("<|endoftext|>")


def test_thread_counts_and_numpy(corpus, monkeypatch) -> None:
    np = pytest.importorskip("numpy")
    tok = ts.train(texts=corpus, vocab_size=500)
    docs = [make_text(i, 60) for i in range(200)]
    want = [tok.encode(d) for d in docs]
    for n in (1, 2, 3):
        assert tok.encode_batch(docs, num_threads=n) == want
    monkeypatch.setenv("TOKENSMITH_NUM_THREADS", "1")
    assert tok.encode_batch(docs) == want
    ids, offsets = tok.encode_batch_to_numpy(docs)
    assert ids.dtype == np.uint32 and offsets.dtype == np.uint64
    assert len(offsets) == len(docs) + 1 and offsets[-1] == len(ids)
    for i, w in enumerate(want):
        assert ids[offsets[i]:offsets[i + 1]].tolist() == w
    single = tok.encode_to_numpy(docs[0])
    assert single.tolist() == want[0]
    empty_ids, empty_offsets = tok.encode_batch_to_numpy([])
    assert len(empty_ids) == 0 and empty_offsets.tolist() == [0]


def test_numpy_output_without_numpy_fails_before_encoding(corpus, monkeypatch) -> None:
    # numpy is looked up before the encoder runs: a missing numpy is an
    # error at once, not after the work (and its import never falls between
    # one encode and the next)
    import tokensmith.tokenizer as tmod

    tok = ts.train(texts=corpus, vocab_size=300)
    calls: list[str] = []

    class Spy:
        def __init__(self, core) -> None:  # type: ignore[no-untyped-def]
            self.core = core

        def __getattr__(self, name):  # type: ignore[no-untyped-def]
            calls.append(name)
            return getattr(self.core, name)

    monkeypatch.setattr(tok, "_core", Spy(tok._core))
    monkeypatch.setattr(tmod, "_NUMPY", ())
    monkeypatch.setitem(sys.modules, "numpy", None)
    with pytest.raises(ts.ConfigError, match="needs numpy"):
        tok.encode_to_numpy("some text to encode")
    with pytest.raises(ts.ConfigError, match="needs numpy"):
        tok.encode_batch_to_numpy(["some", "texts"])
    assert calls == []
    # the list path needs no numpy, and goes through the same encoder
    want = tok._core.core.encode("some text", "none", None, True)
    assert tok.encode("some text", disallowed_special=()) == want
    # (that call went to the core's fast path, which holds the core itself;
    # the Python method, for the calls the fast path leaves to it, too)
    assert tok._encode_py("some text", disallowed_special=()) == want
    assert calls == ["encode"]


def test_numpy_paths_match_lists_on_every_kind_of_input(corpus) -> None:
    """encode_to_numpy / encode_batch_to_numpy give encode's ids, errors and
    clean-ups: a big document, an empty one, lone surrogates, special tokens."""
    np = pytest.importorskip("numpy")
    tok = ts.train(texts=corpus, vocab_size=500, special_tokens=["<|endoftext|>"])
    big = "".join(make_text(i, 80) for i in range(300))
    docs = [big, "", "a\ud800b", "x <|endoftext|> y", "héllo 中文"]
    for d in docs:
        assert tok.encode_to_numpy(d, allowed_special="all").tolist() == tok.encode(
            d, allowed_special="all"
        )
    ids, offsets = tok.encode_batch_to_numpy(docs, allowed_special="all", num_threads=2)
    want = tok.encode_batch(docs, allowed_special="all")
    assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:], strict=True)] == want
    assert isinstance(ids, np.ndarray) and ids.flags["C_CONTIGUOUS"]
    with pytest.raises(ts.DisallowedSpecialTokenError):
        tok.encode_to_numpy("x <|endoftext|> y")
    with pytest.raises(ts.DisallowedSpecialTokenError):
        tok.encode_batch_to_numpy(["fine", "x <|endoftext|> y"])


def test_numpy_ids_of_one_text_are_a_read_only_view_that_outlives_its_tokenizer(corpus) -> None:
    """encode_to_numpy hands numpy the encoder's own id vector (no copy) where
    it can: the array is read-only through numpy and through the buffer
    protocol, stays valid after the tokenizer and every other reference are
    gone, and reads the same ids as encode."""
    np = pytest.importorskip("numpy")
    import gc

    tok = ts.train(texts=corpus, vocab_size=500)
    text = "".join(make_text(i, 200) for i in range(400))
    want = tok.encode(text)
    arrays = [tok.encode_to_numpy(text) for _ in range(3)]
    del tok
    gc.collect()
    for a in arrays:
        assert a.dtype == np.uint32 and a.tolist() == want
        assert not a.flags.writeable
        with pytest.raises(ValueError):
            a[0] = 1
        view = memoryview(a.base if a.base is not None else a)
        assert view.readonly and view.nbytes == 4 * len(want)
        if view.format in ("I", "<I"):
            assert view.tolist() == want
        with pytest.raises(TypeError):
            view.cast("B")[0] = 1
    # a copy is writable and independent; the views are untouched
    c = arrays[0].copy()
    c[0] = c[0] + 1
    assert arrays[1].tolist() == want
    del arrays
    gc.collect()


def test_big_numpy_batches_keep_every_document_in_order(corpus) -> None:
    """A batch's ids are gathered into one array (on two threads from both
    ends, see `parallel::map_flat`): every document's ids land where its
    offsets say, empty documents included, with any number of threads, and
    when the room guessed for them was short: a fresh tokenizer guesses an
    id per three characters, fewer than this small vocabulary makes, and
    learns the rate from that batch for the next."""
    np = pytest.importorskip("numpy")
    tok = ts.train(texts=corpus, vocab_size=300)
    rng = random.Random(11)
    docs = []
    for i in range(700):
        # (ASCII: strings of one byte a character, guessed at an id per three)
        text = make_text(i, rng.randrange(60, 400)).encode("ascii", "ignore").decode()
        docs.append("" if i % 97 == 0 else text)
    want = [tok.encode(d) for d in docs]
    assert sum(map(len, want)) * 3 > sum(map(len, docs)) * 1.2  # past the first guess
    assert sum(map(len, want)) * 4 > 1 << 20
    for threads in (2, 2, 1, 3, 8):
        ids, offsets = tok.encode_batch_to_numpy(docs, num_threads=threads)
        assert ids.dtype == np.uint32 and len(offsets) == len(docs) + 1
        assert not ids.flags.writeable
        assert [ids[offsets[i] : offsets[i + 1]].tolist() for i in range(len(docs))] == want
    # one big document and a few small ones: runs of very different sizes
    big = "".join(make_text(i, 120) for i in range(1500))
    mixed = ["ab", big, "", "cd ef"]
    ids, offsets = tok.encode_batch_to_numpy(mixed, num_threads=2)
    assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:], strict=True)] == [
        tok.encode(d) for d in mixed
    ]


def _child(args: tuple[str, list[str]]) -> list[list[int]]:
    spec, docs = args
    return ts.Tokenizer.from_str(spec).encode_batch(docs, num_threads=2)


def test_fork_after_parallel_work(corpus) -> None:
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("this platform cannot fork")
    tok = ts.train(texts=corpus, vocab_size=500)
    docs = [make_text(i, 50) for i in range(50)]
    want = tok.encode_batch(docs, num_threads=2)  # the parent's pool now exists
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        results = pool.map_async(_child, [(tok.to_str(), docs)] * 2).get(timeout=60)
    assert results == [want, want]


_FORK_CHILD = """
import os, sys, tokensmith as ts
tok = ts.Tokenizer.from_str(sys.stdin.read())
docs = ["doc %d: some words and 中文字符的句子很长 %d" % (i, i) for i in range(300)]
want = tok.encode_batch(docs, num_threads=1)
tok.decode_batch(want)
tasks = len(os.listdir("/proc/self/task"))
pid = os.fork()
if pid == 0:
    # a fresh tokenizer: its first long Chinese piece builds what the
    # encoder needs, in parallel, in the child
    fresh = ts.Tokenizer.from_str(tok.to_str())
    ok = fresh.encode_batch(docs, num_threads=1) == want and fresh.decode_batch(want)
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
print(tasks, os.waitstatus_to_exitcode(status))
"""


def test_one_thread_means_one_pool_thread_and_fork_is_safe() -> None:
    """``num_threads=1`` runs on one tokensmith thread (rayon's global pool,
    which a forked child cannot use, never starts), and a forked child can
    encode, decode and build the backtracking encoder (tiktoken ranks)."""
    forks = "fork" in multiprocessing.get_all_start_methods()
    if not forks or not os.path.isdir("/proc/self/task"):
        pytest.skip("needs fork and /proc")
    tok = ts.load(asset("cl100k_base", "cl100k_base.tiktoken"))
    env = dict(os.environ, TOKENSMITH_NUM_THREADS="2", RAYON_NUM_THREADS="2")
    out = subprocess.run([sys.executable, "-c", _FORK_CHILD], input=tok.to_str(), text=True,
                         capture_output=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    tasks, child = map(int, out.stdout.split())
    assert child == 0
    # the main thread, one pool thread for num_threads=1, two for the default
    # pool (the encoder's build) and nothing from rayon's global pool
    assert tasks <= 4, tasks


_FIRST_USE_IN_BATCH = """
import sys, tokensmith as ts
spec = sys.stdin.read()
docs = ["第%d段：这是一个很长的中文句子，用来测试批量编码。" % i for i in range(3000)]
want = [ts.Tokenizer.from_str(spec).encode(d) for d in docs[:1]]
for n in (3, 4):
    fresh = ts.Tokenizer.from_str(spec)  # its first long Chinese piece is inside the batch
    got = fresh.encode_batch(docs, num_threads=n)
    assert got[:1] == want and got == [fresh.encode(d) for d in docs]
print("ok")
"""


def test_first_long_chinese_piece_inside_a_batch() -> None:
    """The backtracking encoder is built on first use, which can be inside
    a batch on a pool whose waiting workers steal other documents: it must
    not wait on itself."""
    tok = ts.load(asset("cl100k_base", "cl100k_base.tiktoken"))
    out = subprocess.run([sys.executable, "-c", _FIRST_USE_IN_BATCH], input=tok.to_str(),
                         text=True, capture_output=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_ten_thousand_added_tokens(corpus) -> None:
    tok = ts.train(texts=corpus, vocab_size=500)
    data = json.loads(tok.to_str())
    base = tok.vocab_size
    words = [f"<tool_{i}>" for i in range(10_000)]
    data["added_tokens"] += [
        {"id": base + i, "content": w, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": False}
        for i, w in enumerate(words)
    ]
    big = ts.Tokenizer.from_str(json.dumps(data))
    text = "call <tool_9999> then <tool_0> and <tool_12>x <tool_> end"
    ids = big.encode(text)
    assert base + 9999 in ids and base + 0 in ids and base + 12 in ids
    assert big.decode(ids) == text
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer.from_str(json.dumps(data))
    assert ids == hf.encode(text).ids


def test_long_runs_are_exact_and_round_trip(corpus) -> None:
    tok = ts.train(texts=corpus, vocab_size=500)
    for run in ("a" * 1_000_000, " " * 1_000_000, "中" * 300_000, "ab" * 300_000):
        ids = tok.encode(run)
        assert tok.decode(ids) == run
        assert ids == tok.encode_full(run).ids


def test_batches_read_in_chunks_keep_order_and_errors(corpus) -> None:
    """Big batches are read (converted to UTF-8) chunk by chunk while earlier
    chunks are encoded: ids in order, and bad texts anywhere in the batch
    give the same errors and clean-ups as alone."""
    tok = ts.train(texts=corpus, vocab_size=500, pattern="gpt4", special_tokens=["<|endoftext|>"])
    rng = random.Random(3)
    docs = [make_text(i, rng.randrange(1, 60)) + ("é中" if i % 3 else "") for i in range(203)]
    want = [tok.encode(d) for d in docs]
    for threads in (1, 2, 3):
        assert tok.encode_batch(docs, num_threads=threads) == want
        flat, offsets = tok.encode_batch_to_numpy(docs, num_threads=threads)
        assert [flat[offsets[i] : offsets[i + 1]].tolist() for i in range(len(docs))] == want
    # a lone surrogate in a late chunk: cleaned as `encode` cleans it
    bad = docs[:150] + ["a\ud800b"] + docs[150:]
    assert tok.encode_batch(bad) == want[:150] + [tok.encode("a\ud800b")] + want[150:]
    # a special token where it is not allowed, late in the batch
    with pytest.raises(ts.DisallowedSpecialTokenError):
        tok.encode_batch(docs[:180] + ["x <|endoftext|>"] + docs[180:])
    late = tok.encode_batch(docs[:180] + ["x <|endoftext|>"], allowed_special="all")[-1]
    assert late == tok.encode("x <|endoftext|>", allowed_special="all")
    # not a string, late in the batch
    with pytest.raises(TypeError):
        tok.encode_batch(docs[:170] + [17])  # type: ignore[list-item]
