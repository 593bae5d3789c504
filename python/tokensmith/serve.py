"""``tokensmith serve``: a local web playground that shows how tokenizers cut text.

Paste text and see it tokenized by several tokenizers at once: token counts,
ids, the bytes of every token, and the characters whose UTF-8 bytes were split
between tokens. Only the Python standard library is used
(:class:`http.server.HTTPServer` with a bounded pool of worker threads); the
page is one self-contained HTML document (inline CSS and JavaScript, nothing
fetched from elsewhere).

>>> import threading, tokensmith as ts
>>> from tokensmith.serve import make_server
>>> tok = ts.train(texts=["hello world"] * 20, vocab_size=300)
>>> server = make_server({"mine": tok}, port=0)           # 0: any free port
>>> thread = threading.Thread(target=server.serve_forever, daemon=True)
>>> thread.start()
>>> server.url.startswith("http://127.0.0.1:")
True
>>> server.shutdown(); server.server_close()

The JSON API: ``GET /api/tokenizers`` lists the tokenizers (and why one
failed to load); ``POST /api/tokenize`` with ``{"text": …, "tokenizers":
[names], "special": "ordinary" | "allow"}`` returns, per tokenizer, the
token count and each token's id, visible text, bytes (hex), character
offsets and whether it holds only part of a character. Every error is
answered in JSON, ``{"error": message, "status": code}``: 400 for a body that
is not valid JSON (or nested too deeply), 404 for an unknown path, 408 for a
request that does not arrive within ``timeout`` seconds, 413 for a body over
``max_bytes``, 500 for a fault of the server, 503 when every worker is busy and
``max_waiting`` connections already wait for one.

A slow or stalled client cannot hold the server: each connection has
``timeout`` seconds to send a complete request (however slowly it trickles in)
and may then stay idle, kept alive, for at most ``timeout`` seconds more per
request; at most ``workers`` threads serve connections, however many arrive.

Only loopback addresses are served unless ``allow_remote=True``: the
playground has no authentication. Requests must name a loopback host in their
``Host`` header (a defence against DNS rebinding) and POSTs must be JSON (so
that another web site cannot post to it from a form).
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import ipaddress
import json
import math
import socket
import sys
import threading
import time
import traceback
import warnings
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, TextIO

from .display import HTML_CSS, Analysis, analyze, model_kind
from .errors import ConfigError, TokenizerError
from .tokenizer import Tokenizer

__all__ = [
    "make_server",
    "PlaygroundServer",
    "TokenizerEntry",
    "RemoteAccessWarning",
    "is_loopback",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_SHOWN",
    "DEFAULT_TIMEOUT",
    "DEFAULT_WORKERS",
    "DEFAULT_MAX_WAITING",
    "LISTEN_BACKLOG",
]

DEFAULT_MAX_BYTES = 1 << 20  # the largest request body accepted: 1 MiB of JSON
DEFAULT_MAX_SHOWN = 10_000  # tokens drawn per tokenizer; the count is always complete
DEFAULT_TIMEOUT = 5.0  # seconds a client has to send a request (or may stay idle between two)
DEFAULT_WORKERS = 16  # threads serving connections, at most
DEFAULT_MAX_WAITING = 256  # accepted connections waiting for a worker; more get 503
LISTEN_BACKLOG = 128  # connections the system queues before the server accepts them

_LINGER_SECONDS = 2.0  # after refusing a body: how long to read (and drop) what still comes
_LINGER_BYTES = 64 << 20  # … and how much of it, at most


class RemoteAccessWarning(UserWarning):
    """The playground listens on an address other machines can reach."""


class TokenizerEntry:
    """A tokenizer the playground offers, or the reason it could not be loaded."""

    def __init__(self, name: str, tokenizer: Tokenizer | None, error: str | None = None) -> None:
        self.name = name
        self.tokenizer = tokenizer
        self.error = error
        self.kind = ""
        if tokenizer is not None:
            try:
                self.kind = model_kind(tokenizer)
            except Exception:  # a label must never stop the server
                self.kind = "?"

    def describe(self) -> dict[str, Any]:
        if self.tokenizer is None:
            return {"name": self.name, "ok": False, "error": self.error}
        return {"name": self.name, "ok": True, "kind": self.kind,
                "vocab_size": self.tokenizer.vocab_size}


def _load_entry(name: str, spec: Tokenizer | str | BaseException) -> TokenizerEntry:
    if isinstance(spec, Tokenizer):
        return TokenizerEntry(name, spec)
    if isinstance(spec, BaseException):
        return TokenizerEntry(name, None, _load_message(name, spec))
    from ._loading import load

    try:
        return TokenizerEntry(name, load(spec))
    except Exception as e:  # reported, with its reason
        return TokenizerEntry(name, None, _load_message(name, e))


def _load_message(name: str, e: BaseException) -> str:
    if isinstance(e, OSError) and e.filename is not None and e.strerror:
        reason = f"{e.filename}: {e.strerror}"
    else:
        reason = str(e) or type(e).__name__
    if reason.startswith(name):
        return f"could not load {reason}"
    return f"could not load {name}: {reason}"


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) only ever means this machine."""
    h = host.strip().strip("[]")
    if h.lower() in ("localhost", "localhost.localdomain", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(h, None)
    except OSError:
        return False
    addrs = {info[4][0] for info in infos}
    return bool(addrs) and all(ipaddress.ip_address(str(a).split("%")[0]).is_loopback
                               for a in addrs)


def _loopback_literal(host: str) -> bool:
    """``localhost`` or a loopback address, without asking DNS (a rebinding attack
    controls what a name resolves to)."""
    h = host.strip().strip("[]").lower().rstrip(".")
    if h in ("localhost", "localhost.localdomain", "ip6-localhost") or h.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    """The host part of a ``Host`` header: ``[::1]:8000`` -> ``::1``."""
    h = header.strip()
    if h.startswith("["):
        return h[1:h.find("]")] if "]" in h else h
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h


_Connection = tuple[socket.socket, Any, float]  # socket, client address, deadline


class _WorkerPool:
    """At most ``size`` daemon threads, started as they are needed, each serving one
    connection at a time; at most ``limit`` connections held at once (served or waiting)."""

    def __init__(self, serve: Callable[[socket.socket, Any, float], None], size: int,
                 limit: int) -> None:
        self._serve = serve
        self._size = size
        self._limit = limit
        self._cond = threading.Condition()
        self._waiting: deque[_Connection] = deque()
        self._held = 0
        self._idle = 0
        self._threads: set[threading.Thread] = set()
        self._closed = False

    @property
    def threads(self) -> int:
        with self._cond:
            return len(self._threads)

    def submit(self, connection: _Connection) -> bool:
        """Queue a connection for a worker; False (nothing done) when the pool is full."""
        with self._cond:
            if self._closed or self._held >= self._limit:
                return False
            self._held += 1
            self._waiting.append(connection)
            if len(self._waiting) > self._idle and len(self._threads) < self._size:
                thread = threading.Thread(target=self._work, daemon=True,
                                          name=f"tokensmith-serve-{len(self._threads) + 1}")
                self._threads.add(thread)
                thread.start()
            self._cond.notify()
            return True

    def _work(self) -> None:
        me = threading.current_thread()
        while True:
            with self._cond:
                self._idle += 1
                while not self._waiting and not self._closed:
                    self._cond.wait()
                self._idle -= 1
                if not self._waiting:  # closed
                    self._threads.discard(me)
                    return
                connection = self._waiting.popleft()
            try:
                self._serve(*connection)
            except BaseException:  # (KeyboardInterrupt, SystemExit): this thread ends
                with self._cond:
                    self._threads.discard(me)
                raise
            finally:
                with self._cond:
                    self._held -= 1

    def close(self) -> list[_Connection]:
        """Stop the workers once their connection is served; returns the connections
        that were still waiting (not served, for the caller to close)."""
        with self._cond:
            self._closed = True
            dropped = list(self._waiting)
            self._waiting.clear()
            self._held -= len(dropped)
            self._cond.notify_all()
        return dropped


class _DeadlineReader(io.RawIOBase):
    """A connection's input, read under a deadline: the client has until then to send
    its request, however slowly it trickles in. Past the deadline only what has
    already arrived is read; then :class:`TimeoutError`."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._sock = sock
        self.deadline = deadline
        self.received = 0  # bytes read since ``received`` was last reset
        self.timed_out = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        try:
            self._sock.settimeout(max(left, 0.0))  # 0: only what is already there
            n = self._sock.recv_into(buffer)
        except (TimeoutError, BlockingIOError):
            self.timed_out = True
            raise TimeoutError("the client did not send its request in time") from None
        self.received += n
        return n


def _discard_input(sock: socket.socket, seconds: float, limit: int) -> None:
    """Read and drop what the client still sends (for at most ``seconds`` and ``limit``
    bytes), so that closing the connection does not reset it before the client has
    read the answer (a socket closed with unread input sends a reset)."""
    end = time.monotonic() + seconds
    got = 0
    try:
        while got < limit:
            left = end - time.monotonic()
            sock.settimeout(max(left, 0.0))
            chunk = sock.recv(65536)
            if not chunk:
                return
            got += len(chunk)
    except OSError:  # timed out, nothing more waiting (seconds=0), or reset
        pass


class PlaygroundServer(HTTPServer):
    """The playground's HTTP server: ``serve_forever()`` runs it, ``url`` says where.

    One thread accepts connections and hands them to at most ``workers`` threads;
    up to ``max_waiting`` more wait for a free worker, and beyond that a connection
    gets an immediate 503. ``server_close()`` also stops the workers.
    """

    request_queue_size = LISTEN_BACKLOG

    def __init__(
        self,
        address: tuple[str, int],
        entries: list[TokenizerEntry],
        *,
        allow_remote: bool,
        max_bytes: int,
        max_shown: int,
        log: TextIO | None,
        timeout: float = DEFAULT_TIMEOUT,
        workers: int = DEFAULT_WORKERS,
        max_waiting: int = DEFAULT_MAX_WAITING,
    ) -> None:
        self.entries = {e.name: e for e in entries}
        self.allow_remote = allow_remote
        self.max_bytes = max_bytes
        self.max_shown = max_shown
        self.log = log
        # (not ``self.timeout``: BaseServer uses that name for handle_request())
        self.request_timeout = float(timeout)
        self.workers = workers
        self.max_waiting = max_waiting
        self._pool = _WorkerPool(self._serve_connection, workers, workers + max_waiting)
        host = address[0]
        if ":" in host:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)
        self.page = _page(self)

    # ------------------------------------------------------------ connections
    def process_request(self, request: Any, client_address: Any) -> None:
        deadline = time.monotonic() + self.request_timeout  # counted from the connection
        if not self._pool.submit((request, client_address, deadline)):
            self._refuse(request, client_address)

    def _serve_connection(self, request: socket.socket, client_address: Any,
                          deadline: float) -> None:
        try:
            _Handler(request, client_address, self, deadline=deadline)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException:  # (a Rust panic is a BaseException)
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)

    def _refuse(self, request: socket.socket, client_address: Any) -> None:
        """503 at once, from the accepting thread (which must not wait on a client)."""
        body = json.dumps({
            "error": f"the playground is busy: {self.workers} connections are being served "
                     f"and {self.max_waiting} are waiting; try again in a moment",
            "status": int(HTTPStatus.SERVICE_UNAVAILABLE),
        }).encode("utf-8")
        head = (
            "HTTP/1.1 503 Service Unavailable\r\n"
            "Content-Type: application/json; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\n"
            "Retry-After: 1\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
        ).encode("ascii")
        try:
            _discard_input(request, 0.0, _LINGER_BYTES)  # the request, if it has arrived
            request.settimeout(0.0)
            request.send(head + body)  # small: fits in a new connection's send buffer
        except OSError:
            pass
        self.shutdown_request(request)
        self._log_line(f"{client_address[0]} - refused (503): every worker is busy")

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A fault outside any request's answer (the handlers answer their own)."""
        err = sys.exc_info()[1]
        if isinstance(err, OSError):  # the client went away: not the server's fault
            self._log_line(f"{client_address[0]} - connection lost: {err}")
            return
        print(f"tokensmith serve: error on the connection from {client_address[0]}:",
              file=self.log or sys.stderr)
        traceback.print_exc(file=self.log or sys.stderr)

    def _log_line(self, line: str) -> None:
        if self.log is not None:
            try:
                print(line, file=self.log, flush=True)
            except (OSError, ValueError):
                pass

    def server_close(self) -> None:
        super().server_close()
        for request, _, _ in self._pool.close():
            self.shutdown_request(request)

    @property
    def worker_threads(self) -> int:
        """How many worker threads are running now (at most ``workers``)."""
        return self._pool.threads

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        host = str(self.server_address[0])
        if host in ("0.0.0.0", "::"):
            host = "127.0.0.1" if host == "0.0.0.0" else "::1"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}/"

    def tokenize(self, text: str, names: Sequence[str], special: str) -> dict[str, Any]:
        """The body of a ``/api/tokenize`` answer (names are known to exist)."""
        results = []
        for name in names:
            entry = self.entries[name]
            if entry.tokenizer is None:
                results.append({"name": name, "ok": False, "error": entry.error})
                continue
            try:
                a = analyze(
                    entry.tokenizer, text,
                    allowed_special="all" if special == "allow" else frozenset(),
                    disallowed_special=(),
                    limit=self.max_shown,
                )
            except (TokenizerError, ValueError) as e:
                results.append({"name": name, "ok": False, "error": f"{name}: {e}"})
                continue
            results.append(_result_json(name, entry, a))
        clean = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return {"chars": len(clean), "bytes": len(clean.encode("utf-8")), "results": results}


def _result_json(name: str, entry: TokenizerEntry, a: Analysis) -> dict[str, Any]:
    tokens = []
    for t in a.tokens:
        item: dict[str, Any] = {
            "id": t.id, "text": t.text, "hex": t.hex, "start": t.start, "end": t.end,
            "partial": t.partial, "special": t.special, "unknown": t.unknown,
        }
        if t.breaks:
            item["breaks"] = t.breaks
        if t.gap:
            item["gap"] = t.gap
        if t.unknown:
            item["source"] = t.source
        tokens.append(item)
    return {
        "name": name,
        "ok": True,
        "kind": entry.kind,
        "count": a.count,
        "shown": len(a.tokens),
        "truncated": a.truncated,
        "tokens": tokens,
        "gap_after": a.gap_after,
        "splits": [
            {"char": s.char, "codepoint": s.codepoint,
             "pieces": [{"index": k, "id": i, "hex": b.hex(" ")} for k, i, b in s.pieces]}
            for s in a.splits
        ],
        "unknown_chars": a.unknown_chars,
    }


class _RequestError(Exception):
    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _Handler(BaseHTTPRequestHandler):
    server: PlaygroundServer
    server_version = "tokensmith-playground"
    protocol_version = "HTTP/1.1"
    # (a malformed request line is answered with a status line, not as HTTP/0.9)
    default_request_version = "HTTP/1.0"

    def __init__(self, request: Any, client_address: Any, server: PlaygroundServer, *,
                 deadline: float = math.inf) -> None:
        self._first_deadline = deadline
        self._requests = 0
        self._responded = False  # a response has begun: no other can be sent
        self._linger = False  # the request's body was not read
        super().__init__(request, client_address, server)

    # ------------------------------------------------------------ connection
    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # replaced by a reader that keeps the deadline
        self._input = _DeadlineReader(self.connection, self._first_deadline)
        self.rfile = io.BufferedReader(self._input)

    def handle_one_request(self) -> None:
        reader = self._input
        if self._requests:  # the next request on a kept-alive connection
            reader.deadline = time.monotonic() + self.server.request_timeout
        self._requests += 1
        reader.received = 0
        reader.timed_out = False
        self._responded = False
        self._linger = False
        # (what the standard library sets only once it has read a request line)
        self.command = ""
        self.requestline = ""
        self.request_version = self.default_request_version
        super().handle_one_request()  # closes the connection on TimeoutError
        if reader.timed_out and reader.received and not self._responded:
            # part of a request came, then nothing: say so (an idle connection is just closed)
            self.close_connection = True
            self._error(HTTPStatus.REQUEST_TIMEOUT,
                        f"the request did not arrive within {self.server.request_timeout:g} s "
                        f"(tokensmith serve --timeout SECONDS to change it)")

    def finish(self) -> None:
        super().finish()
        if self._linger and self.close_connection:
            try:
                self.connection.shutdown(socket.SHUT_WR)
            except OSError:
                return
            _discard_input(self.connection, min(_LINGER_SECONDS, self.server.request_timeout),
                           _LINGER_BYTES)

    def send_response(self, code: int, message: str | None = None) -> None:
        self._responded = True
        self.connection.settimeout(self.server.request_timeout)  # for writing the answer
        super().send_response(code, message)

    def send_error(self, code: int, message: str | None = None,
                   explain: str | None = None) -> None:
        """The standard library's own refusals (a malformed request line, headers too
        long, an unknown method), in JSON like every other error."""
        try:
            status = HTTPStatus(code)
        except ValueError:
            status = HTTPStatus.BAD_REQUEST
        self.close_connection = True
        self._linger = status != HTTPStatus.REQUEST_TIMEOUT
        text = message or status.phrase
        self.log_error("code %d, message %s", int(status), text)
        self._error(status, text)

    # ------------------------------------------------------------ plumbing
    def log_message(self, format: str, *args: Any) -> None:
        log = self.server.log
        if log is not None:
            try:
                print(f"{self.address_string()} - {format % args}", file=log, flush=True)
            except (OSError, ValueError):
                pass

    def _send(self, status: HTTPStatus, body: bytes, content_type: str,
              extra: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: HTTPStatus, data: Any) -> None:
        body = json.dumps(data, ensure_ascii=False).encode("utf-8", "replace")
        self._send(status, body, "application/json; charset=utf-8")

    def _error(self, status: HTTPStatus, message: str) -> None:
        self._json(status, {"error": message, "status": int(status)})

    def _check_host(self) -> bool:
        """Refuse a ``Host`` that is not this machine (DNS rebinding), unless remote."""
        if self.server.allow_remote:
            return True
        host = self.headers.get("Host")
        if host is None or _loopback_literal(_host_name(host)):
            return True
        self.close_connection = True
        self._linger = True
        self._error(HTTPStatus.FORBIDDEN,
                    f"this playground only answers requests for this machine "
                    f"(127.0.0.1 or localhost), not for host {host!r}")
        return False

    def _guarded(self, answer: Callable[[], None]) -> None:
        """Run ``answer``; a fault becomes a JSON 500 (never a dropped connection)."""
        try:
            answer()
        except ConnectionError as e:  # the client went away
            self.close_connection = True
            self.log_error("connection lost: %s", e)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # (a Rust panic is a BaseException, not an Exception)
            self.close_connection = True
            out = self.server.log or sys.stderr
            try:
                print(f"tokensmith serve: internal error answering {self.requestline!r}:",
                      file=out)
                traceback.print_exc(file=out)
            except (OSError, ValueError):
                pass
            if self._responded:  # too late for another answer: the connection closes
                return
            try:
                self._error(HTTPStatus.INTERNAL_SERVER_ERROR,
                            f"internal error ({type(e).__name__}); the server's log has the "
                            f"details")
            except OSError:
                pass

    # ------------------------------------------------------------ methods
    def do_GET(self) -> None:
        self._guarded(self._get)

    def do_HEAD(self) -> None:
        self._guarded(self._get)

    def do_POST(self) -> None:
        self._guarded(self._post)

    def _get(self) -> None:
        if not self._check_host():
            return
        path = self.path.split("?", 1)[0]
        if path in ("/", "/index.html"):
            self._send(HTTPStatus.OK, self.server.page, "text/html; charset=utf-8",
                       {"Content-Security-Policy": _CSP})
        elif path == "/api/tokenizers":
            self._json(HTTPStatus.OK, _config(self.server))
        elif path == "/favicon.ico":
            self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
        else:
            self._error(HTTPStatus.NOT_FOUND, f"no such page: {path}")

    def _post(self) -> None:
        if not self._check_host():
            return
        path = self.path.split("?", 1)[0]
        try:
            if path != "/api/tokenize":
                self.close_connection = True  # the body is not read
                self._linger = True
                raise _RequestError(HTTPStatus.NOT_FOUND, f"no such API: POST {path}")
            request = self._read_json()
            text, names, special = self._parse(request)
            answer = self.server.tokenize(text, names, special)
        except _RequestError as e:
            self._error(e.status, e.message)
            return
        self._json(HTTPStatus.OK, answer)

    def _read_json(self) -> Any:
        # until the body is read, an error closes the connection (the body is not read)
        self._linger = True
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            raise _RequestError(HTTPStatus.LENGTH_REQUIRED,
                                "send the request with a Content-Length, not chunked")
        length_header = self.headers.get("Content-Length")
        if length_header is None:
            self.close_connection = True
            raise _RequestError(HTTPStatus.LENGTH_REQUIRED, "the request has no Content-Length")
        try:
            length = int(length_header)
            if length < 0:
                raise ValueError
        except ValueError:
            self.close_connection = True
            raise _RequestError(HTTPStatus.BAD_REQUEST,
                                f"bad Content-Length: {length_header!r}") from None
        limit = self.server.max_bytes
        if length > limit:
            self.close_connection = True  # the body is not read
            raise _RequestError(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"the text is too large: {_size(length)}; the playground takes at most "
                f"{_size(limit)} (tokensmith serve --max-bytes N to change it; for long "
                f"texts use `tokensmith count` or `tokensmith encode --file`)",
            )
        ctype = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        try:
            body = self.rfile.read(length)
        except TimeoutError:
            self.close_connection = True
            self._linger = False
            raise _RequestError(
                HTTPStatus.REQUEST_TIMEOUT,
                f"the request body did not arrive within {self.server.request_timeout:g} s "
                f"(tokensmith serve --timeout SECONDS to change it)",
            ) from None
        self._linger = False
        if len(body) < length:
            self.close_connection = True
            raise _RequestError(HTTPStatus.BAD_REQUEST,
                                f"the body ended after {len(body)} of the {length} bytes its "
                                f"Content-Length promised")
        if ctype != "application/json":
            raise _RequestError(HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                                "send JSON with Content-Type: application/json")
        try:
            raw = body.decode("utf-8")
        except UnicodeDecodeError as e:
            raise _RequestError(HTTPStatus.BAD_REQUEST,
                                f"the body is not UTF-8 (byte offset {e.start})") from None
        try:
            return json.loads(raw)
        except ValueError as e:
            raise _RequestError(HTTPStatus.BAD_REQUEST,
                                f"the body is not valid JSON: {e}") from None
        except RecursionError:
            raise _RequestError(
                HTTPStatus.BAD_REQUEST,
                'the body is JSON nested too deeply; send {"text": "...", "tokenizers": '
                '["name"]}',
            ) from None

    def _parse(self, request: Any) -> tuple[str, list[str], str]:
        if not isinstance(request, dict):
            raise _RequestError(HTTPStatus.BAD_REQUEST,
                                'send a JSON object: {"text": "...", "tokenizers": ["name"]}')
        text = request.get("text")
        if not isinstance(text, str):
            raise _RequestError(HTTPStatus.BAD_REQUEST, '"text" must be a string')
        entries = self.server.entries
        names = request.get("tokenizers")
        if names is None:
            names = list(entries)
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise _RequestError(HTTPStatus.BAD_REQUEST,
                                '"tokenizers" must be a list of tokenizer names')
        unknown = [n for n in names if n not in entries]
        if unknown:
            known = ", ".join(entries) or "none"
            raise _RequestError(HTTPStatus.BAD_REQUEST,
                                f"unknown tokenizer {unknown[0]!r}; this playground has: {known}")
        special = request.get("special", "ordinary")
        if special not in ("ordinary", "allow"):
            raise _RequestError(HTTPStatus.BAD_REQUEST,
                                '"special" must be "ordinary" (special-token text is plain '
                                'text) or "allow" (it becomes the special token)')
        return text, list(dict.fromkeys(names)), special


def _size(n: int) -> str:
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.1f} KiB"
    return f"{n} bytes"


def _config(server: PlaygroundServer) -> dict[str, Any]:
    return {
        "tokenizers": [e.describe() for e in server.entries.values()],
        "max_bytes": server.max_bytes,
        "max_shown": server.max_shown,
    }


def make_server(
    tokenizers: Mapping[str, Tokenizer | str | BaseException]
    | Sequence[Tokenizer | str | tuple[str, Tokenizer | str | BaseException]],
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    allow_remote: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_shown: int = DEFAULT_MAX_SHOWN,
    log: TextIO | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    workers: int = DEFAULT_WORKERS,
    max_waiting: int = DEFAULT_MAX_WAITING,
) -> PlaygroundServer:
    """A playground server for ``tokenizers``, bound but not yet serving.

    ``tokenizers`` maps display names to tokenizers, or to what
    :func:`tokensmith.load` takes (a path or a named encoding); a list of
    such paths or names uses each as its own name. One that fails to load
    (or an exception given in its place) stays in the list with its error,
    which the page shows. ``port=0`` picks a free port (see ``server.url``).

    A ``host`` that is not a loopback address raises :class:`PermissionError`
    unless ``allow_remote=True``, which warns (:class:`RemoteAccessWarning`):
    anyone who can reach the address can then use the playground.
    Request bodies over ``max_bytes`` get 413; each tokenizer draws at most
    ``max_shown`` tokens (the count is always complete). ``log`` receives one
    line per request.

    A client has ``timeout`` seconds from connecting to send its request (408
    if part of it came; an idle connection is closed), and as long again for
    each further request on a kept-alive connection. At most ``workers`` threads
    serve connections; ``max_waiting`` more connections wait for one, and
    beyond that a connection gets 503 at once.
    """
    if not is_loopback(host):
        if not allow_remote:
            raise PermissionError(
                f"{host} is not a loopback address: the playground has no authentication, so "
                f"it only listens on 127.0.0.1 unless you allow remote access explicitly "
                f"(allow_remote=True, or tokensmith serve --allow-remote)"
            )
        warnings.warn(
            f"listening on {host}: anyone who can reach this address can use the playground "
            f"(it has no authentication)",
            RemoteAccessWarning,
            stacklevel=2,
        )
    if max_bytes <= 0:
        raise ValueError("max_bytes must be positive")
    if max_shown < 0:
        raise ValueError("max_shown must not be negative")
    if not (isinstance(timeout, (int, float)) and 0 < timeout < math.inf):
        raise ConfigError(f"timeout must be a positive number of seconds, not {timeout!r}")
    if not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers must be at least 1, not {workers!r}")
    if not isinstance(max_waiting, int) or max_waiting < 0:
        raise ConfigError(f"max_waiting must not be negative, not {max_waiting!r}")
    items: list[tuple[str, Tokenizer | str | BaseException]] = []
    if isinstance(tokenizers, Mapping):
        items = [(str(k), v) for k, v in tokenizers.items()]
    else:
        for k, spec in enumerate(tokenizers):
            if isinstance(spec, tuple):
                items.append((str(spec[0]), spec[1]))
            elif isinstance(spec, Tokenizer):
                items.append((f"tokenizer {k + 1}", spec))
            else:
                items.append((str(spec), spec))
    names = [n for n, _ in items]
    if len(set(names)) != len(names):
        raise ValueError(f"tokenizer names must differ: {names}")
    entries = [_load_entry(name, spec) for name, spec in items]
    return PlaygroundServer((host, port), entries, allow_remote=allow_remote,
                            max_bytes=max_bytes, max_shown=max_shown, log=log,
                            timeout=timeout, workers=workers, max_waiting=max_waiting)


# ------------------------------------------------------------------ the page

_PAGE_CSS = """\
:root{color-scheme:light}
body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d1d1f;
  background:#fafafa}
header{padding:.8em 1.5em;background:#24292f;color:#fff}
header h1{margin:0;font-size:1.15em;font-weight:600}
header p{margin:.1em 0 0;color:#c9d1d9;font-size:.9em}
main{padding:1em 1.5em;max-width:90em}
textarea{width:100%;box-sizing:border-box;min-height:8em;font:14px/1.5 ui-monospace,
  "SFMono-Regular",Menlo,Consolas,"DejaVu Sans Mono",monospace;padding:.6em;
  border:1px solid #bbb;border-radius:6px;resize:vertical}
fieldset{border:1px solid #ddd;border-radius:6px;margin:.6em 0;padding:.4em .8em}
legend{color:#555;padding:0 .3em}
.ts-choice{display:inline-block;margin:.15em 1.2em .15em 0}
.ts-kind{color:#777;font-size:.88em}
.ts-load-error{display:block;color:#a40e0e;font-size:.9em}
#options label{margin-right:1.4em}
#status{min-height:1.5em;color:#555;margin:.4em 0}
#status.ts-bad{color:#a40e0e;font-weight:600}
.ts-result{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.5em 1em;
  margin:.8em 0}
.ts-result h2{font-size:1em;margin:.2em 0;display:flex;gap:1em;align-items:baseline;
  flex-wrap:wrap}
.ts-count{font-size:1.25em;font-weight:700;color:#0b5cad}
.ts-stats{color:#666;font-weight:400}
.ts-error{color:#a40e0e;white-space:pre-wrap}
"""

_PAGE_JS = r"""
"use strict";
(function () {
  const config = JSON.parse(document.getElementById("ts-config").textContent);
  const $ = (id) => document.getElementById(id);
  const textBox = $("text"), results = $("results"), status = $("status");
  const showIds = $("show-ids"), allowSpecial = $("allow-special");
  const encoder = new TextEncoder();
  let seq = 0, timer = null, controller = null;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;   // text only: never parsed as HTML
    return e;
  }
  function setState(state) { document.body.dataset.state = state; }
  function say(message, bad) {
    status.textContent = message;
    status.classList.toggle("ts-bad", !!bad);
  }
  function chosen() {
    return Array.from(document.querySelectorAll("input.ts-pick:checked")).map((b) => b.value);
  }
  function fmt(n) { return n.toLocaleString("en-US"); }

  function tokenTitle(t) {
    const parts = ["id " + t.id];
    if (t.hex) parts.push("bytes " + t.hex);
    if (t.end > t.start) parts.push("chars " + t.start + "\u2013" + t.end);
    if (t.special) parts.push("special token");
    if (t.partial) parts.push("part of a character");
    if (t.unknown) parts.push("unknown: cannot represent " + JSON.stringify(t.source || ""));
    return parts.join(" \u00b7 ");
  }

  function renderResult(r, textBytes) {
    const box = el("section", "ts-result tokensmith-view");
    box.dataset.name = r.name;
    const h = el("h2");
    h.appendChild(el("span", "ts-name", r.name));
    box.appendChild(h);
    if (!r.ok) {
      box.classList.add("ts-failed");
      box.appendChild(el("div", "ts-error", r.error));
      return box;
    }
    const count = el("span", "ts-count", fmt(r.count) + (r.count === 1 ? " token" : " tokens"));
    count.dataset.count = String(r.count);
    h.appendChild(count);
    const per = r.count ? (textBytes / r.count).toFixed(2) : "-";
    h.appendChild(el("span", "ts-stats", r.kind + " \u00b7 " + per + " bytes/token"));
    if (r.truncated) {
      box.appendChild(el("p", "ts-note ts-truncated",
        "showing the first " + fmt(r.shown) + " of " + fmt(r.count) + " tokens"));
    }
    if (r.unknown_chars.length) {
      box.appendChild(el("p", "ts-note ts-unknown",
        "this tokenizer cannot represent: "
        + r.unknown_chars.map((c) => JSON.stringify(c)).join(" ")
        + " (drawn as its unknown token)"));
    }
    if (r.count === 0) box.appendChild(el("p", "ts-summary", "empty text: no tokens"));
    const view = el("div", "ts-tokens");
    let n = 0;
    for (const t of r.tokens) {
      if (t.gap) view.appendChild(el("span", "ts-gap", t.gap));
      const cls = ["ts-tok"];
      if (t.unknown) cls.push("ts-unk");
      else if (t.special) cls.push("ts-special");
      else cls.push("ts-c" + (n++ % 5));
      if (t.partial) cls.push("ts-partial");
      const span = el("span", cls.join(" "), t.text);
      span.dataset.id = String(t.id);
      span.dataset.bytes = t.hex.replace(/ /g, "");
      span.title = tokenTitle(t);
      span.appendChild(el("sub", "ts-id", String(t.id)));
      view.appendChild(span);
      if (t.breaks) view.appendChild(document.createTextNode("\n".repeat(t.breaks)));
    }
    if (r.gap_after) view.appendChild(el("span", "ts-gap", r.gap_after));
    box.appendChild(view);
    if (r.splits.length) {
      box.appendChild(el("p", "ts-summary", "characters split between tokens:"));
      const list = el("ul", "ts-splits");
      const seen = new Set();   // each character once, if it is cut the same way again
      for (const s of r.splits) {
        const key = s.char + "|" + s.pieces.map((p) => p.id).join(",");
        if (seen.has(key)) continue;
        seen.add(key);
        const li = el("li", "ts-split");
        li.dataset.char = s.char;
        li.appendChild(el("span", "ts-char", s.char));
        li.appendChild(document.createTextNode(s.codepoint + " = "));
        s.pieces.forEach((p, k) => {
          if (k) li.appendChild(document.createTextNode(" + "));
          li.appendChild(el("code", "ts-piece", p.hex));
          li.appendChild(document.createTextNode(" (id " + p.id + ")"));
        });
        list.appendChild(li);
      }
      box.appendChild(list);
    }
    return box;
  }

  async function run() {
    const my = ++seq;
    const text = textBox.value;
    const names = chosen();
    if (controller) controller.abort();
    controller = new AbortController();
    const body = JSON.stringify({
      text: text, tokenizers: names, special: allowSpecial.checked ? "allow" : "ordinary",
    });
    const size = encoder.encode(body).length;
    if (size > config.max_bytes) {
      results.replaceChildren();
      say("the text is too large: " + fmt(size) + " bytes; the playground takes at most "
        + fmt(config.max_bytes) + " (tokensmith serve --max-bytes N to change it)", true);
      setState("error");
      return;
    }
    if (!names.length) {
      results.replaceChildren();
      say("pick at least one tokenizer", true);
      setState("done");
      return;
    }
    let answer, ok;
    try {
      const resp = await fetch("api/tokenize", {
        method: "POST", headers: {"Content-Type": "application/json"}, body: body,
        signal: controller.signal,
      });
      ok = resp.ok;
      answer = await resp.json();
    } catch (err) {
      if (err.name === "AbortError") return;
      if (my !== seq) return;
      say("could not reach the playground server: " + err.message, true);
      setState("error");
      return;
    }
    if (my !== seq) return;
    if (!ok) {
      results.replaceChildren();
      say(answer.error || "the server refused the request", true);
      setState("error");
      return;
    }
    const textBytes = answer.bytes;
    results.replaceChildren(...answer.results.map((r) => renderResult(r, textBytes)));
    say(fmt(answer.chars) + " characters, " + fmt(textBytes) + " bytes"
      + (answer.chars === 0 ? " (empty text)" : ""), false);
    setState("done");
  }

  function schedule() {
    setState("pending");
    clearTimeout(timer);
    timer = setTimeout(run, 150);
  }

  function build() {
    const box = $("tokenizers");
    config.tokenizers.forEach((t, k) => {
      const label = el("label", "ts-choice");
      const cb = el("input", "ts-pick");
      cb.type = "checkbox";
      cb.value = t.name;
      cb.id = "pick-" + k;
      label.appendChild(cb);
      label.appendChild(document.createTextNode(" " + t.name + " "));
      if (t.ok) {
        cb.checked = true;
        label.appendChild(el("span", "ts-kind", t.kind + ", " + fmt(t.vocab_size) + " tokens"));
      } else {
        cb.disabled = true;
        label.classList.add("ts-unavailable");
        label.appendChild(el("span", "ts-load-error", t.error));
      }
      cb.addEventListener("change", schedule);
      box.appendChild(label);
    });
    textBox.addEventListener("input", schedule);
    allowSpecial.addEventListener("change", schedule);
    showIds.addEventListener("change", () => {
      results.classList.toggle("ts-show-ids", showIds.checked);
    });
    results.classList.toggle("ts-show-ids", showIds.checked);
    schedule();
  }
  build();
})();
"""

_SAMPLE = "Hello, world! Tokenizers cut text into pieces.\n分词器把文本切成词元。 😀👍🏽 naïve café"


def _sha256_b64(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


_STYLE = HTML_CSS + _PAGE_CSS
_CSP = (
    "default-src 'none'; "
    f"script-src 'sha256-{_sha256_b64(_PAGE_JS)}'; "
    f"style-src 'sha256-{_sha256_b64(_STYLE)}'; "
    "connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)


def _json_for_script(data: Any) -> str:
    """JSON that cannot end the ``<script>`` element holding it."""
    return (json.dumps(data, ensure_ascii=False)
            .replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _page(server: PlaygroundServer) -> bytes:
    names = ", ".join(server.entries) or "no tokenizers"
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tokensmith playground</title>
<style>{_STYLE}</style>
</head>
<body data-state="loading">
<header><h1>tokensmith playground</h1>
<p>{html.escape(names)}</p></header>
<main>
<label for="text" class="ts-summary">Type or paste text:</label>
<textarea id="text" spellcheck="false" autofocus>{html.escape(_SAMPLE)}</textarea>
<fieldset id="tokenizers"><legend>tokenizers</legend></fieldset>
<div id="options">
<label><input type="checkbox" id="show-ids"> show ids</label>
<label><input type="checkbox" id="allow-special"> special-token text (e.g. &lt;|endoftext|&gt;)
as special tokens</label>
</div>
<div id="status" role="status" aria-live="polite"></div>
<div id="results"></div>
</main>
<script type="application/json" id="ts-config">{_json_for_script(_config(server))}</script>
<script>{_PAGE_JS}</script>
</body>
</html>
"""
    return page.encode("utf-8")
