"""Counting within a memory limit: spilled runs add up to the counts of one table
(exact), ``min_count`` applied while merging equals filtering afterwards, and
``prune_below`` only ever drops or lowers counts (approximate)."""

from __future__ import annotations

import gzip
import io
import json
import sys
from pathlib import Path

import pytest
import tokensmith as ts
from tokensmith.errors import ConfigError

from .conftest import make_text


def _corpus(tmp_path: Path) -> list[Path]:
    plain = tmp_path / "a.txt"
    plain.write_text("\n".join(make_text(s, 300) for s in range(30)), encoding="utf-8")
    packed = tmp_path / "b.txt.gz"
    packed.write_bytes(gzip.compress("\n".join(make_text(s, 300) for s in range(30, 50)).encode()))
    records = tmp_path / "c.jsonl"
    records.write_text("".join(json.dumps({"text": make_text(s, 100)}) + "\n"
                               for s in range(50, 70)), encoding="utf-8")
    return [plain, packed, records]


@pytest.mark.parametrize("model", ["bpe", "wordpiece", "unigram", "sentencepiece-bpe"])
def test_spilled_runs_add_up_exactly(tmp_path: Path, model: str,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from tokensmith import _bounded_count

    monkeypatch.setattr(_bounded_count, "_MAX_PART", 20_000)  # (many parts, many runs)
    files = _corpus(tmp_path)
    texts = [make_text(s, 50) for s in range(70, 80)]
    whole = ts.count(files, texts=texts, model=model)  # type: ignore[arg-type]
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    spill = tmp_path / "spill"
    spill.mkdir()
    bounded = ts.count(files, texts=texts, model=model, memory_limit=40_000,  # type: ignore[arg-type]
                       spill_dir=str(spill), verbose=True)
    runs = int(err.getvalue().split("bytes: ")[1].split(" run")[0])
    assert runs >= 2
    assert bounded.most_common(None) == whole.most_common(None)
    assert (bounded.total, bounded.bytes_seen) == (whole.total, whole.bytes_seen)
    assert list(spill.iterdir()) == []  # (the runs are gone)
    common = ts.count(files, texts=texts, model=model, memory_limit=40_000, min_count=3)  # type: ignore[arg-type]
    assert common.most_common(None) == whole.filter(min_count=3).most_common(None)


def test_pruning_is_approximate_and_only_drops(tmp_path: Path) -> None:
    files = _corpus(tmp_path)
    whole = dict(ts.count(files, model="bpe").most_common(None))
    pruned = dict(ts.count(files, model="bpe", memory_limit=30_000, prune_below=2)
                  .most_common(None))
    assert 0 < len(pruned) < len(whole)
    assert all(n <= whole[p] for p, n in pruned.items())


def test_bad_memory_options(tmp_path: Path) -> None:
    files = _corpus(tmp_path)
    for options, message in [
        ({"memory_limit": 0}, "memory_limit must be a positive"),
        ({"memory_limit": 10_000, "prune_below": 1}, "prune_below must be an integer of"),
        ({"prune_below": 5}, "give both"),
        ({"memory_limit": 10_000, "input_sentence_size": 5}, "not with backend='ray' or"),
        ({"min_count": 0}, "min_count must be a positive integer"),
    ]:
        with pytest.raises(ConfigError, match=message):
            ts.count(files, model="bpe", **options)  # type: ignore[arg-type]


def test_command_line_memory_limit(tmp_path: Path) -> None:
    from tokensmith.cli import main

    plain = _corpus(tmp_path)[0]
    assert main(["train", str(plain), "--vocab-size", "300", "-q", "--memory-limit", "40K",
                 "--out", str(tmp_path / "bounded.json")]) == 0
    assert main(["train", str(plain), "--vocab-size", "300", "-q",
                 "--out", str(tmp_path / "whole.json")]) == 0
    assert (tmp_path / "bounded.json").read_bytes() == (tmp_path / "whole.json").read_bytes()
