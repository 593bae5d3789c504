"""Reliability: damaged compressed corpora, file permissions of saved files, downloads that
stall or are cut short, and the error type of non-integer token ids.

Nothing here uses the internet: downloads come from an HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import base64
import bz2
import gzip
import hashlib
import http.server
import json
import lzma
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import tokensmith as ts
from tokensmith import pretrained
from tokensmith.errors import (
    ChecksumError,
    CorpusCompressionError,
    CorpusError,
    InternalError,
    TokenIdTypeError,
    TokenizerError,
    TokenizerFormatError,
)
from tokensmith.pretrained import DownloadError, DownloadTimeoutError, TruncatedDownloadError
from tokensmith.surgery.prune import prune

from .conftest import make_text

# ------------------------------------------------- (6) damaged compressed corpora
TEXT = "".join(make_text(i, 200) + "\n" for i in range(30)).encode()
COMPRESS: dict[str, Callable[[bytes], bytes]] = {
    ".gz": gzip.compress,
    ".bz2": bz2.compress,
    ".xz": lzma.compress,
}
NAMES = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz"}
NOT_A = {".gz": "not a gzip file", ".bz2": "not a bzip2 file", ".xz": "not an xz file"}


def _corpus(tmp_path: Path, suffix: str, raw: bytes, stem: str = "corpus.txt") -> Path:
    path = tmp_path / f"{stem}{suffix}"
    path.write_bytes(raw)
    return path


def _truncated(suffix: str) -> bytes:
    whole = COMPRESS[suffix](TEXT)
    return whole[: len(whole) // 2]


@pytest.mark.parametrize("suffix", list(COMPRESS))
def test_intact_compressed_corpus_still_trains(tmp_path: Path, suffix: str) -> None:
    path = _corpus(tmp_path, suffix, COMPRESS[suffix](TEXT))
    assert ts.train(path, vocab_size=400).vocab_size == 400


@pytest.mark.parametrize("suffix", list(COMPRESS))
def test_truncated_compressed_corpus_names_the_file(tmp_path: Path, suffix: str) -> None:
    path = _corpus(tmp_path, suffix, _truncated(suffix))
    with pytest.raises(CorpusCompressionError) as info:
        ts.train(files=[path], vocab_size=400)
    message = str(info.value)
    assert str(path) in message
    assert "truncated" in message
    assert NAMES[suffix] in message
    assert info.value.problem == "truncated"
    assert info.value.path == str(path)
    assert isinstance(info.value, CorpusError)


@pytest.mark.parametrize("suffix", list(COMPRESS))
def test_file_not_in_its_compression_format_names_the_file(tmp_path: Path, suffix: str) -> None:
    path = _corpus(tmp_path, suffix, TEXT)  # plain text with a compression suffix
    with pytest.raises(CorpusCompressionError) as info:
        ts.train(files=[path], vocab_size=400)
    message = str(info.value)
    assert str(path) in message
    assert NOT_A[suffix] in message
    assert info.value.problem == "wrong-format"


@pytest.mark.parametrize("suffix", list(COMPRESS))
def test_corrupt_compressed_data_names_the_file(tmp_path: Path, suffix: str) -> None:
    whole = bytearray(COMPRESS[suffix](TEXT))
    middle = len(whole) // 2
    whole[middle : middle + 64] = bytes(64)  # the header is intact, the data is not
    path = _corpus(tmp_path, suffix, bytes(whole))
    with pytest.raises(CorpusError) as info:
        ts.train(files=[path], vocab_size=400)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("suffix", list(COMPRESS))
def test_truncated_compressed_jsonl_names_the_file(tmp_path: Path, suffix: str) -> None:
    lines = "".join(json.dumps({"text": make_text(i, 200)}) + "\n" for i in range(30)).encode()
    whole = COMPRESS[suffix](lines)
    path = _corpus(tmp_path, suffix, whole[: len(whole) // 2], stem="corpus.jsonl")
    with pytest.raises(CorpusCompressionError) as info:
        ts.train(files=[path], vocab_size=400)
    assert str(path) in str(info.value)
    assert info.value.problem == "truncated"


@pytest.mark.parametrize("suffix", list(COMPRESS))
def test_prune_reports_damaged_compressed_files(
    tmp_path: Path, trained: ts.Tokenizer, suffix: str
) -> None:
    truncated = _corpus(tmp_path, suffix, _truncated(suffix))
    with pytest.raises(CorpusCompressionError, match="truncated") as info:
        prune(trained, files=[truncated], min_count=1)
    assert str(truncated) in str(info.value)
    not_compressed = _corpus(tmp_path, suffix, TEXT, stem="plain.txt")
    with pytest.raises(CorpusCompressionError, match=NOT_A[suffix]) as info:
        prune(trained, files=[not_compressed], min_count=1)
    assert str(not_compressed) in str(info.value)


# ------------------------------------------------------ (8) saved files' modes
@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_new_saved_file_follows_the_umask(
    tmp_path: Path, trained: ts.Tokenizer, umask_022: None
) -> None:
    assert _mode(trained.save(tmp_path / "tokenizer.json")) == 0o644
    os.umask(0o027)
    assert _mode(trained.save(tmp_path / "other.json")) == 0o640


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644])
def test_overwritten_file_keeps_its_mode(
    tmp_path: Path, trained: ts.Tokenizer, umask_022: None, mode: int
) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text("old")
    path.chmod(mode)
    trained.save(path)
    assert _mode(path) == mode
    assert ts.load(path).encode("hello world") == trained.encode("hello world")
    assert [p.name for p in tmp_path.iterdir()] == ["tokenizer.json"]  # no temporary left


def test_html_reports_keep_the_mode_of_the_file_they_replace(
    tmp_path: Path, umask_022: None
) -> None:
    from tokensmith.report import write_atomic

    path = tmp_path / "report.html"
    assert _mode(write_atomic(path, "<p>new</p>")) == 0o644
    path.chmod(0o600)
    write_atomic(path, "<p>again</p>")
    assert _mode(path) == 0o600
    assert path.read_text() == "<p>again</p>"


# ------------------------------------------------------------ (10) downloads
NAME = "tsreliable_base"
FILENAME = f"{NAME}.tiktoken"
RANKS = b"".join(base64.b64encode(bytes([b])) + b" %d\n" % b for b in range(256))
SPEC = pretrained.EncodingSpec(
    NAME, FILENAME, f"https://encodings.invalid/{FILENAME}",
    hashlib.sha256(RANKS).hexdigest(), "gpt2", {}, 256,
)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake encoding registered, found nowhere locally, cached under tmp_path."""
    monkeypatch.setitem(pretrained.ENCODINGS, NAME, SPEC)
    folder = tmp_path / "cache"
    monkeypatch.setenv("TOKENSMITH_CACHE", str(folder))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    for var in ("TOKENSMITH_OFFLINE", "HF_HUB_OFFLINE", "TOKENSMITH_DOWNLOAD_BASE",
                "TOKENSMITH_DOWNLOAD_DEADLINE", "http_proxy", "HTTP_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    return folder


def _nothing_saved(folder: Path) -> bool:
    return not folder.exists() or not any(folder.iterdir())


Respond = Callable[[http.server.BaseHTTPRequestHandler], None]


class Servers:
    """HTTP servers on 127.0.0.1 whose every GET is answered by a function of the test;
    ``stop`` is set when the test ends, for answers that would go on."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self._running: list[tuple[http.server.ThreadingHTTPServer, threading.Thread]] = []

    def start(self, respond: Respond) -> str:
        """Serve ``respond``; the base URL to pass as ``base_url``."""

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
                try:
                    respond(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up, as it should

            def log_message(self, *args: object) -> None:
                pass

        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
        thread.start()
        self._running.append((httpd, thread))
        return f"http://127.0.0.1:{httpd.server_address[1]}/mirror"

    def close(self) -> None:
        self.stop.set()
        for httpd, thread in self._running:
            httpd.shutdown()
            httpd.server_close()
            thread.join(5)


@pytest.fixture
def servers() -> Iterator[Servers]:
    s = Servers()
    try:
        yield s
    finally:
        s.close()


def test_download_that_trickles_hits_the_deadline(cache: Path, servers: Servers) -> None:
    def trickle(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(len(RANKS)))
        h.end_headers()
        for i in range(0, len(RANKS), 8):  # 8 bytes every 20 ms: minutes for the file
            if servers.stop.is_set():
                return
            h.wfile.write(RANKS[i : i + 8])
            h.wfile.flush()
            time.sleep(0.02)

    base = servers.start(trickle)
    with pytest.raises(DownloadTimeoutError) as info:
        pretrained.locate(NAME, base_url=base, deadline=0.5)
    message = str(info.value)
    assert "0.5 s deadline" in message
    assert "too slow" in message
    assert "TOKENSMITH_DOWNLOAD_DEADLINE" in message
    assert str(cache / FILENAME) in message  # where to put a copy fetched by hand
    assert info.value.expected == len(RANKS)
    assert 0 < info.value.received < len(RANKS)
    assert isinstance(info.value, DownloadError)
    assert _nothing_saved(cache)


def test_deadline_from_the_environment(
    cache: Path, servers: Servers, monkeypatch: pytest.MonkeyPatch
) -> None:
    def stall(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(len(RANKS)))
        h.end_headers()
        h.wfile.write(RANKS[:10])
        h.wfile.flush()
        servers.stop.wait(30)  # then nothing more

    monkeypatch.setenv("TOKENSMITH_DOWNLOAD_DEADLINE", "0.3")
    with pytest.raises(DownloadTimeoutError, match="0.3 s deadline") as info:
        pretrained.load(NAME, base_url=servers.start(stall))
    assert info.value.received == 10
    assert _nothing_saved(cache)
    monkeypatch.setenv("TOKENSMITH_DOWNLOAD_DEADLINE", "soon")
    with pytest.raises(ts.errors.ConfigError, match="TOKENSMITH_DOWNLOAD_DEADLINE"):
        pretrained.load(NAME, base_url="http://127.0.0.1:9/unused")


def test_download_cut_short_is_reported_as_truncated(cache: Path, servers: Servers) -> None:
    def cut(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(len(RANKS)))
        h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.write(RANKS[:1000])
        h.wfile.flush()
        h.close_connection = True

    with pytest.raises(TruncatedDownloadError) as info:
        pretrained.locate(NAME, base_url=servers.start(cut))
    message = str(info.value)
    assert "cut short" in message
    assert f"1,000 of {len(RANKS):,} bytes" in message
    assert (info.value.received, info.value.expected) == (1000, len(RANKS))
    assert not isinstance(info.value, ChecksumError)
    assert _nothing_saved(cache)


def test_chunked_download_cut_short_is_truncated(cache: Path, servers: Servers) -> None:
    def cut(h: http.server.BaseHTTPRequestHandler) -> None:
        h.protocol_version = "HTTP/1.1"
        h.send_response(200)
        h.send_header("Transfer-Encoding", "chunked")
        h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.write(b"%x\r\n" % len(RANKS) + RANKS[:700])  # a chunk that never ends
        h.wfile.flush()
        h.close_connection = True

    with pytest.raises(TruncatedDownloadError, match="cut short") as info:
        pretrained.locate(NAME, base_url=servers.start(cut))
    assert info.value.received == 700
    assert _nothing_saved(cache)


def test_complete_wrong_bytes_are_a_checksum_error(cache: Path, servers: Servers) -> None:
    wrong = RANKS.replace(b" 255\n", b" 254\n")

    def send(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(len(wrong)))
        h.end_headers()
        h.wfile.write(wrong)

    with pytest.raises(ChecksumError) as info:
        pretrained.locate(NAME, base_url=servers.start(send))
    assert info.value.expected == SPEC.sha256
    assert info.value.actual == hashlib.sha256(wrong).hexdigest()
    assert not isinstance(info.value, DownloadError)
    assert _nothing_saved(cache)


def test_complete_download_within_the_deadline_is_saved(cache: Path, servers: Servers) -> None:
    def send(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(len(RANKS)))
        h.end_headers()
        h.wfile.write(RANKS)

    path = pretrained.locate(NAME, base_url=servers.start(send), deadline=30)
    assert path == cache / FILENAME
    assert path.read_bytes() == RANKS


# ------------------------------------------------- (11) ids that are not integers
def test_non_integer_ids_raise_type_error(trained: ts.Tokenizer) -> None:
    calls: list[Callable[[], object]] = [
        lambda: trained.decode(["x"]),  # type: ignore[list-item]
        lambda: trained.decode([1.5]),  # type: ignore[list-item]
        lambda: trained.decode([None]),  # type: ignore[list-item]
        lambda: trained.decode_batch([[1, 2], ["x"]]),  # type: ignore[list-item]
        lambda: trained.decode_bytes(["x"]),  # type: ignore[list-item]
        lambda: trained.decode_single_token_bytes("x"),  # type: ignore[arg-type]
        lambda: trained.decode_single_token_bytes(1.5),  # type: ignore[arg-type]
        lambda: trained.decode_stream().step("x"),  # type: ignore[arg-type]
    ]
    for call in calls:
        with pytest.raises(TypeError, match="token ids must be integers") as info:
            call()
        # code written against earlier versions keeps working
        assert isinstance(info.value, TokenizerFormatError)
        assert isinstance(info.value, TokenizerError)
        assert type(info.value) is TokenIdTypeError


# ------------------------------------------------- panics and failed allocations
def test_a_panic_is_an_internal_error_not_a_panic_exception(trained: ts.Tokenizer) -> None:
    from tokensmith import _core

    with pytest.raises(InternalError, match="boom in the core") as info:
        _core._panic_for_test("boom in the core")
    assert info.value.panic == "boom in the core"
    assert "report" in str(info.value)
    # an Exception (PanicException is not), and not the bad-input family
    assert isinstance(info.value, Exception)
    assert not isinstance(info.value, TokenizerError)
    # the process and the tokenizer go on working
    assert trained.decode(trained.encode("still here")) == "still here"


def _bindings(source: str) -> list[tuple[str, str]]:
    """(name, body) of every function Python can call in the bindings' source: the
    methods of each ``#[pymethods]`` block and each ``#[pyfunction]``."""
    found: list[tuple[str, str]] = []
    lines = source.split("\n")
    in_methods = False
    for i, line in enumerate(lines):
        if line.startswith("#[pymethods]"):
            in_methods = True
        elif in_methods and line == "}":
            in_methods = False
        indent = "    " if in_methods else ""
        head = re.match(rf"{indent}(?:unsafe )?fn (\w+)", line)
        if head and (in_methods or lines[i - 1].startswith("#[pyfunction]")):
            end = next(k for k in range(i + 1, len(lines)) if lines[k] == indent + "}")
            found.append((head.group(1), "\n".join(lines[i:end])))
    return found


def test_every_binding_runs_inside_the_panic_boundary() -> None:
    source = Path(__file__).resolve().parents[1] / "src" / "python.rs"
    if not source.exists():
        pytest.skip(f"{source} is not here (tests run outside the repository)")
    bindings = _bindings(source.read_text(encoding="utf-8"))
    assert len(bindings) > 40  # the parser found the bindings
    # (the garbage collector's slots cannot fail and must not call into Python)
    unguarded = [name for name, body in bindings
                 if "guarded(" not in body and name not in ("__traverse__", "__clear__")]
    assert unguarded == []


_OUT_OF_ROOM = """
import resource, sys
import tokensmith as ts

tok = ts.Tokenizer.from_str(sys.stdin.read())
text = "ab " * 70_000_000  # 210 MB: its ids need 280 MB of room
tok.encode("warm up the pools " * 20_000)
size_kb = next(int(line.split()[1]) for line in open("/proc/self/status")
               if line.startswith("VmSize:"))
limit = (size_kb << 10) + (120 << 20)
resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
try:
    tok.encode(text)
    print("encoded")
except MemoryError as e:
    print("MemoryError:", e)
print(tok.decode(tok.encode("after")))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc")
def test_an_allocation_that_fails_is_a_memory_error(trained: ts.Tokenizer) -> None:
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _OUT_OF_ROOM], input=trained.to_str(),
                         capture_output=True, text=True, timeout=300)
    # (an abort, before: Rust's allocation failure handler ends the process)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    assert lines[0].startswith("MemoryError: out of memory: the ids of the text needs")
    assert lines[1] == "after"


# ------------------------------------------------- (7) long lines, every trainer
def _long_line(n_bytes: int) -> str:
    words = make_text(7, 4000).split()
    out, size, k = [], 0, 0
    while size < n_bytes:
        w = words[k % len(words)] + str(k % 97)
        out.append(w)
        size += len(w) + 1
        k += 1
    return " ".join(out)


def _counts(components: dict[str, object], text: str) -> dict[bytes, int]:
    from tokensmith.corpus import count_corpus

    counter = count_corpus(components, None, [text], "strict")
    return dict(counter.most_common(10**9))


SP_CASES = {  # (add_dummy_prefix, remove_extra_whitespaces, suffix): the words of a line
    (True, True, False): lambda ws: ["\u2581" + w for w in ws],
    (False, False, False): lambda ws: ws[:1] + ["\u2581" + w for w in ws[1:]],
    (False, False, True): lambda ws: [w + "\u2581" for w in ws[:-1]] + ws[-1:],
    (True, True, True): lambda ws: [w + "\u2581" for w in ws],
}


@pytest.mark.parametrize("case", SP_CASES, ids=str)
def test_sentencepiece_long_line_is_counted_in_parts_with_the_same_words(
        case: tuple[bool, bool, bool]) -> None:
    from collections import Counter

    from tokensmith import _train_sentencepiece as sp

    prefix, remove, suffix = case
    line = _long_line(3 << 20)  # a line of 3 MB: counted in parts of about 256 KB
    normalizer = {"type": "SentencePiece", "precompiled_charsmap": None,
                  "add_dummy_prefix": prefix, "remove_extra_whitespaces": remove,
                  "escape_whitespaces": True, "treat_whitespace_as_suffix": suffix}
    pre = {"type": "Split", "pattern": {"String": "\u2581"}, "invert": False,
           "behavior": "MergedWithPrevious" if suffix else "MergedWithNext"}
    cut = sp._space_cut(prefix, remove, suffix)
    assert cut is not None
    got = _counts({"normalizer": normalizer, "pre_tokenizer": pre, "lines": True,
                   "space_cut": cut}, line)
    want = Counter(w.encode() for w in SP_CASES[case](line.split(" ")))
    assert got == dict(want)


def test_sentencepiece_rules_that_would_change_words_are_not_cut() -> None:
    from tokensmith import _train_sentencepiece as sp

    assert sp._space_cut(True, False, False) is None
    assert sp._space_cut(False, True, True) is None


@pytest.mark.parametrize("pre", ["BertPreTokenizer", "WhitespaceSplit"])
def test_bert_style_long_line_is_counted_in_parts_with_the_same_words(pre: str) -> None:
    line = _long_line(2 << 20)
    normalizer = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                  "strip_accents": None, "lowercase": True}
    components = {"normalizer": normalizer, "pre_tokenizer": {"type": pre}}
    got = _counts(components, line)
    # (the same words a line each: cut only where lines end, as before)
    assert got == _counts(components, line.replace(" ", "\n"))
    assert sum(got.values()) > len(line.split(" "))  # punctuation is split off too


_PEAK = """
import sys
from tokensmith import _core

counter = _core.WordCounter(sys.argv[1])
counter.feed_file(sys.argv[2], "strict")
# (the peak of this address space: ru_maxrss may carry the parent's over through exec)
print(next(int(line.split()[1]) * 1024 for line in open("/proc/self/status")
           if line.startswith("VmHWM:")))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc")
@pytest.mark.parametrize("components", [
    {"normalizer": {"type": "BertNormalizer", "lowercase": True},
     "pre_tokenizer": {"type": "BertPreTokenizer"}},
    {"normalizer": {"type": "SentencePiece", "precompiled_charsmap": None,
                    "add_dummy_prefix": True, "remove_extra_whitespaces": True,
                    "escape_whitespaces": True, "treat_whitespace_as_suffix": False},
     "pre_tokenizer": {"type": "Split", "pattern": {"String": "\u2581"},
                       "behavior": "MergedWithNext", "invert": False},
     "lines": True, "space_cut": "before"},
], ids=["wordpiece", "sentencepiece"])
def test_memory_of_one_long_line_is_that_of_many_lines(
        tmp_path: Path, components: dict[str, object]) -> None:
    import subprocess
    import sys

    lines = "".join(make_text(i, 60) + "\n" for i in range(4000))
    lines = lines * (24_000_000 // len(lines) + 1)  # about 24 MB
    (tmp_path / "lines.txt").write_text(lines, encoding="utf-8")
    (tmp_path / "one.txt").write_text(lines.replace("\n", " "), encoding="utf-8")

    def peak(name: str) -> int:
        run = subprocess.run([sys.executable, "-c", _PEAK, json.dumps(components),
                              str(tmp_path / name)], capture_output=True, text=True,
                             check=True, timeout=300)
        return int(run.stdout.split()[-1])

    one, many = peak("one.txt"), peak("lines.txt")
    # (a line counted whole took over 4 times the memory of the same bytes as lines)
    assert one < 1.3 * many + (32 << 20), (one >> 20, many >> 20)
