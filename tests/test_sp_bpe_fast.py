"""SentencePiece BPE `.model` files (Llama-2, Mistral) through the fused fast path,
against ``sentencepiece`` itself: the shared corpora (large slices, single and batch),
adversarial strings, and the fused path (`encode`, ids only) against the staged one
(`encode_full`, which needs offsets); plus small models trained here without byte
fallback, where runs of unknown characters fuse into one ``<unk>``."""

from __future__ import annotations

import io
import random

import pytest
import tokensmith as ts

from .adversarial import strings
from .conftest import asset, corpus_file

spm = pytest.importorskip("sentencepiece", reason="sentencepiece is a test dependency")

MODELS = ["llama2", "mistral"]
SLICE = 600_000


def _load(name: str):  # type: ignore[no-untyped-def]
    path = asset(name, "tokenizer.model")
    return ts.load(str(path)), spm.SentencePieceProcessor(model_file=str(path))


def _own_strings() -> list[str]:
    """Edge cases of the cuts, the cache and byte fallback."""
    rng = random.Random(7)
    alphabet = "ab \u2581\n\t─中文é\u0301\U0001f600<>0123456789.,'-_"
    fuzz = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80))) for _ in range(300)]
    return [
        "\u2581",
        "\u2581\u2581a\u2581 b",
        " \u2581 x",
        "a\u0301\u0302\u0303\u0304 e\u0301",
        "\x00\x01\x02 \x7f\x1b[0m \u200b\u2028\u2029\u3000\u00a0",
        "\U0010ffff\U000e0001\uffff\ue000 \U0001f9d1\u200d\U0001f680",
        "─" * 200,
        "├" + "─" * 70 + "┤",
        " " * 70 + "word",
        " " * 31 + "x",
        " " * 32 + "x",
        "x" * 31,
        "supercalifragilisticexpialidocious" * 5,
        "9" * 100 + " 3.14159 1,000,000",
        "a\nb\r\n\r\nc\t\td",
        "中文，中文。數據獲取一個",
        "ＡＢＣ　全角",
        "<s></s><unk>",
        "end ",
        "  ",
        *fuzz,
    ]


def _texts() -> list[str]:
    return strings() + _own_strings()


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("corpus", ["en.txt", "code.txt", "zh.txt", "ja.txt"])
def test_corpus_slice_matches_sentencepiece(name: str, corpus: str) -> None:
    tok, sp = _load(name)
    text = corpus_file(corpus).read_text(encoding="utf-8")[:SLICE]
    assert tok.encode(text, add_special_tokens=False, disallowed_special=()) == sp.encode(text)


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("corpus", ["en.txt", "code.txt", "zh.txt"])
def test_batch_of_documents_matches_sentencepiece(name: str, corpus: str) -> None:
    tok, sp = _load(name)
    text = corpus_file(corpus).read_text(encoding="utf-8")
    rng = random.Random(3)
    docs, at = [], 0
    while at < len(text) and len(docs) < 400:
        n = rng.randint(1000, 4000)
        docs.append(text[at : at + n])
        at += n
    assert tok.encode_batch(docs, add_special_tokens=False, disallowed_special=()) == sp.encode(
        docs
    )


@pytest.mark.parametrize("name", MODELS)
def test_adversarial_strings_match_sentencepiece(name: str) -> None:
    tok, sp = _load(name)
    texts = _texts()
    for t in texts:
        assert tok.encode(t, add_special_tokens=False, disallowed_special=()) == sp.encode(t), repr(
            t[:80]
        )
    # the same texts again (now from the cache) and as one batch
    assert tok.encode_batch(texts, add_special_tokens=False, disallowed_special=()) == sp.encode(
        texts
    )


@pytest.mark.parametrize("name", MODELS)
def test_fused_path_equals_staged_path(name: str) -> None:
    tok, _ = _load(name)
    texts = _texts() + [corpus_file("code.txt").read_text(encoding="utf-8")[:50_000]]
    for t in texts:
        staged = tok.encode_full(t, add_special_tokens=False, disallowed_special=()).ids
        assert tok.encode(t, add_special_tokens=False, disallowed_special=()) == staged, repr(
            t[:80]
        )


def _train(byte_fallback: bool) -> bytes:
    text = corpus_file("en.txt").read_text(encoding="utf-8")[:200_000]
    lines = [line for line in text.splitlines() if line.strip()]
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=model,
        model_type="bpe",
        vocab_size=400,
        byte_fallback=byte_fallback,
        character_coverage=0.98,
        split_digits=True,
        remove_extra_whitespaces=False,
        minloglevel=2,
    )
    return model.getvalue()


@pytest.mark.parametrize("byte_fallback", [False, True])
def test_small_trained_models_match_sentencepiece(tmp_path, byte_fallback: bool) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "small.model"
    path.write_bytes(_train(byte_fallback))
    tok = ts.load(str(path))
    sp = spm.SentencePieceProcessor(model_file=str(path))
    texts = _texts() + [corpus_file("zh.txt").read_text(encoding="utf-8")[:30_000]]
    for t in texts:
        got = tok.encode(t, add_special_tokens=False, disallowed_special=())
        assert got == sp.encode(t), repr(t[:80])
        assert got == tok.encode_full(t, add_special_tokens=False, disallowed_special=()).ids, repr(
            t[:80]
        )
    assert tok.encode_batch(texts, add_special_tokens=False, disallowed_special=()) == sp.encode(
        texts
    )


def _run_edges() -> list[str]:
    """ASCII runs cut 64 bytes at a time, then a non-ASCII character: the
    run's last chunk continues past it; chunks queued more than the queue's
    depth in one run; the dummy prefix's chunk inside a run."""
    rng = random.Random(11)
    out = []
    for n in [1, 2, 7, 8, 9, 31, 32, 33, 63, 64, 65, 127, 128, 129]:
        word = "".join(rng.choice("abcdefghij") for _ in range(n))
        for tail in ["", "é", "中", "\u2581", " ", "é word", "中 x", "\U0001f600"]:
            out.append(word + tail)
            out.append(tail + word)
            out.append("a " * n + tail + "b" * n)
    out.append(". , ; : ! ? " * 40)  # one-character chunks, many per run
    out.append("x" * 5 + "\u2581" + "y" * 70)
    out.append("\u2581" * 100 + "z")
    return out


@pytest.mark.parametrize("name", MODELS)
def test_ascii_run_edges_match_sentencepiece(name: str) -> None:
    tok, sp = _load(name)
    texts = _run_edges()
    for t in texts:
        got = tok.encode(t, add_special_tokens=False, disallowed_special=())
        assert got == sp.encode(t), repr(t[:80])
        assert got == tok.encode_full(t, add_special_tokens=False, disallowed_special=()).ids, repr(
            t[:80]
        )


@pytest.mark.parametrize("name", MODELS)
def test_cache_eviction_keeps_ids_exact(name: str) -> None:
    """Far more distinct chunks than the cache holds (every set overfull, ways
    evicted and promoted), then the same text again from the warm cache."""
    tok, sp = _load(name)
    rng = random.Random(5)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = [
        "".join(rng.choice(letters) for _ in range(rng.randint(2, 12))) for _ in range(150_000)
    ]
    text = " ".join(words + rng.sample(words, 50_000))
    want = sp.encode(text)
    assert tok.encode(text, add_special_tokens=False, disallowed_special=()) == want
    assert tok.encode(text, add_special_tokens=False, disallowed_special=()) == want


def _line_edges() -> list[str]:
    """Lines of many lengths (up to past 1 KB), with byte fallback, CJK, tabs,
    ``\\r\\n`` and blank lines."""
    rng = random.Random(11)
    alphabet = "abc xyz\t─中é😀<>0.,'-_\r"
    lines = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(300)]
    lines += ["a" * n for n in (5, 6, 7, 8, 9, 1021, 1022, 1023, 1024, 1025)]
    lines += ["", "", "\r", " ", "  leading", "trailing  ", "中" * 341, "中" * 342]
    return lines


@pytest.mark.parametrize("name", MODELS)
def test_repeated_lines_come_back_exact(name: str) -> None:
    """Texts made of the same lines, encoded again and again from warm caches, in
    any order and next to new lines: the same ids as sentencepiece every time; a
    text that starts with a line met before still gets the dummy prefix there."""
    tok, sp = _load(name)
    rng = random.Random(3)
    lines = _line_edges()
    texts = ["\n".join(lines) + "\n", "\n".join(lines), "\n".join(reversed(lines))]
    for _ in range(3):  # walked, admitted, then found
        for t in texts:
            assert tok.encode(t, add_special_tokens=False, disallowed_special=()) == sp.encode(t)
    for _ in range(20):
        mixed = rng.sample(lines, 60) + [f"new line {rng.random()}" for _ in range(5)]
        rng.shuffle(mixed)
        t = "\n".join(mixed)
        assert tok.encode(t, add_special_tokens=False, disallowed_special=()) == sp.encode(t)
    # a text that starts with a cached line: its first line gets the dummy prefix
    assert lines[0] + "\n" in texts[0]
    t = "\n".join(lines[:5]) + "\n"
    assert tok.encode(t, add_special_tokens=False, disallowed_special=()) == sp.encode(t)
    docs = ["\n".join(rng.sample(lines, 8)) for _ in range(200)] * 3
    assert tok.encode_batch(docs, add_special_tokens=False, disallowed_special=()) == [
        sp.encode(d) for d in docs
    ]


@pytest.mark.parametrize("name", MODELS)
def test_many_distinct_lines_keep_ids_exact(name: str) -> None:
    """Seventy thousand distinct lines, three times: the caches fill and start over."""
    tok, sp = _load(name)
    rng = random.Random(9)
    lines = [f"line {i} {rng.random():.12f} {'x' * rng.randint(0, 30)}" for i in range(70_000)]
    text = "\n".join(lines) + "\n"
    want = sp.encode(text)
    for _ in range(3):
        assert tok.encode(text, add_special_tokens=False, disallowed_special=()) == want


def _block(rng: random.Random, lines: list[str], n: int, fresh: float) -> str:
    """``n`` lines drawn from ``lines``, each new instead with probability ``fresh``."""
    out = []
    for _ in range(n):
        if rng.random() < fresh:
            out.append(f"fresh {rng.random():.15f} {rng.choice(lines)[:20]}")
        else:
            out.append(rng.choice(lines))
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("name", MODELS)
def test_line_memo_turning_on_and_off_keeps_ids_exact(name: str) -> None:
    """Texts of hundreds of KB that repeat lines (so the line memo turns hot), then
    new text (so it turns cold), then old again, one after the other in one thread;
    lines changed by one character, a text that starts with a kept line (the dummy
    prefix), no final newline, ``\\r\\n``, lines past 4 KB and unknowns as bytes:
    the same ids as sentencepiece on every call."""
    tok, sp = _load(name)
    rng = random.Random(17)
    pool = _line_edges() + ["x" * 5000, "─" * 1500 + " 中", "\U0010ffff\U000e0001 rare",
                            "a\r", "\t\tb\r"]
    old = _block(rng, pool, 12_000, 0.0)
    texts = [old, old, old, old[:-1], old.replace("a", "b", 50)]
    texts += [_block(rng, pool, 12_000, 0.9), old, _block(rng, pool, 12_000, 0.5), old]
    texts += [old.replace("\n", "\r\n"), pool[3] + "\n" + old, _block(rng, pool, 4_000, 0.1)]
    for t in texts:
        assert tok.encode(t, add_special_tokens=False, disallowed_special=()) == sp.encode(t)
