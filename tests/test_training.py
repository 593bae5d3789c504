"""Training: options, determinism, files and their errors, the trace."""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import subprocess
import sys

import pytest
import tokensmith as ts
from tokensmith.errors import (
    ConfigError,
    CorpusEncodingError,
    CorpusError,
    EmptyCorpusError,
    InvalidPatternError,
    VocabSizeError,
)

from .conftest import make_text


def _merges(tok: ts.Tokenizer) -> list[tuple[str, str]]:
    return tok.merges


def test_files_and_texts_train_the_same(tmp_path, corpus_texts) -> None:
    # one document per paragraph; a file holds them separated by newlines
    docs = [t.replace("\n", " ") + "\n" for t in corpus_texts]
    path = tmp_path / "corpus.txt"
    path.write_text("".join(docs), encoding="utf-8")
    a = ts.train(path, vocab_size=500)
    b = ts.train(texts=["".join(docs)], vocab_size=500)
    assert _merges(a) == _merges(b)
    # globs, folders and lists name the same file
    assert _merges(ts.train(str(tmp_path / "*.txt"), vocab_size=500)) == _merges(a)
    assert _merges(ts.train(tmp_path, vocab_size=500)) == _merges(a)
    assert _merges(ts.train([path], vocab_size=500)) == _merges(a)


def test_compressed_and_jsonl_corpora(tmp_path, corpus_texts) -> None:
    text = "\n".join(t.replace("\n", " ") for t in corpus_texts) + "\n"
    plain = tmp_path / "c.txt"
    plain.write_text(text, encoding="utf-8")
    gz = tmp_path / "c.txt.gz"
    gz.write_bytes(gzip.compress(text.encode("utf-8")))
    jl = tmp_path / "c.jsonl"
    jl.write_text("".join(json.dumps({"text": line + "\n"}) + "\n"
                          for line in text.splitlines()), encoding="utf-8")
    want = _merges(ts.train(plain, vocab_size=450))
    assert _merges(ts.train(gz, vocab_size=450)) == want
    assert _merges(ts.train(jl, vocab_size=450)) == want


_DETERMINISM = """
import sys, tokensmith as ts
sys.path.insert(0, {root!r})
from tests.conftest import make_text
tok = ts.train(texts=[make_text(i, 300) for i in range(80)], vocab_size=700)
print(tok.to_str(pretty=False))
"""


def test_same_merges_whatever_the_thread_count() -> None:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    outs = []
    for threads in ("1", "2", "4"):
        env = dict(os.environ, RAYON_NUM_THREADS=threads)
        r = subprocess.run([sys.executable, "-c", _DETERMINISM.format(root=root)],
                           capture_output=True, text=True, env=env, check=True)
        outs.append(r.stdout)
    assert outs[0] == outs[1] == outs[2]
    assert len(json.loads(outs[0])["model"]["merges"]) == 700 - 256 - 1


def test_vocab_size_min_frequency_and_max_length(corpus_texts) -> None:
    tok = ts.train(texts=corpus_texts, vocab_size=700, special_tokens=["<s>", "</s>"])
    assert tok.vocab_size == 700
    assert tok.special_tokens == {"<s>": 698, "</s>": 699}
    capped = ts.train(texts=corpus_texts, vocab_size=700, max_token_length=3)
    assert max(len(capped.id_to_bytes(i) or b"") for i in range(capped.vocab_size - 1)) <= 3
    rare = ts.train(texts=corpus_texts, vocab_size=5000, min_frequency=50)
    counts = []
    ts.train(texts=corpus_texts, vocab_size=5000, min_frequency=50,
             callback=lambda kind, data: counts.append(data[4]) if kind == "merge" else None,
             trace=10_000)
    assert counts and min(counts) >= 50
    assert rare.vocab_size == 256 + len(counts) + 1
    # a tiny corpus runs out of pairs before the target: the vocabulary is smaller
    small = ts.train(texts=["abab"], vocab_size=1000, special_tokens=[])
    assert small.vocab_size == 256 + 2  # "ab", then "abab"


def test_char_level_bpe(corpus_texts) -> None:
    tok = ts.train(texts=corpus_texts, vocab_size=400, byte_level=False,
                   end_of_word_suffix="</w>", special_tokens=[])
    vocab = tok.get_vocab()
    assert "<unk>" in vocab and tok.special_tokens == {"<unk>": 399}
    assert "lower</w>" in vocab or "lowest</w>" in vocab
    ids = tok.encode("lower newest")
    assert tok.decode(ids) == "lower newest"
    # unseen characters become <unk>
    assert vocab["<unk>"] in tok.encode("a ✗ b")
    limited = ts.train(texts=corpus_texts, vocab_size=400, byte_level=False,
                       end_of_word_suffix="</w>", limit_alphabet=30)
    singles = [k for k in limited.get_vocab() if len(k.replace("</w>", "")) == 1]
    assert len({k.replace("</w>", "") for k in singles}) <= 30


def test_trace_and_progress(corpus_texts) -> None:
    out = io.StringIO()
    ts.train(texts=corpus_texts, vocab_size=400, verbose=True, trace=5, stream=out)
    lines = out.getvalue().splitlines()
    merges = [ln for ln in lines if ln.startswith("merge ")]
    assert len(merges) == 5
    assert re.fullmatch(r"merge 0: \(b'.+', b'.+'\) -> 256 .+ \(count \d+\)", merges[0])
    assert any(ln.startswith("merges [") and "eta" in ln for ln in lines)
    assert any("learned" in ln for ln in lines)
    line = ts.trainers.format_merge(0, b" ", b"t", 256, 50)
    assert line == "merge 0: (b' ', b't') -> 256 ' t' (count 50)"
    assert ts.trainers.format_merge(1, b"\xe5", b"\x88", 300, 2) == (
        "merge 1: (b'\\xe5', b'\\x88') -> 300 b'\\xe5\\x88' (count 2)")


def test_patterns(corpus_texts) -> None:
    gpt2 = ts.train(texts=corpus_texts, vocab_size=400, pattern="gpt2")
    data = json.loads(gpt2.to_str())
    assert data["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] == ts.patterns.GPT2
    custom = ts.train(texts=corpus_texts, vocab_size=400, pattern=r"\w+|\s+|[^\w\s]+")
    assert custom.decode(custom.encode("hello, world")) == "hello, world"
    with pytest.raises(InvalidPatternError) as e:
        ts.train(texts=corpus_texts, vocab_size=400, pattern="(unclosed")
    assert "regex" in str(e.value)


def test_bad_input(tmp_path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"good text\nmore good\n\xff\xfe broken \xc3\n")
    with pytest.raises(CorpusEncodingError) as e:
        ts.train(bad, vocab_size=300)
    assert e.value.offset == 20 and str(bad) in str(e.value)
    assert "errors='replace'" in str(e.value)
    replaced = ts.train(bad, vocab_size=300, errors="replace")
    assert "\ufffd" in replaced.decode(replaced.encode(" broken \ufffd"))
    skipped = ts.train(bad, vocab_size=300, errors="skip")
    assert skipped.vocab_size <= 300
    gz = tmp_path / "bad.txt.gz"
    gz.write_bytes(gzip.compress(b"ok\n\xff\n"))
    with pytest.raises(CorpusEncodingError) as e:
        ts.train(gz, vocab_size=300)
    assert e.value.offset == 3

    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(EmptyCorpusError):
        ts.train(empty, vocab_size=300)
    with pytest.raises(EmptyCorpusError):
        ts.train(texts=[], vocab_size=300)
    with pytest.raises(CorpusError):
        ts.train(tmp_path / "missing.txt", vocab_size=300)
    with pytest.raises(VocabSizeError):
        ts.train(texts=["abc"], vocab_size=256)
    with pytest.raises(VocabSizeError):
        ts.train(texts=["abc"], vocab_size=0)
    with pytest.raises(VocabSizeError):
        ts.train(texts=["abcdef ghij"], vocab_size=3, byte_level=False, special_tokens=[])
    with pytest.raises(ConfigError):
        ts.train(texts="a single string", vocab_size=300)
    with pytest.raises(ConfigError):
        ts.train(vocab_size=300)
    with pytest.raises(ConfigError):
        ts.train(texts=["x"], model="unigram")
    with pytest.raises(ConfigError):
        ts.train(texts=["x"], errors="ignore")  # type: ignore[arg-type]
    # all of these are ValueErrors too
    assert issubclass(CorpusEncodingError, ValueError)


def test_lone_surrogates_in_training_text() -> None:
    tok = ts.train(texts=["a\ud800b " * 20], vocab_size=300)
    assert tok.decode(tok.encode("a\ufffdb")) == "a\ufffdb"


def test_large_counts_and_long_words() -> None:
    # a word far longer than the cache limit, repeated: u64 counts, heap merge path
    long_word = "ab" * 5000
    tok = ts.train(texts=[long_word] * 3 + [make_text(1)], vocab_size=320)
    assert tok.decode(tok.encode(long_word)) == long_word
    assert len(tok.encode(long_word)) < 5000
