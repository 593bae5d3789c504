"""Counting in bounded memory: ``ts.count(..., memory_limit=...)``.

The corpus is fed in parts (plain files in byte ranges cut where the counter may
cut, other sources a batch at a time); after each part the table of distinct pieces
is measured (``WordCounter.table_bytes``, an estimate of its heap use). When it
passes the limit, either the table is written to disk as a sorted run (a ``.counts``
file) and counting starts afresh, the runs added up at the end in one pass that
keeps the pieces seen at least ``min_count`` times (exact), or, with
``prune_below=``, the pieces seen fewer times than that so far are dropped
(approximate: a piece rare early and common later loses its early count).

The counting stage then needs the limit plus one part's worth of new pieces; the
result needs the memory of the pieces it keeps.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .errors import ConfigError

__all__ = ["count_bounded"]

_MAX_PART = 64 << 20


class _Table:
    """The current table, and the runs already written."""

    def __init__(self, components: dict[str, Any], limit: int, prune_below: int | None,
                 spill_dir: str | None) -> None:
        from . import _core

        self._new = lambda: _core.WordCounter(json.dumps(components))
        self.counter = self._new()
        self.limit = limit
        self.prune_below = prune_below
        self.folder = Path(tempfile.mkdtemp(prefix="tokensmith-runs-", dir=spill_dir))
        self.runs: list[str] = []
        self.bytes_before = 0  # text counted into tables already written
        self.pruned = 0

    def check(self) -> None:
        if self.counter.table_bytes <= self.limit:
            return
        if self.prune_below is not None:
            before = self.counter.distinct
            self.counter.retain(self.prune_below, None)
            self.pruned += before - self.counter.distinct
            return
        self._spill()

    def _spill(self) -> None:
        path = str(self.folder / f"run-{len(self.runs):05d}.counts")
        self.counter.save_counts(path, "{}")
        self.runs.append(path)
        self.bytes_before += self.counter.bytes_seen
        self.counter = self._new()

    def finish(self, min_count: int) -> Any:
        try:
            if not self.runs:
                if min_count > 1:
                    self.counter.retain(min_count, None)
                return self.counter
            if self.counter.distinct:
                self._spill()
            seen = self.bytes_before + self.counter.bytes_seen
            self.counter = self._new()  # (the last table is on disk: free it first)
            merged = self._new()
            merged.merge_runs(self.runs, min_count)
            merged.add_counts([], seen)
            return merged
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def _batches(texts: Iterable[str], size: int) -> Iterator[list[str]]:
    batch: list[str] = []
    n = 0
    for t in texts:
        batch.append(t)
        n += len(t)
        if n >= size:
            yield batch
            batch, n = [], 0
    if batch:
        yield batch


def count_bounded(components: dict[str, Any], files: Any, texts: Iterable[Any] | None,
                  errors: str, text_field: str, *, memory_limit: int, min_count: int = 1,
                  prune_below: int | None = None,
                  spill_dir: str | None = None) -> tuple[Any, int, int]:
    """A ``_core.WordCounter`` of the corpus, counted within ``memory_limit`` bytes,
    with the number of runs written and of pieces pruned."""
    from ._readers import record_texts
    from .corpus import _is_plain, expand, feed_texts, file_texts, plain_parts

    if isinstance(memory_limit, bool) or not isinstance(memory_limit, int) or memory_limit < 1:
        raise ConfigError(f"memory_limit must be a positive number of bytes, not {memory_limit!r}")
    if prune_below is not None and (isinstance(prune_below, bool)
                                    or not isinstance(prune_below, int) or prune_below < 2):
        raise ConfigError(f"prune_below must be an integer of at least 2, not {prune_below!r}")
    part = min(_MAX_PART, max(1 << 20, memory_limit // 16))
    table = _Table(components, memory_limit, prune_below, spill_dir)
    for p in expand(files) if files is not None else []:
        if _is_plain(p):
            for start, end in plain_parts(table.counter, p, part):
                table.counter.feed_file_range(str(p), start, end, errors)
                table.check()
        else:
            safe = lambda b: table.counter.safe_cut(b, len(b))  # noqa: E731 (the current table)
            for batch in _batches(file_texts(p, errors, text_field, safe), part):
                feed_texts(table.counter, batch)
                table.check()
    if texts is not None:
        for batch in _batches(record_texts(texts, text_field), part):
            feed_texts(table.counter, batch)
            table.check()
    return table.finish(min_count), len(table.runs), table.pruned
