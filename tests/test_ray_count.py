"""Counting on Ray gives the counts of counting in one process: files, parts of a
large file cut at safe places, and Ray Datasets, on a local Ray started here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import tokensmith as ts
from tokensmith.errors import ClusterError, ConfigError

from .conftest import make_text

ray = pytest.importorskip("ray", reason="the ray extra counts on a Ray cluster")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _corpus(tmp_path: Path) -> list[Path]:
    paths = []
    for i in range(3):
        p = tmp_path / f"shard-{i}.txt"
        p.write_text(make_text(i, 2000) + "\n\n  indented line\n", encoding="utf-8")
        paths.append(p)
    big = tmp_path / "big.txt"  # cut into parts of ~20 KB
    big.write_text("\n".join(make_text(10 + i, 300) for i in range(40)) + "\n \n\t\n",
                   encoding="utf-8")
    paths.append(big)
    return paths


@pytest.mark.parametrize(("model", "options"), [
    ("bpe", {}), ("bpe", {"pattern": "gpt2"}), ("wordpiece", {}), ("unigram", {}),
])
def test_ray_counts_equal_local_counts(local_ray: None, tmp_path: Path, model: str,
                                       options: dict[str, object]) -> None:
    paths = _corpus(tmp_path)
    local = ts.count(paths, model=model, **options)  # type: ignore[arg-type]
    remote = ts.count(paths, model=model, backend="ray", part_bytes=20_000,
                      **options)  # type: ignore[arg-type]
    assert remote.most_common(None) == local.most_common(None)
    assert (remote.total, remote.bytes_seen) == (local.total, local.bytes_seen)
    def train(counts: ts.WordCounts) -> dict[str, int]:
        return ts.train(counts=counts, model=model, vocab_size=400,  # type: ignore[call-overload, no-any-return]
                        **options).get_vocab()

    assert train(remote) == train(local)


def test_uris_on_ray(local_ray: None, tmp_path: Path) -> None:
    paths = _corpus(tmp_path)
    local = ts.count(paths, model="bpe")
    remote = ts.count([f"file://{p}" for p in paths], model="bpe", backend="ray")
    assert remote.most_common(None) == local.most_common(None)


def test_large_files_are_cut_into_parts(local_ray: None, tmp_path: Path) -> None:
    from tokensmith import _ray_count

    big = _corpus(tmp_path)[-1]
    components = ts.count(texts=["x"], model="bpe").components
    parts = _ray_count._parts(components, [big], 20_000)
    assert len(parts) > 3 and parts[0][1] == 0 and parts[-1][2] == big.stat().st_size
    assert all(a[2] == b[1] for a, b in zip(parts, parts[1:], strict=False))  # contiguous


def test_ray_dataset_input(local_ray: None) -> None:
    docs = [make_text(i, 200) for i in range(30)]
    ds = ray.data.from_items([{"body": d} for d in docs]).repartition(4)
    remote = ts.count(texts=ds, model="bpe", backend="ray", text_field="body")
    assert remote.most_common(None) == ts.count(texts=docs, model="bpe").most_common(None)
    with pytest.raises(ConfigError, match="no column 'text'"):
        ts.count(texts=ds, model="bpe", backend="ray")


def test_unreachable_cluster_is_a_typed_error(tmp_path: Path) -> None:
    if ray.is_initialized():
        ray.shutdown()
    p = tmp_path / "a.txt"
    p.write_text("some text\n")
    with pytest.raises(ClusterError, match="cannot reach the Ray cluster at '127.0.0.1:9'"):
        ts.count(p, model="bpe", backend="ray", ray_address="127.0.0.1:9")
    with pytest.raises(ConfigError, match="backend='spark'"):
        ts.count(p, model="bpe", backend="spark")  # type: ignore[arg-type]
