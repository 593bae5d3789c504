"""Corpus sources beyond plain and gzip/bz2/xz text: Zstandard files, Parquet files,
standard input, and iterables of records (dicts, Hugging Face ``datasets``).

Each reader yields text in pieces of bounded size, so that memory does not grow with
the corpus: Zstandard frames are decompressed a megabyte at a time, Parquet files a
batch of rows at a time, ``datasets`` objects a batch at a time without being
materialised. The optional packages (``zstandard``, ``pyarrow``) are imported when a
file needs them, with the extra that installs them named in the error.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from .errors import CorpusCompressionError, CorpusError

__all__ = ["zstd_chunks", "parquet_texts", "stdin_chunks", "record_texts", "ZSTD_MAGIC",
           "RemoteFile", "expand_uri"]

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_CHUNK = 1 << 20
_BATCH_ROWS = 8192


def _need(module: str, extra: str, what: str) -> Any:
    try:
        return __import__(module)
    except ImportError:
        raise CorpusError(
            f"{what} needs the {module} package: pip install 'tokensmith[{extra}]'"
        ) from None


def _zstd_error(path: Path, problem: str, detail: str) -> CorpusCompressionError:
    check = f"`zstd -t {path}` shows what is wrong"
    what = {
        "truncated": "the zstd file is truncated: it ends inside a frame (a download or copy "
                     f"cut short?). Fetch or copy it again; {check}",
        "wrong-format": "not a zstd file, although its name ends in .zst (it does not start "
                        "with the zstd signature). Rename it to what it holds or compress it "
                        "with zstd",
        "corrupt": f"the zstd data is corrupt ({detail}). Fetch or copy it again; {check}",
    }[problem]
    return CorpusCompressionError(f"{path}: {what}", str(path), "zstd", problem)


def zstd_chunks(path: Path) -> Iterator[bytes]:
    """The decompressed bytes of a ``.zst`` file (any number of frames), a chunk at a
    time; a file that ends inside a frame raises, as the other formats do."""
    zstandard = _need("zstandard", "zstd", f"{path}: reading Zstandard files")
    decompressor = zstandard.ZstdDecompressor()
    with open(path, "rb") as f:
        head = f.read(4)
        if head != ZSTD_MAGIC[: len(head)] or not head:
            raise _zstd_error(path, "truncated" if not head else "wrong-format", "")
        frame, started, pending = decompressor.decompressobj(), False, head
        # (compressed input a quarter megabyte at a time: what it expands to stays small)
        while pending or (pending := f.read(_CHUNK // 4)):
            try:
                out = frame.decompress(pending)
            except zstandard.ZstdError as e:
                raise _zstd_error(path, "corrupt", str(e)) from None
            started, pending = True, b""
            if out:
                yield out
            if frame.eof:  # (the frame ended: what follows is the next one)
                pending, frame, started = frame.unused_data, decompressor.decompressobj(), False
        if started and not frame.eof:
            raise _zstd_error(path, "truncated", "")


class RemoteFile:
    """A file named by a URI (``s3://``, ``gs://``, ``hdfs://``, ``file://`` …), read
    through ``pyarrow.fs``; it stands where a ``Path`` would (``name``, ``suffix``,
    ``str``), and ``chunks()`` gives its bytes, decompressed as its name says."""

    def __init__(self, uri: str, size: int) -> None:
        self.uri = uri
        self.size = size
        self.name = uri.rstrip("/").rpartition("/")[2]
        dot = self.name.rfind(".")
        self.suffix = self.name[dot:] if dot > 0 else ""

    def __str__(self) -> str:
        return self.uri

    def __repr__(self) -> str:
        return f"RemoteFile({self.uri!r})"

    def chunks(self) -> Iterator[bytes]:
        _need("pyarrow", "parquet", f"{self.uri}: reading files by URI")
        import pyarrow.fs as pafs

        filesystem, path = pafs.FileSystem.from_uri(self.uri)
        try:
            with filesystem.open_input_stream(path, compression="detect") as f:
                while chunk := f.read(_CHUNK):
                    yield chunk
        except OSError as e:
            raise CorpusError(f"{self.uri}: cannot read it ({e})") from None


def expand_uri(uri: str) -> list[RemoteFile]:
    """The file a URI names, or the files under the folder it names (sorted)."""
    _need("pyarrow", "parquet", f"{uri}: reading files by URI")
    import pyarrow.fs as pafs

    try:
        filesystem, path = pafs.FileSystem.from_uri(uri)
        info = filesystem.get_file_info(path)
        if info.type == pafs.FileType.File:
            return [RemoteFile(uri, info.size)]
        if info.type != pafs.FileType.Directory:
            raise CorpusError(f"{uri}: no such file or folder")
        found = filesystem.get_file_info(pafs.FileSelector(path, recursive=True))
    except (OSError, ValueError) as e:  # (pyarrow: ArrowInvalid is a ValueError)
        raise CorpusError(f"{uri}: cannot reach it ({e})") from None
    scheme = uri.split("://", 1)[0]
    files = sorted((f for f in found if f.type == pafs.FileType.File
                    and not any(part.startswith(".") for part in f.path.split("/"))),
                   key=lambda f: f.path)
    if not files:
        raise CorpusError(f"{uri}: the folder has no files")
    return [RemoteFile(f"{scheme}://{f.path}" if scheme != "file" else f"file://{f.path}",
                       f.size) for f in files]


def stdin_chunks() -> Iterator[bytes]:
    """Standard input, as bytes, a chunk at a time (``files="-"``)."""
    stream = sys.stdin.buffer
    while chunk := stream.read(_CHUNK):
        yield chunk


def parquet_texts(path: Path, field: str) -> Iterator[str]:
    """The strings of column ``field`` of a Parquet file, a batch of rows at a time;
    empty cells (nulls) are left out."""
    _need("pyarrow", "parquet", f"{path}: reading Parquet files")
    import pyarrow.parquet as pq

    try:
        if isinstance(path, RemoteFile):
            import pyarrow.fs as pafs

            filesystem, inner = pafs.FileSystem.from_uri(path.uri)
            pf = pq.ParquetFile(filesystem.open_input_file(inner))
        else:
            pf = pq.ParquetFile(path)
    except Exception as e:  # (pyarrow raises ArrowInvalid and OSError subclasses)
        raise CorpusError(f"{path}: not a Parquet file that can be read ({e})") from None
    names = pf.schema_arrow.names
    if field not in names:
        raise CorpusError(
            f"{path}: the Parquet file has no column {field!r} (its columns: "
            f"{', '.join(map(repr, names))}); name the text column with text_field=")
    kind = pf.schema_arrow.field(field).type
    if str(kind) not in ("string", "large_string", "string_view"):
        raise CorpusError(f"{path}: column {field!r} holds {kind}, not text")
    for batch in pf.iter_batches(batch_size=_BATCH_ROWS, columns=[field]):
        yield from (t for t in batch.column(0).to_pylist() if t is not None)


def record_texts(items: Iterable[Any], field: str) -> Iterator[str]:
    """Strings, or the ``field`` of records (dicts), from any iterable; a Hugging Face
    ``datasets`` object is read a batch of its column at a time, never materialised."""
    batches = _dataset_batches(items, field)
    if batches is not None:
        for batch in batches:
            yield from (t for t in batch if t is not None)
        return
    for n, item in enumerate(items):
        if isinstance(item, str):
            yield item
        elif isinstance(item, Mapping):
            text = item.get(field)
            if not isinstance(text, str):
                raise CorpusError(
                    f"texts[{n}]: the record has no string field {field!r} (its fields: "
                    f"{', '.join(map(repr, list(item)[:10]))}); name it with text_field=")
            yield text
        else:
            raise CorpusError(
                f"texts[{n}]: texts must be strings or records (dicts) with a {field!r} "
                f"field, got {type(item).__name__}")


def _dataset_batches(items: Any, field: str) -> Iterator[list[Any]] | None:
    """Batches of column ``field`` when ``items`` is a ``datasets`` (Iterable)Dataset."""
    module = type(items).__module__ or ""
    if not module.startswith("datasets") or not hasattr(items, "iter"):
        return None
    names = getattr(items, "column_names", None)
    if names is not None and field not in names:
        raise CorpusError(
            f"the dataset has no column {field!r} (its columns: "
            f"{', '.join(map(repr, names))}); name the text column with text_field=")
    return (batch[field] for batch in items.iter(batch_size=1000))
