"""Word counts as a stage: counting in shards, merging in any order, saving, loading,
and training every model from counts exactly as from the text."""

from __future__ import annotations

import json
import random
import warnings
from pathlib import Path

import pytest
import tokensmith as ts
from tokensmith.errors import (
    ConfigError,
    EmptyCorpusError,
    TokenizerFormatError,
    UnknownOptionError,
    VocabShortfallWarning,
)

from .conftest import corpus_file, make_text

MODELS = {
    "bpe": {"vocab_size": 600},
    "wordpiece": {"vocab_size": 400},
    "unigram": {"vocab_size": 300},
    "sentencepiece-bpe": {"vocab_size": 300},
    "wordlevel": {"vocab_size": 200, "split": "spaces"},
}


@pytest.fixture(scope="module")
def documents() -> list[str]:
    text = corpus_file("en.txt").read_text(encoding="utf-8")[:300_000]
    docs = [d for d in text.split("\n\n") if d.strip()]
    return docs + [make_text(i, 200) for i in range(20)]


def _train(**kw):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VocabShortfallWarning)
        return ts.train(**kw)


@pytest.mark.parametrize("model", list(MODELS))
def test_shards_merged_in_any_order_train_what_the_whole_corpus_trains(
        documents: list[str], model: str) -> None:
    options = MODELS[model]
    counting = {k: v for k, v in options.items() if k != "vocab_size"}
    whole = ts.count(texts=documents, model=model, **counting)  # type: ignore[arg-type]
    rng = random.Random(5)
    shards = [documents[i::4] for i in range(4)]
    parts = [ts.count(texts=s, model=model, **counting) for s in shards]  # type: ignore[arg-type]
    forward = parts[0] + parts[1] + parts[2] + parts[3]
    shuffled = parts[:]
    rng.shuffle(shuffled)
    backward = ts.WordCounts.merge(shuffled)
    want = whole.most_common(None)
    assert forward.most_common(None) == want == backward.most_common(None)
    assert forward.total == whole.total and len(backward) == len(whole)
    from_text = _train(texts=documents, model=model, **options)
    from_counts = _train(counts=backward, model=model, **options)
    assert from_counts.to_str() == from_text.to_str()


def test_files_count_as_their_text(tmp_path, documents: list[str]) -> None:  # type: ignore[no-untyped-def]
    text = "\n\n".join(documents)
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    assert (ts.count([path]).most_common(None)
            == ts.count(texts=[text]).most_common(None))
    assert ts.count([path]).bytes_seen == len(text.encode())


def test_save_and_load(tmp_path, documents: list[str]) -> None:  # type: ignore[no-untyped-def]
    counts = ts.count(texts=documents, model="unigram", add_dummy_prefix=False)
    path = counts.save(tmp_path / "en.counts")
    back = ts.WordCounts.load(path)
    assert back.most_common(None) == counts.most_common(None)
    assert back.components == counts.components and back.model == "unigram"
    assert back.bytes_seen == counts.bytes_seen
    assert repr(back).startswith("<WordCounts ")
    # loaded counts train as the original ones
    a = _train(counts=back, model="unigram", vocab_size=300, add_dummy_prefix=False)
    b = _train(counts=counts, model="unigram", vocab_size=300, add_dummy_prefix=False)
    assert a.to_str() == b.to_str()
    # the file is deterministic: the same counts give the same bytes
    assert (back.save(tmp_path / "again.counts").read_bytes() == path.read_bytes())


def test_damaged_files_are_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = ts.count(texts=["a b c a"]).save(tmp_path / "x.counts")
    data = path.read_bytes()
    for cut in (0, 6, 14, len(data) // 2, len(data) - 1):
        (tmp_path / "cut.counts").write_bytes(data[:cut])
        with pytest.raises(TokenizerFormatError):
            ts.WordCounts.load(tmp_path / "cut.counts")
    (tmp_path / "more.counts").write_bytes(data + b"\0")
    with pytest.raises(TokenizerFormatError, match="follow the last entry"):
        ts.WordCounts.load(tmp_path / "more.counts")
    (tmp_path / "v2.counts").write_bytes(data[:8] + b"\x02\0\0\0" + data[12:])
    with pytest.raises(TokenizerFormatError, match="version 2"):
        ts.WordCounts.load(tmp_path / "v2.counts")
    # a huge entry count in a small file: refused before anything is reserved
    n = 16 + int.from_bytes(data[12:16], "little")  # the end of the header
    (tmp_path / "huge.counts").write_bytes(data[:n] + (2**60).to_bytes(8, "little")
                                           + data[n + 8:])
    with pytest.raises(TokenizerFormatError, match="more than its size"):
        ts.WordCounts.load(tmp_path / "huge.counts")
    header = json.dumps({"format": "something else"}).encode()
    (tmp_path / "other.counts").write_bytes(
        b"TSCOUNTS\x01\0\0\0" + len(header).to_bytes(4, "little") + header + bytes(8))
    with pytest.raises(TokenizerFormatError, match="does not describe"):
        ts.WordCounts.load(tmp_path / "other.counts")
    with pytest.raises(FileNotFoundError):
        ts.WordCounts.load(tmp_path / "missing.counts")


def test_filter_and_inspection() -> None:
    counts = ts.count(texts=["a a a b b c"] * 2, model="wordlevel", split="spaces")
    assert len(counts) == 3 and counts.total == 12
    assert counts.most_common(2) == [("a", 6), ("b", 4)]
    assert counts.filter(min_count=5).most_common(None) == [("a", 6)]
    assert counts.filter(top=2).most_common(None) == [("a", 6), ("b", 4)]
    assert len(counts) == 3  # filtering makes a copy
    with pytest.raises(ConfigError):
        counts.filter(min_count=-1)


def test_mismatched_pipelines_and_bad_calls_are_refused() -> None:
    bpe = ts.count(texts=["hello world"], model="bpe")
    lower = ts.count(texts=["hello world"], model="bpe", lowercase=True)
    with pytest.raises(ConfigError, match="another pipeline"):
        bpe + lower
    with pytest.raises(ConfigError, match="this training counts with"):
        ts.train(counts=bpe, model="wordpiece", vocab_size=100)
    with pytest.raises(ConfigError, match="not both"):
        ts.train(texts=["x"], counts=bpe, vocab_size=300)
    with pytest.raises(ConfigError, match="WordCounts"):
        ts.train(counts={"hello": 1}, vocab_size=300)  # type: ignore[arg-type]
    with pytest.raises(UnknownOptionError, match="min_frequency"):
        ts.count(texts=["x"], model="bpe", min_freq=2)
    with pytest.raises(EmptyCorpusError):
        ts.train(counts=bpe.filter(min_count=10), vocab_size=300)


def test_cli_counts_shards_and_trains_from_them(tmp_path, capsys, documents) -> None:  # type: ignore[no-untyped-def]
    from tokensmith import cli

    for i in range(2):
        (tmp_path / f"shard{i}.txt").write_text("\n\n".join(documents[i::2]), encoding="utf-8")
    for i in range(2):
        code = cli.main(["train", str(tmp_path / f"shard{i}.txt"), "--model", "wordpiece",
                         "--count-only", "--vocab-size", "500", "-o",
                         str(tmp_path / f"shard{i}.counts")])
        assert code == 0
    assert "distinct pieces" in capsys.readouterr().out
    code = cli.main(["train", "--counts", str(tmp_path / "shard0.counts"),
                     str(tmp_path / "shard1.counts"), "--model", "wordpiece",
                     "--vocab-size", "500", "-o", str(tmp_path / "from-counts.json"), "-q"])
    assert code == 0
    code = cli.main(["train", str(tmp_path / "shard0.txt"), str(tmp_path / "shard1.txt"),
                     "--model", "wordpiece", "--vocab-size", "500", "-o",
                     str(tmp_path / "from-text.json"), "-q"])
    assert code == 0
    assert ((tmp_path / "from-counts.json").read_text()
            == (tmp_path / "from-text.json").read_text())
    # counts of another pipeline are refused with the reason
    code = cli.main(["train", "--counts", str(tmp_path / "shard0.counts"), "--vocab-size",
                     "500", "-o", str(tmp_path / "bpe.json")])
    assert code != 0
    assert "this training counts with" in capsys.readouterr().err
    assert cli.main(["train", "--vocab-size", "500", "-o", str(tmp_path / "none.json")]) != 0


def _write_corpus(tmp_path: Path) -> Path:
    p = tmp_path / "corpus.txt"
    p.write_text("\n".join(make_text(seed, 40) for seed in range(100)), encoding="utf-8")
    return p


def test_long_runs_keep_their_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run over KEEP_COUNTS_BYTES (or with --keep-counts) saves its counts beside the
    output; training again from them gives the same tokenizer without the corpus."""
    from tokensmith import cli

    p = _write_corpus(tmp_path)
    monkeypatch.setattr(cli, "KEEP_COUNTS_BYTES", 1000)
    assert cli.main(["train", str(p), "--vocab-size", "300", "-q", "--out",
                     str(tmp_path / "a")]) == 0
    kept = tmp_path / "a" / "tokenizer.counts"
    assert kept.is_file()
    p.unlink()  # (the corpus is gone: the counts stand for it)
    assert cli.main(["train", "--counts", str(kept), "--vocab-size", "300", "-q", "--out",
                     str(tmp_path / "b")]) == 0
    assert (tmp_path / "a" / "tokenizer.json").read_bytes() == (
        tmp_path / "b" / "tokenizer.json").read_bytes()
    monkeypatch.setattr(cli, "KEEP_COUNTS_BYTES", 1 << 40)
    q = _write_corpus(tmp_path)
    assert cli.main(["train", str(q), "--vocab-size", "300", "-q", "--out",
                     str(tmp_path / "c.json")]) == 0
    assert not (tmp_path / "c.counts").exists()
    assert cli.main(["train", str(q), "--vocab-size", "300", "-q", "--keep-counts", "--out",
                     str(tmp_path / "d.json")]) == 0
    assert (tmp_path / "d.counts").is_file()


def test_progress_reads_in_parts_with_the_same_counts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With verbose, plain files are read in parts (cut where the counter may cut) so
    that a bar shows MB, MB/s and the ETA; the counts are those of one read."""
    import io

    from tokensmith import corpus

    p = _write_corpus(tmp_path)
    monkeypatch.setattr(corpus, "_PART", 2000)
    out = io.StringIO()
    whole = ts.count(p, model="bpe")
    counter = corpus.count_corpus(whole.components, [p], None, "strict", verbose=True, out=out)
    assert "reading [" in out.getvalue() and "MB/s" in out.getvalue()
    parts = ts.WordCounts(counter, whole.components, "bpe")
    assert parts.most_common(None) == whole.most_common(None)


def test_counting_like_a_tokenizer_or_a_pipeline(tmp_path: Path) -> None:
    p = _write_corpus(tmp_path)
    tok = ts.train(p, model="bpe", vocab_size=300, pattern="gpt2")
    like = ts.count(p, like=tok)
    assert like.model is None
    assert like.most_common(None) == ts.count(p, model="bpe", pattern="gpt2").most_common(None)
    bert = ts.count(texts=["H\u00e9llo, World! Hello"], like=asset_bert())
    assert dict(bert.most_common(None)) == {"hello": 2, ",": 1, "world": 1, "!": 1}
    own = ts.count(texts=["a b  c a"], pre_tokenizer={"type": "WhitespaceSplit"},
                   normalizer={"type": "Lowercase"})
    assert dict(own.most_common(None)) == {"a": 2, "b": 1, "c": 1}
    with pytest.raises(ConfigError, match="not both"):
        ts.count(p, like=tok, pre_tokenizer={"type": "Whitespace"})
    with pytest.raises(ConfigError, match="pattern would change it"):
        ts.count(p, like=tok, pattern="gpt4")
    with pytest.raises(ConfigError, match="components as dicts"):
        ts.count(p, pre_tokenizer="whitespace")  # type: ignore[arg-type]


def asset_bert() -> ts.Tokenizer:
    from .conftest import asset

    return ts.load(asset("bert-base-uncased", "vocab.txt"))
