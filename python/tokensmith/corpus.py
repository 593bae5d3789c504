"""Reading training corpora: plain text, compressed text, JSON lines, or strings.

Plain files are read and pre-tokenized by the Rust core in blocks cut just
after a newline, so memory stays bounded however large the file is.
"""

from __future__ import annotations

import bz2
import glob
import gzip
import json
import lzma
import os
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .errors import CorpusCompressionError, CorpusEncodingError, CorpusError

Files = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]

_BLOCK = 8 << 20
_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open, ".lzma": lzma.open}
# every suffix read through a decompressor (.zst by the `zstandard` package, _readers)
_COMPRESSED = (*_OPENERS, ".zst")
STDIN = "-"
# suffix -> (format name, its article, the tool that tests a file, the bytes every such file
# starts with); legacy .lzma files have no fixed signature
_FORMATS = {
    ".gz": ("gzip", "a", "gzip", b"\x1f\x8b"),
    ".bz2": ("bzip2", "a", "bzip2", b"BZh"),
    ".xz": ("xz", "an", "xz", b"\xfd7zXZ\x00"),
    ".lzma": ("lzma", "an", "xz", b""),
}
# what the decompressors raise for bad data: EOFError (truncated), gzip.BadGzipFile and
# bz2's OSError (not that format), zlib.error and lzma.LZMAError (corrupt or not that format)
_DECOMPRESS_ERRORS = (EOFError, OSError, zlib.error, lzma.LZMAError)


def expand(files: Files) -> list[Path]:
    """Paths and glob patterns to a sorted, de-duplicated list of files."""
    items = [files] if isinstance(files, (str, os.PathLike)) else list(files)
    out: list[Path] = []
    for item in items:
        s = os.fspath(item)
        if s == STDIN:
            out.append(Path(STDIN))
        elif "://" in s:
            from ._readers import expand_uri

            out.extend(expand_uri(s))  # type: ignore[arg-type]
        elif any(ch in s for ch in "*?["):
            matches = sorted(glob.glob(s, recursive=True))
            if not matches:
                raise CorpusError(f"{s}: the pattern matches no file")
            out.extend(Path(m) for m in matches if Path(m).is_file())
        elif Path(s).is_dir():
            found = _folder_files(Path(s))
            if not found:
                raise CorpusError(f"{s}: the folder has no text files")
            out.extend(found)
        elif Path(s).is_file():
            out.append(Path(s))
        else:
            raise CorpusError(
                f"{s}: no such file. To train on strings rather than files, pass texts=[...]"
            )
    return list(dict.fromkeys(out))  # (each once, in order)


def _folder_files(folder: Path) -> list[Path]:
    """The text files under ``folder``, sorted: hidden files and folders (``.git`` …) are
    left out, and so are binary files (a NUL byte in their first 8 KB), with a warning
    that names them; compressed corpora (``.gz`` …) are kept."""
    kept: list[Path] = []
    binary: list[Path] = []
    for p in sorted(folder.rglob("*")):
        if any(part.startswith(".") for part in p.relative_to(folder).parts) or not p.is_file():
            continue
        if p.suffix.lower() not in (*_COMPRESSED, ".parquet") and _looks_binary(p):
            binary.append(p)
        else:
            kept.append(p)
    if binary:
        import warnings

        shown = ", ".join(str(p.relative_to(folder)) for p in binary[:3])
        more = f" and {len(binary) - 3} more" if len(binary) > 3 else ""
        warnings.warn(f"{folder}: left out {len(binary)} binary file(s): {shown}{more}",
                      stacklevel=3)
    return kept


def _looks_binary(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return b"\x00" in f.read(8192)
    except OSError:
        return False  # (reading it later reports the problem)


def _decode(data: bytes, errors: str, path: Path, offset: int) -> str:
    try:
        return data.decode("utf-8", errors="strict" if errors == "strict" else
                           "replace" if errors == "replace" else "ignore")
    except UnicodeDecodeError as e:
        raise CorpusEncodingError(
            f"{path}: invalid UTF-8 at byte offset {offset + e.start} (of the decompressed text)",
            str(path),
            offset + e.start,
        ) from None


def _compression_error(path: Path, e: BaseException) -> CorpusCompressionError | None:
    """The error to raise for ``e``, raised while decompressing ``path``; None when ``e`` is
    not about the data (an I/O error such as EIO, which has an errno)."""
    if isinstance(e, OSError) and e.errno is not None:
        return None
    kind, a, tool, magic = _FORMATS[path.suffix.lower()]
    try:
        with open(path, "rb") as raw:
            head = raw.read(max(len(magic), 1))
    except OSError:
        head = magic
    check = f"`{tool} -t {path}` shows what is wrong"
    if not head:
        problem, what = "truncated", f"the file is empty (0 bytes), so it holds no {kind} data"
    elif magic and not head.startswith(magic) and not magic.startswith(head):
        problem, what = "wrong-format", (
            f"not {a} {kind} file, although its name ends in {path.suffix} (it does not start "
            f"with the {kind} signature). Rename it to what it holds (plain text needs no "
            f"compression suffix) or compress it with {tool}"
        )
    elif not magic and "format not supported" in str(e).lower():
        problem, what = "wrong-format", (
            f"not an lzma or xz file, although its name ends in {path.suffix}. Rename it to "
            f"what it holds (plain text needs no compression suffix) or compress it with xz"
        )
    elif isinstance(e, EOFError) or len(head) < len(magic):  # ends inside the signature
        problem, what = "truncated", (
            f"the {kind} file is truncated: it ends before its compressed data does (a "
            f"download or copy cut short?). Fetch or copy it again; {check}"
        )
    elif isinstance(e, gzip.BadGzipFile) and "not a gzipped file" in str(e).lower():
        problem, what = "corrupt", (  # a gzip stream, then bytes that do not start another
            f"the gzip data is followed by bytes that are not gzip data (a damaged end, or "
            f"something appended?). Fetch or copy it again; {check}"
        )
    else:
        problem, what = "corrupt", (
            f"the {kind} data is corrupt ({e}). Fetch or copy it again; {check}"
        )
    return CorpusCompressionError(f"{path}: {what}", str(path), kind, problem)


def _read_checked(f: Any, path: Path, size: int) -> bytes:
    try:
        return f.read(size)
    except _DECOMPRESS_ERRORS as e:
        error = _compression_error(path, e)
        if error is None:
            raise
        raise error from e


def _chunks(path: Path) -> Iterator[bytes]:
    """The decompressed bytes of ``path`` (or of standard input), a chunk at a time."""
    from ._readers import RemoteFile, stdin_chunks, zstd_chunks

    if str(path) == STDIN:
        yield from stdin_chunks()
        return
    if isinstance(path, RemoteFile):
        yield from path.chunks()
        return
    suffix = path.suffix.lower()
    if suffix == ".zst":
        yield from zstd_chunks(path)
        return
    opener: Any = _OPENERS.get(suffix, open)
    with opener(path, "rb") as f:
        while chunk := _read_checked(f, path, _BLOCK):
            yield chunk


def _blocks(path: Path, errors: str, cut: Any = None) -> Iterator[str]:
    """Decompressed text of ``path`` in blocks cut after a newline. With ``cut`` (a
    function that gives a safe place to cut bytes, ``WordCounter.safe_cut``), a line
    longer than a block is cut there too, so that no line is held whole."""
    offset = 0
    pending: list[bytes] = []  # chunks without a newline yet (joined once, not repeatedly)
    held = 0
    for chunk in _chunks(path):
        at = chunk.rfind(b"\n") + 1
        if at == 0:
            pending.append(chunk)
            held += len(chunk)
            if cut is not None and held >= _BLOCK:
                data = b"".join(pending)
                safe = cut(data)
                if safe:
                    yield _decode(data[:safe], errors, path, offset)
                    offset += safe
                    data = data[safe:]
                pending, held = [data], len(data)
            continue
        data = b"".join(pending) + chunk[:at]
        pending, held = [chunk[at:]], len(chunk) - at
        yield _decode(data, errors, path, offset)
        offset += len(data)
    rest = b"".join(pending)
    if rest:
        yield _decode(rest, errors, path, offset)


def _jsonl_texts(path: Path, field: str, errors: str) -> Iterator[str]:
    n = 0
    for block in _blocks(path, errors):
        for line in block.split("\n"):
            n += 1
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise CorpusError(f"{path}:{n}: not a JSON object: {e}") from None
            text = obj.get(field) if isinstance(obj, dict) else None
            if not isinstance(text, str):
                raise CorpusError(f"{path}:{n}: no string field {field!r}")
            yield text


def feed_files(counter: Any, paths: list[Path], errors: str, text_field: str = "text",
               bar: Any = None) -> int:
    """Count every file into ``counter`` (a ``_core.WordCounter``); returns bytes read.
    ``bar`` (a ``_progress.Progress`` over the files' sizes) follows the reading."""
    total = done = 0
    for p in paths:
        kind = _kind(p)
        if kind == "plain":
            total += (_feed_in_parts(counter, p, errors, bar, done) if bar is not None
                      else counter.feed_file(str(p), errors))
        elif kind == "text":
            for block in _blocks(p, errors, lambda b: counter.safe_cut(b, len(b))):
                counter.feed([block])
                total += len(block.encode("utf-8"))
        else:
            total += feed_texts(counter, file_texts(p, errors, text_field))
        if bar is not None:
            done += file_size(p)
            bar.update(done)
    return total


def _kind(p: Any) -> str:
    """How a corpus file is read: ``"jsonl"`` or ``"parquet"`` records (compressed or
    not), ``"plain"`` (a local uncompressed text file, read by the Rust reader) or
    ``"text"`` (compressed, behind a URI, or standard input)."""
    base = p.name.lower()
    for ext in _COMPRESSED:
        base = base.removesuffix(ext)
    if base.endswith(".jsonl"):
        return "jsonl"
    if base.endswith(".parquet"):
        return "parquet"
    local = str(p) != STDIN and "://" not in str(p)
    return "plain" if local and p.suffix.lower() not in _COMPRESSED else "text"


def file_texts(p: Any, errors: str, text_field: str, cut: Any = None) -> Iterator[str]:
    """The text of one corpus file of any kind: its records' ``text_field``, or its
    text in blocks (``cut``: see ``_blocks``)."""
    from ._readers import parquet_texts

    kind = _kind(p)
    if kind == "jsonl":
        yield from _jsonl_texts(p, text_field, errors)
    elif kind == "parquet":
        yield from parquet_texts(p, text_field)
    else:
        yield from _blocks(p, errors, cut)


def file_size(p: Any) -> int:
    """The size of a file on disk or behind a URI (0 for standard input)."""
    from ._readers import RemoteFile

    if isinstance(p, RemoteFile):
        return p.size
    return 0 if str(p) == STDIN else p.stat().st_size


def _is_plain(p: Any) -> bool:
    """A local uncompressed text file (which the Rust reader reads by itself)."""
    return _kind(p) == "plain"


_PART = 64 << 20


def plain_parts(counter: Any, path: Path, part: int) -> Iterator[tuple[int, int]]:
    """Byte ranges of a plain file, about ``part`` bytes each, that begin and end
    where ``counter`` may cut (``safe_cut``, with the bytes before the cut in view):
    counted apart, they give the counts of the whole file. Where no safe place is
    near, the range runs on to the end (the reader still holds bounded blocks)."""
    size = path.stat().st_size
    start = 0
    with open(path, "rb") as f:
        while start < size:
            end, nominal = size, start + part
            if nominal < size:
                back = min(64, nominal - start)
                f.seek(nominal - back)
                cut = counter.safe_cut(f.read(back + (1 << 20)), back)
                if cut is not None and nominal - back + cut > start:
                    end = nominal - back + cut
            yield start, end
            start = end


def _feed_in_parts(counter: Any, p: Path, errors: str, bar: Any, done: int) -> int:
    """Count a plain file in parts of about 64 MB (``plain_parts``), moving ``bar``
    after each; returns bytes read."""
    total = 0
    for start, end in plain_parts(counter, p, _PART):
        total += counter.feed_file_range(str(p), start, end, errors)
        bar.update(done + end)
    return total


def feed_texts(counter: Any, texts: Iterable[Any], batch_bytes: int = 4 << 20,
               text_field: str = "text") -> int:
    """Count an iterable of documents (strings, records with a ``text_field``, a
    ``datasets`` object) into ``counter`` in batches; returns bytes seen."""
    from ._readers import record_texts

    batch: list[str] = []
    size = total = 0
    for t in record_texts(texts, text_field):
        batch.append(t)
        size += len(t)
        if size >= batch_bytes or len(batch) >= 65536:
            _feed(counter, batch)
            total += size
            batch, size = [], 0
    if batch:
        _feed(counter, batch)
        total += size
    return total


def _feed(counter: Any, batch: list[str]) -> None:
    try:
        counter.feed(batch)
    except UnicodeEncodeError:
        # lone surrogates cannot be UTF-8: they become U+FFFD, as in encode()
        counter.feed(
            [t.encode("utf-16", "surrogatepass").decode("utf-16", "replace") for t in batch]
        )


def count_corpus(
    components: dict[str, Any],
    files: Files | None,
    texts: Iterable[str] | None,
    errors: str,
    *,
    verbose: bool = False,
    out: Any = None,
    what: str = "pieces",
    text_field: str = "text",
    counts: Any = None,
    sample: Any = None,
) -> Any:
    """A ``_core.WordCounter`` for the pipeline ``components`` (normalizer,
    pre-tokenizer, ``lines``) fed with ``files`` and ``texts``: what every trainer
    starts from. Raises for a missing or empty corpus; ``verbose`` reports the
    bytes read and the distinct ``what`` found to ``out``.

    ``counts`` (a :class:`tokensmith.counts.WordCounts`) stands for the corpus: its
    counter is used as it is, after checking that it was counted through the same
    ``components``. (``tokensmith.counts.count`` passes a probe here to learn a
    trainer's components without counting anything.)

    ``sample`` (a ``tokensmith._line_sample.LineSample``) counts a uniform random
    sample of the lines instead of all of them (``input_sentence_size=``,
    ``sample_bytes=``), reported with ``verbose``."""
    import sys
    import time

    from . import _core
    from .errors import ConfigError, EmptyCorpusError

    if counts is not None:
        from ._word_counts import use_counts

        return use_counts(counts, components, files, texts)
    out = out or sys.stderr
    if files is None and texts is None:
        raise ConfigError("give files (paths, folders or globs) or texts=[...] to train on")
    if isinstance(texts, str):
        raise ConfigError("texts must be an iterable of strings, not one string; "
                          "wrap it: texts=[text]")
    t0 = time.monotonic()
    counter = _core.WordCounter(json.dumps(components))
    n_bytes = 0
    if sample is not None:
        n_bytes += _count_sample(counter, sample, files, texts, errors, text_field, verbose, out)
    elif files is not None:
        paths = expand(files)
        bar = None
        if verbose:
            from ._progress import Progress

            print(f"counting words in {len(paths)} file(s) …", file=out)
            size = sum(file_size(p) for p in paths)
            bar = Progress(size, "reading", out, in_bytes=True) if size else None
        n_bytes += feed_files(counter, paths, errors, text_field, bar)
        if bar is not None:
            bar.close()
    if texts is not None and sample is None:
        n_bytes += feed_texts(counter, texts, text_field=text_field)
    if counter.distinct == 0:
        raise EmptyCorpusError("the corpus is empty: there is no text to train on")
    if verbose:
        print(f"{n_bytes:,} bytes, {counter.distinct:,} distinct {what} "
              f"({time.monotonic() - t0:.1f} s)", file=out)
    return counter


def documents(files: Files | None, texts: Iterable[Any] | None, errors: str,
              text_field: str) -> Iterator[str]:
    """The corpus as text, file by file (blocks cut after a newline, or records),
    then ``texts``: what sampling and other line-wise readers go through."""
    from ._readers import record_texts

    for p in expand(files) if files is not None else []:
        yield from file_texts(p, errors, text_field)
    if texts is not None:
        yield from record_texts(texts, text_field)


def _count_sample(counter: Any, sample: Any, files: Files | None, texts: Iterable[Any] | None,
                  errors: str, text_field: str, verbose: bool, out: Any) -> int:
    """Count a random sample of the corpus's lines (see ``_line_sample``); returns the
    bytes counted."""
    from ._line_sample import sample_lines

    lines, report = sample_lines(documents(files, texts, errors, text_field), sample)
    feed_texts(counter, lines)
    if verbose:
        print(report.describe(sample.seed), file=out)
    return report.bytes_kept
