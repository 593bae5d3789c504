"""Counting on Ray: ``ts.count(files, backend="ray")``.

The corpus is cut into parts: each file, and each large plain-text file into byte
ranges that begin and end at a safe cut (a place where the pipeline's pre-tokenizer
never joins text across, as the single-process reader cuts its blocks), so the parts'
counts add up to the counts of the whole. Every part is a Ray task that counts with
the Rust counter and returns the counts as the bytes of a ``.counts`` file; the
results are merged pairwise, in a tree of Ray tasks, into one. A Ray Dataset is
counted block by block with ``map_batches``, then merged the same way.

Ray runs where the user runs it: an existing cluster (``ray.init`` already called, or
``RAY_ADDRESS``, or ``ray_address=``), else a local one started here.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .errors import ClusterError, ConfigError

__all__ = ["count_with_ray", "PART_BYTES"]

#: Large plain-text files are cut into parts of about this many bytes.
PART_BYTES = 64 << 20


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "backend='ray' needs Ray: pip install 'tokensmith[ray]'") from None
    return ray


def _connect(ray: Any, address: str | None) -> None:
    """Join the cluster at ``address`` (or ``RAY_ADDRESS``), or start a local one."""
    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS")
    if address and address != "auto" and not address.startswith("local"):
        host, _, port = address.removeprefix("ray://").rpartition(":")
        try:
            socket.create_connection((host or "127.0.0.1", int(port)), timeout=5).close()
        except (OSError, ValueError) as e:
            raise ClusterError(f"cannot reach the Ray cluster at {address!r}: {e}") from None
    try:
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise ClusterError(f"cannot start or join a Ray cluster ({address or 'local'}): "
                           f"{e}") from None


def _dump(counter: Any, components: dict[str, Any]) -> bytes:
    from ._word_counts import WordCounts

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "part.counts"
        WordCounts(counter, components, None).save(path)
        return path.read_bytes()


def _load(data: bytes) -> Any:
    from ._word_counts import WordCounts

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "part.counts"
        path.write_bytes(data)
        return WordCounts.load(path)._counter


def _count_part(components: dict[str, Any], part: tuple[str, int, int], errors: str,
                text_field: str) -> bytes:
    """The counts of one part: a whole file (``end`` < 0) or a byte range of one."""
    from . import _core
    from .corpus import expand, feed_files

    path, start, end = part
    counter = _core.WordCounter(json.dumps(components))
    if end < 0:  # (a whole file, local or behind a URI)
        feed_files(counter, expand([path]), errors, text_field)
    else:
        counter.feed_file_range(path, start, end, errors)
    return _dump(counter, components)


def _merge_two(components: dict[str, Any], a: bytes, b: bytes) -> bytes:
    counter = _load(a)
    counter.absorb(_load(b))
    return _dump(counter, components)


def _parts(components: dict[str, Any], paths: list[Path], part_bytes: int) -> list[tuple]:
    """Whole files, and large plain-text files cut at safe places into ranges."""
    from . import _core
    from .corpus import _is_plain, file_size, plain_parts

    probe = _core.WordCounter(json.dumps(components))
    parts: list[tuple[str, int, int]] = []
    for p in paths:
        size = file_size(p)
        if not _is_plain(p) or size <= part_bytes:
            parts.append((str(p), 0, -1))
            continue
        parts += [(str(p), start, end) for start, end in plain_parts(probe, p, part_bytes)]
    return parts


def _tree_merge(ray: Any, components: dict[str, Any], refs: list[Any]) -> bytes:
    merge = ray.remote(_merge_two)
    while len(refs) > 1:
        pairs = [merge.remote(components, refs[i], refs[i + 1])
                 for i in range(0, len(refs) - 1, 2)]
        refs = pairs + ([refs[-1]] if len(refs) % 2 else [])
    result: bytes = ray.get(refs[0])
    return result


def count_with_ray(components: dict[str, Any], files: Any, texts: Iterable[Any] | None,
                   errors: str, text_field: str, *, address: str | None = None,
                   part_bytes: int = PART_BYTES) -> Any:
    """A ``_core.WordCounter`` with the counts of ``files`` (paths, folders, globs) and
    ``texts`` (a Ray Dataset, or any iterable, counted here), counted on Ray."""
    from . import _core
    from .corpus import expand, feed_texts

    ray = _ray()
    _connect(ray, address)
    refs: list[Any] = []
    if files is not None:
        count = ray.remote(_count_part)
        refs += [count.remote(components, part, errors, text_field)
                 for part in _parts(components, expand(files), part_bytes)]
    if texts is not None and _is_ray_dataset(texts):
        refs += [ray.put(b) for b in _count_dataset(texts, components, text_field)]
    elif texts is not None:
        counter = _core.WordCounter(json.dumps(components))
        feed_texts(counter, texts, text_field=text_field)
        refs.append(ray.put(_dump(counter, components)))
    if not refs:
        return _core.WordCounter(json.dumps(components))
    return _load(_tree_merge(ray, components, refs))


def _is_ray_dataset(texts: Any) -> bool:
    return type(texts).__module__.startswith("ray.data") and hasattr(texts, "map_batches")


def _count_dataset(ds: Any, components: dict[str, Any], text_field: str) -> list[bytes]:
    """Each block of a Ray Dataset counted where it lives; the counts come back."""
    names = ds.columns() if hasattr(ds, "columns") else None
    if names is not None and text_field not in names:
        raise ConfigError(f"the Ray Dataset has no column {text_field!r} (its columns: "
                          f"{', '.join(map(repr, names))}); name it with text_field=")

    def count_batch(batch: dict[str, Any]) -> dict[str, Any]:
        import numpy as np

        from . import _core
        from .corpus import feed_texts

        counter = _core.WordCounter(json.dumps(components))
        feed_texts(counter, (t for t in batch[text_field] if t is not None))
        return {"counts": np.array([_dump(counter, components)], dtype=object)}

    rows = ds.map_batches(count_batch, batch_format="numpy").take_all()
    return [row["counts"] for row in rows]
