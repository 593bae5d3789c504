"""Corpus readers: Zstandard and Parquet files, standard input, records and
Hugging Face ``datasets`` objects count exactly as the same text given as strings."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import tokensmith as ts
from tokensmith.errors import CorpusCompressionError, CorpusError

from .conftest import make_text

zstandard = pytest.importorskip("zstandard", reason="the zstd extra reads .zst corpora")
pa = pytest.importorskip("pyarrow", reason="the parquet extra reads .parquet corpora")
import pyarrow.parquet as pq  # noqa: E402

DOCS = [make_text(seed, 300) for seed in range(12)] + ["ünïcödé 中文 текст\n", "tail"]


def _same(counts: ts.WordCounts, whole: bool = False) -> None:
    """The counts of the documents one by one, or of the file they make (``whole``)."""
    want = ts.count(texts=["".join(DOCS)] if whole else DOCS, model="bpe")
    assert counts.most_common(None) == want.most_common(None)
    assert counts.total == want.total


def test_zstd_files_of_one_or_many_frames(tmp_path: Path) -> None:
    text = "".join(DOCS).encode()
    one = tmp_path / "one.txt.zst"
    one.write_bytes(zstandard.ZstdCompressor().compress(text))
    many = tmp_path / "many.txt.zst"  # (as `cat a.zst b.zst` makes, and pzstd writes)
    cut = len(text) // 3
    many.write_bytes(b"".join(zstandard.ZstdCompressor().compress(text[i:i + cut])
                              for i in range(0, len(text), cut)))
    _same(ts.count(one, model="bpe"), whole=True)
    _same(ts.count(many, model="bpe"), whole=True)


def test_zstd_jsonl_records(tmp_path: Path) -> None:
    lines = "".join(json.dumps({"body": d}) + "\n" for d in DOCS).encode()
    p = tmp_path / "docs.jsonl.zst"
    p.write_bytes(zstandard.ZstdCompressor().compress(lines))
    _same(ts.count(p, model="bpe", text_field="body"))


@pytest.mark.parametrize(("damage", "problem"), [
    (lambda z: z[: len(z) // 2], "truncated"),
    (lambda z: b"not zstd at all", "wrong-format"),
    (lambda z: z[:12] + bytes(b ^ 0xFF for b in z[12:60]) + z[60:], "corrupt"),
])
def test_damaged_zstd_files_raise(tmp_path: Path, damage: Callable[[bytes], bytes],
                                  problem: str) -> None:
    p = tmp_path / "bad.txt.zst"
    p.write_bytes(damage(zstandard.ZstdCompressor().compress("".join(DOCS).encode())))
    with pytest.raises(CorpusCompressionError) as e:
        ts.count(p, model="bpe")
    assert e.value.problem == problem and e.value.compression == "zstd" and str(p) in str(e.value)


def test_parquet_text_column(tmp_path: Path) -> None:
    p = tmp_path / "docs.parquet"
    table = pa.table({"id": list(range(len(DOCS) + 1)), "content": [*DOCS, None]})
    pq.write_table(table, p, row_group_size=3)  # (several row groups, a null cell)
    _same(ts.count(p, model="bpe", text_field="content"))
    tok = ts.train(p, model="bpe", vocab_size=300, text_field="content")
    assert tok.get_vocab() == ts.train(texts=DOCS, model="bpe", vocab_size=300).get_vocab()


def test_bad_parquet_input(tmp_path: Path) -> None:
    p = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"id": [1, 2], "body": ["a", "b"]}), p)
    with pytest.raises(CorpusError, match=r"no column 'text' \(its columns: 'id', 'body'\)"):
        ts.count(p, model="bpe")
    with pytest.raises(CorpusError, match="column 'id' holds int64, not text"):
        ts.count(p, model="bpe", text_field="id")
    fake = tmp_path / "fake.parquet"
    fake.write_text("just text\n")
    with pytest.raises(CorpusError, match="not a Parquet file"):
        ts.count(fake, model="bpe")


def test_records_and_mixed_iterables() -> None:
    records = [{"text": d, "id": i} for i, d in enumerate(DOCS)]
    _same(ts.count(texts=records, model="bpe"))
    _same(ts.count(texts=[{"body": d} if i % 2 else d for i, d in enumerate(DOCS)],
                   model="bpe", text_field="body"))
    with pytest.raises(CorpusError, match=r"texts\[1\]: the record has no string field 'text'"):
        ts.count(texts=[DOCS[0], {"body": "x"}], model="bpe")
    with pytest.raises(CorpusError, match="texts must be strings or records"):
        ts.count(texts=[DOCS[0], 42], model="bpe")


def test_datasets_objects_are_read_by_batches() -> None:
    datasets = pytest.importorskip("datasets", reason="Hugging Face datasets as input")
    ds = datasets.Dataset.from_dict({"content": DOCS, "n": list(range(len(DOCS)))})
    _same(ts.count(texts=ds, model="bpe", text_field="content"))
    _same(ts.count(texts=ds.to_iterable_dataset(), model="bpe", text_field="content"))
    with pytest.raises(CorpusError, match=r"the dataset has no column 'text' \(its columns"):
        ts.count(texts=ds, model="bpe")


def test_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    data = "".join(DOCS).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    _same(ts.count("-", model="bpe"), whole=True)


def test_uris_count_like_local_paths(tmp_path: Path) -> None:
    """Files and folders named by URI (read through pyarrow.fs; ``file://`` here,
    ``s3://``, ``gs://``, ``hdfs://`` the same way) count as the local files do."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.txt").write_text("".join(DOCS[:6]), encoding="utf-8")
    (folder / "b.txt.gz").write_bytes(__import__("gzip").compress("".join(DOCS[6:]).encode()))
    (folder / "c.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in DOCS),
                                    encoding="utf-8")
    pq.write_table(pa.table({"text": DOCS}), folder / "d.parquet")
    local = ts.count(folder, model="bpe")
    assert ts.count(f"file://{folder}", model="bpe").most_common(None) == local.most_common(None)
    one = ts.count(f"file://{folder / 'a.txt'}", model="bpe")
    assert one.most_common(None) == ts.count(folder / "a.txt", model="bpe").most_common(None)
    with pytest.raises(CorpusError, match="no such file or folder"):
        ts.count(f"file://{tmp_path / 'missing.txt'}", model="bpe")
    with pytest.raises(CorpusError, match="cannot reach it"):
        ts.count("nosuchscheme://bucket/x.txt", model="bpe")


def test_a_long_compressed_line_is_cut_where_the_counter_may_cut(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A compressed file whose text is one long line is read in bounded blocks (cut
    at safe places), and counts as the same text in a plain file does."""
    from tokensmith import corpus

    monkeypatch.setattr(corpus, "_BLOCK", 1 << 16)
    line = " ".join(DOCS).replace("\n", " ") * 8  # (about 250 KB, no line break)
    plain = tmp_path / "line.txt"
    plain.write_text(line, encoding="utf-8")
    packed = tmp_path / "line.txt.gz"
    packed.write_bytes(__import__("gzip").compress(line.encode()))
    sizes: list[int] = []
    real_decode = corpus._decode
    monkeypatch.setattr(corpus, "_decode", lambda data, *a: sizes.append(len(data))
                        or real_decode(data, *a))
    got = ts.count(packed, model="bpe")
    assert max(sizes) < 3 << 16 and len(sizes) > 2  # (blocks, not the whole line)
    assert got.most_common(None) == ts.count(plain, model="bpe").most_common(None)
