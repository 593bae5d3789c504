"""`tokensmith serve`: the JSON API over plain HTTP, the command line, and the
page itself in a real headless Chromium (see tests/_browser.py)."""

from __future__ import annotations

import http.client
import io
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tokensmith as ts
from tokensmith import cli
from tokensmith.errors import ConfigError
from tokensmith.serve import (
    PlaygroundServer,
    RemoteAccessWarning,
    is_loopback,
    make_server,
)

from ._browser import BrowserPage, browser_fixture, browser_page_fixture  # noqa: F401
from .conftest import asset

ENGLISH = [
    "The playground shows how a tokenizer cuts the text you paste into it. ",
    "Every token has an id, and some tokens hold only part of a character. ",
    "Counting tokens before sending a prompt saves money and surprises. ",
    "lower lowest newer newest wider widest, the quick brown fox jumps over the dog. ",
]
MIXED = "Hello tokens! 分词器 😀 <script>alert(1)</script> naïve\n\tend"
XSS = "<script>alert(1)</script>"


# ------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def byte_tok() -> ts.Tokenizer:
    # English only: Chinese and emoji stay single bytes, so their characters split
    return ts.train(texts=ENGLISH * 20, vocab_size=300, special_tokens=["<|endoftext|>"])


@pytest.fixture(scope="module")
def char_tok() -> ts.Tokenizer:
    return ts.train(texts=ENGLISH * 20, vocab_size=80, byte_level=False,
                    end_of_word_suffix="</w>")


def _start(server: PlaygroundServer) -> Iterator[PlaygroundServer]:
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture(scope="module")
def server(byte_tok: ts.Tokenizer, char_tok: ts.Tokenizer,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlaygroundServer]:
    missing = tmp_path_factory.mktemp("nothing") / "missing-tokenizer.json"
    srv = make_server({"bytes": byte_tok, "chars": char_tok, "broken": str(missing)},
                      port=0, max_bytes=50_000)
    yield from _start(srv)


def post(server: PlaygroundServer, body: Any, *, raw: bytes | None = None,
         content_type: str = "application/json",
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    data = raw if raw is not None else json.dumps(body).encode("utf-8")
    req = urllib.request.Request(server.url + "api/tokenize", data=data, method="POST",
                                 headers={"Content-Type": content_type, **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        assert e.headers.get("Content-Type", "").startswith("application/json")
        return e.code, json.loads(e.read())


def get(server: PlaygroundServer, path: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(server.url + path.lstrip("/"), timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def result(answer: dict[str, Any], name: str) -> dict[str, Any]:
    (r,) = [r for r in answer["results"] if r["name"] == name]
    return r


# ------------------------------------------------------------------ HTTP API


def test_page_is_one_self_contained_document(server: PlaygroundServer) -> None:
    status, headers, body = get(server, "/")
    assert status == 200
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    csp = headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "'unsafe-inline'" not in csp
    page = body.decode("utf-8")
    assert page.startswith("<!DOCTYPE html>")
    for outside in ("<script src", "<link", "http://", "https://", "@import"):
        assert outside not in page, outside
    assert "bytes" in page and "chars" in page


def test_names_are_escaped_in_the_page(byte_tok: ts.Tokenizer) -> None:
    evil = "</script><script>alert(1)</script>"
    srv = make_server({evil: byte_tok}, port=0)
    for s in _start(srv):
        _, _, body = get(s, "/")
        page = body.decode("utf-8")
        assert evil not in page
        assert page.count("<script") == 2  # the JSON data block and the page's own script
        status, answer = post(s, {"text": "hi", "tokenizers": [evil]})
        assert status == 200 and answer["results"][0]["name"] == evil


def test_tokenize_matches_encode(server: PlaygroundServer, byte_tok: ts.Tokenizer,
                                 char_tok: ts.Tokenizer) -> None:
    status, answer = post(server, {"text": MIXED, "tokenizers": ["bytes", "chars"]})
    assert status == 200
    assert answer["chars"] == len(MIXED)
    assert answer["bytes"] == len(MIXED.encode("utf-8"))
    for name, tok in (("bytes", byte_tok), ("chars", char_tok)):
        r = result(answer, name)
        ids = tok.encode(MIXED, disallowed_special=())
        assert r["ok"] and r["count"] == len(ids) == r["shown"] and not r["truncated"]
        assert [t["id"] for t in r["tokens"]] == ids
    r = result(answer, "bytes")
    # byte-level: the bytes of the tokens are the text's bytes, in order
    assert bytes.fromhex("".join(t["hex"] for t in r["tokens"])) == MIXED.encode("utf-8")
    for t in r["tokens"]:
        assert MIXED[t["start"]:t["end"]].encode("utf-8").find(bytes.fromhex(t["hex"])) >= 0
    partial = [t for t in r["tokens"] if t["partial"]]
    assert partial and all(t["text"].startswith("<0x") for t in partial)
    split = {s["char"]: s for s in r["splits"]}
    for ch in "分词器😀":
        assert ch in split, ch
        joined = "".join(p["hex"] for p in split[ch]["pieces"]).replace(" ", "")
        assert bytes.fromhex(joined).decode("utf-8") == ch
        assert len(split[ch]["pieces"]) > 1
        assert split[ch]["codepoint"] == f"U+{ord(ch):04X}"
    assert "".join(t["text"] for t in r["tokens"]).count(XSS) == 1


def test_characters_a_tokenizer_cannot_represent(server: PlaygroundServer) -> None:
    status, answer = post(server, {"text": "newer 😀 widest 分", "tokenizers": ["chars"]})
    assert status == 200
    r = result(answer, "chars")
    assert r["unknown_chars"] == ["😀", "分"]
    unknown = [t for t in r["tokens"] if t["unknown"]]
    assert [t["source"] for t in unknown] == ["😀", "分"]
    assert any(t.get("gap") == "␣" for t in r["tokens"])  # the dropped spaces are drawn


def test_empty_text_and_lone_surrogates(server: PlaygroundServer) -> None:
    status, answer = post(server, {"text": "", "tokenizers": ["bytes", "chars"]})
    assert status == 200 and answer["chars"] == 0
    assert [(r["count"], r["tokens"]) for r in answer["results"]] == [(0, []), (0, [])]
    # JSON can carry a lone surrogate, which UTF-8 cannot: it becomes U+FFFD
    status, answer = post(server, {"text": "a\ud800b", "tokenizers": ["bytes"]})
    assert status == 200
    r = result(answer, "bytes")
    assert bytes.fromhex("".join(t["hex"] for t in r["tokens"])) == "a\ufffdb".encode()


def test_special_token_text(server: PlaygroundServer, byte_tok: ts.Tokenizer) -> None:
    text = "end<|endoftext|>"
    eot = byte_tok.special_tokens["<|endoftext|>"]
    _, plain = post(server, {"text": text, "tokenizers": ["bytes"]})
    _, special = post(server, {"text": text, "tokenizers": ["bytes"], "special": "allow"})
    plain_ids = [t["id"] for t in result(plain, "bytes")["tokens"]]
    special_toks = result(special, "bytes")["tokens"]
    assert eot not in plain_ids
    assert special_toks[-1]["id"] == eot and special_toks[-1]["special"]


def test_tokenizer_that_failed_to_load(server: PlaygroundServer) -> None:
    status, _, body = get(server, "/api/tokenizers")
    assert status == 200
    listed = {t["name"]: t for t in json.loads(body)["tokenizers"]}
    assert listed["bytes"]["ok"] and listed["bytes"]["vocab_size"] == 300
    assert listed["bytes"]["kind"] == "byte-level BPE"
    broken = listed["broken"]
    assert not broken["ok"] and "could not load" in broken["error"]
    assert "missing-tokenizer.json" in broken["error"]
    status, answer = post(server, {"text": "hi", "tokenizers": ["broken", "bytes"]})
    assert status == 200
    assert result(answer, "broken") == {"name": "broken", "ok": False, "error": broken["error"]}
    assert result(answer, "bytes")["ok"]


@pytest.mark.parametrize(
    ("body", "raw", "content_type", "status", "words"),
    [
        (None, b"{not json", "application/json", 400, "not valid JSON"),
        (None, b"\xff\xfe", "application/json", 400, "not UTF-8"),
        (["a list"], None, "application/json", 400, "JSON object"),
        ({"text": 5}, None, "application/json", 400, '"text" must be a string'),
        ({"text": "x", "tokenizers": "bytes"}, None, "application/json", 400, "list"),
        ({"text": "x", "tokenizers": ["nope"]}, None, "application/json", 400,
         "unknown tokenizer 'nope'; this playground has: bytes, chars, broken"),
        ({"text": "x", "special": "maybe"}, None, "application/json", 400, '"special"'),
        ({"text": "x"}, None, "text/plain", 415, "application/json"),
    ],
)
def test_bad_requests_get_json_errors(server: PlaygroundServer, body: Any, raw: bytes | None,
                                      content_type: str, status: int, words: str) -> None:
    code, answer = post(server, body, raw=raw, content_type=content_type)
    assert code == status
    assert answer["status"] == status
    assert words in answer["error"]


def test_too_large_is_413(server: PlaygroundServer) -> None:
    code, answer = post(server, {"text": "x" * 60_000})
    assert code == 413
    assert "too large" in answer["error"] and "--max-bytes" in answer["error"]
    # the server still answers afterwards
    assert post(server, {"text": "ok", "tokenizers": ["bytes"]})[0] == 200


def test_protocol_errors(server: PlaygroundServer) -> None:
    host, port = "127.0.0.1", server.port
    conn = http.client.HTTPConnection(host, port, timeout=10)
    conn.putrequest("POST", "/api/tokenize")
    conn.putheader("Content-Type", "application/json")
    conn.endheaders()  # no Content-Length, no body
    resp = conn.getresponse()
    assert resp.status == 411 and "Content-Length" in json.loads(resp.read())["error"]
    conn.close()
    conn = http.client.HTTPConnection(host, port, timeout=10)
    conn.request("GET", "/", headers={"Host": "attacker.example"})  # DNS rebinding
    resp = conn.getresponse()
    assert resp.status == 403 and "this machine" in json.loads(resp.read())["error"]
    conn.close()
    status, _, body = get(server, "/nowhere")
    assert status == 404 and json.loads(body)["error"] == "no such page: /nowhere"
    code, answer = post(server, {"text": "x"}, headers={"Host": "localhost:1"})
    assert code == 200  # a loopback name is fine


def test_truncated_view_keeps_the_full_count(byte_tok: ts.Tokenizer) -> None:
    text = "newest widest " * 40
    for s in _start(make_server([("b", byte_tok)], port=0, max_shown=5)):
        _, answer = post(s, {"text": text})
        r = result(answer, "b")
        assert r["truncated"] and r["shown"] == 5 == len(r["tokens"])
        assert r["count"] == len(byte_tok.encode(text))


def test_only_loopback_without_a_flag(byte_tok: ts.Tokenizer) -> None:
    with pytest.raises(PermissionError, match="allow_remote"):
        make_server({"b": byte_tok}, host="0.0.0.0", port=0)
    with pytest.warns(RemoteAccessWarning, match="anyone who can reach"):
        srv = make_server({"b": byte_tok}, host="0.0.0.0", port=0, allow_remote=True)
    srv.server_close()
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert is_loopback("127.8.9.10")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    assert not is_loopback("::")


def test_real_tokenizers_over_http() -> None:
    cl100k = asset("cl100k_base", "cl100k_base.tiktoken")
    bert = asset("bert-base-uncased", "vocab.txt")
    llama2 = asset("llama2", "tokenizer.model")
    toks = {"cl100k": ts.load(cl100k), "bert": ts.load(bert), "llama2": ts.load(llama2)}
    text = "Tokenizers differ: 分词 😀 𓀀 naïve <script>"
    for s in _start(make_server(toks, port=0)):
        _, answer = post(s, {"text": text})
        for name, tok in toks.items():
            r = result(answer, name)
            assert [t["id"] for t in r["tokens"]] == tok.encode(text, disallowed_special=())
        assert "𓀀" in {x["char"] for x in result(answer, "cl100k")["splits"]}
        assert "😀" in {x["char"] for x in result(answer, "llama2")["splits"]}  # byte fallback
        assert "𓀀" in result(answer, "bert")["unknown_chars"]


# ------------------------------------------------------------------ robustness


def _connect(server: PlaygroundServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


def _read_until_closed(conn: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (which it must do
    well within the socket's 10 s timeout, else socket.timeout fails the test)."""
    out = b""
    while chunk := conn.recv(65536):
        out += chunk
    return out


def _parse_answer(raw: bytes) -> tuple[int, dict[str, str], dict[str, Any]]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert headers["content-type"] == "application/json; charset=utf-8"
    assert len(body) == int(headers["content-length"])
    return status, headers, json.loads(body)


def _raw_request(server: PlaygroundServer, data: bytes) -> tuple[int, dict[str, Any]]:
    with _connect(server) as conn:
        conn.sendall(data)
        status, _, answer = _parse_answer(_read_until_closed(conn))
    assert answer["status"] == status
    return status, answer


def _eventually(check: Any, seconds: float = 10.0) -> bool:
    """Whether ``check()`` becomes true within ``seconds`` (polled, not timed)."""
    end = time.monotonic() + seconds
    while not check():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def test_stalled_connections_are_closed_and_hold_no_threads(byte_tok: ts.Tokenizer) -> None:
    before = threading.active_count()
    srv = make_server({"b": byte_tok}, port=0, timeout=0.5, workers=4)
    for s in _start(srv):
        conns = []
        for k in range(50):
            conn = _connect(s)
            if k % 2:  # the start of a request, then nothing
                conn.sendall(b"POST /api/tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            conns.append(conn)
        peak = threading.active_count()
        answers = []
        for conn in conns:
            answers.append(_read_until_closed(conn))  # the server closes each of them
            conn.close()
            peak = max(peak, threading.active_count())
        # the accepting thread and 4 workers, not one thread per connection
        assert peak <= before + 1 + 4
        assert 1 <= s.worker_threads <= 4
        assert all(a == b"" for a in answers[0::2])  # idle: closed without a word
        for raw in answers[1::2]:  # part of a request came: 408 in JSON
            status, headers, answer = _parse_answer(raw)
            assert status == 408 == answer["status"] and headers["connection"] == "close"
            assert "did not arrive within 0.5 s" in answer["error"]
            assert "--timeout" in answer["error"]
        assert post(s, {"text": "still here"})[0] == 200
    # closing the server stops its workers
    assert _eventually(lambda: threading.active_count() <= before), threading.enumerate()


def test_a_request_trickled_in_is_cut_off(byte_tok: ts.Tokenizer) -> None:
    """A client that keeps sending one byte at a time still has only ``timeout`` seconds
    in all (a timeout per read alone would wait for it forever)."""
    request = b"GET /api/tokenizers" + b"?x" * 5_000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    srv = make_server({"b": byte_tok}, port=0, timeout=0.3, workers=1)
    for s in _start(srv):
        with _connect(s) as conn:
            sent = 0
            while sent < len(request):
                if select.select([conn], [], [], 0.01)[0]:
                    break  # the server answered (or closed)
                try:
                    conn.sendall(request[sent:sent + 1])
                except OSError:
                    break
                sent += 1
            assert sent < len(request)
            status, _, answer = _parse_answer(_read_until_closed(conn))
        assert status == 408 and "did not arrive" in answer["error"]


def test_kept_alive_connection_serves_requests_then_idles_out(byte_tok: ts.Tokenizer) -> None:
    srv = make_server({"b": byte_tok}, port=0, timeout=0.5)
    for s in _start(srv):
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
        for text in ("one", "two", "three"):  # one connection, several requests
            conn.request("POST", "/api/tokenize", body=json.dumps({"text": text}),
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            assert resp.status == 200
            assert result(json.loads(resp.read()), "b")["count"] == len(byte_tok.encode(text))
        assert conn.sock is not None
        assert conn.sock.recv(1) == b""  # then closed, once idle for the timeout
        conn.close()


def test_deeply_nested_json_is_a_400(byte_tok: ts.Tokenizer) -> None:
    srv = make_server({"b": byte_tok}, port=0)  # the default max_bytes: 1 MiB
    for s in _start(srv):
        code, answer = post(s, None, raw=b"[" * 200_000)
        assert code == 400 == answer["status"]
        assert "nested too deeply" in answer["error"]
        closed = b"[" * 5_000 + b"]" * 5_000  # valid, deep, and not an object
        code, answer = post(s, None, raw=closed)
        assert code == 400 and ("nested too deeply" in answer["error"]
                                or "JSON object" in answer["error"])
        assert post(s, {"text": "fine"})[0] == 200


def test_many_requests_at_once_all_get_answers(server: PlaygroundServer,
                                               byte_tok: ts.Tokenizer) -> None:
    n = 200
    start = threading.Barrier(n)
    answers: list[Any] = [None] * n

    def client(k: int) -> None:
        text = f"request number {k} of many"
        try:
            start.wait(30)
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            conn.request("POST", "/api/tokenize",
                         body=json.dumps({"text": text, "tokenizers": ["bytes"]}),
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            answers[k] = (resp.status, json.loads(resp.read()), text)
            conn.close()
        except Exception as e:  # recorded, and reported by the assertions below
            answers[k] = e

    threads = [threading.Thread(target=client, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    failures = [a for a in answers if not isinstance(a, tuple)]
    assert failures == []
    for status, answer, text in answers:
        assert status == 200
        assert result(answer, "bytes")["count"] == len(byte_tok.encode(text))
    assert server.worker_threads <= server.workers


def test_busy_server_answers_503(byte_tok: ts.Tokenizer) -> None:
    srv = make_server({"b": byte_tok}, port=0, timeout=30, workers=1, max_waiting=1)
    for s in _start(srv):
        held = [_connect(s), _connect(s)]  # one being served, one waiting
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
        conn.request("GET", "/api/tokenizers")
        resp = conn.getresponse()
        assert resp.status == 503 and resp.getheader("Retry-After") == "1"
        assert resp.getheader("Content-Type") == "application/json; charset=utf-8"
        answer = json.loads(resp.read())
        assert answer["status"] == 503 and "busy" in answer["error"]
        conn.close()
        for c in held:  # once they leave, the server answers again
            c.close()
        assert _eventually(lambda srv=s: get(srv, "/api/tokenizers")[0] == 200)
        assert s.worker_threads == 1


def test_oversized_body_sent_in_full_gets_413(byte_tok: ts.Tokenizer) -> None:
    """The 413 arrives although the client goes on sending a body far larger than
    the limit (the server reads and drops it rather than resetting the connection)."""
    size = 8 << 20
    srv = make_server({"b": byte_tok}, port=0, max_bytes=1000)
    for s in _start(srv):
        with _connect(s) as conn:
            conn.sendall(b"POST /api/tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         b"Content-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % size)

            def send_body() -> None:
                try:
                    conn.sendall(b'{"text": "' + b"x" * (size - 12) + b'"}')
                except OSError:
                    pass

            sender = threading.Thread(target=send_body)
            sender.start()
            raw = _read_until_closed(conn)
            sender.join(30)
        status, headers, answer = _parse_answer(raw)
        assert status == 413 == answer["status"] and headers["connection"] == "close"
        assert "too large" in answer["error"] and "8.0 MiB" in answer["error"]
        assert post(s, {"text": "small"})[0] == 200


@pytest.mark.parametrize(
    ("request_bytes", "status", "words"),
    [
        (b"GARBAGE\r\n\r\n", 400, "Bad request syntax"),
        (b"PUT /api/tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 501, "PUT"),
        (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", 414, "Too Long"),
        (b"GET / HTTP/1.1\r\n" + b"X-Long: " + b"b" * 70_000 + b"\r\n\r\n", 431, "too long"),
        (b"POST /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n"
         b"Connection: close\r\n\r\n{}", 404, "no such API: POST /nowhere"),
        (b"POST /api/tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n"
         b"Content-Type: application/json\r\n\r\n{}", 400, "ended after 2 of the 10 bytes"),
    ],
)
def test_protocol_errors_are_json(server: PlaygroundServer, request_bytes: bytes,
                                  status: int, words: str) -> None:
    with _connect(server) as conn:
        conn.sendall(request_bytes)
        if "ended after" in words:
            conn.shutdown(socket.SHUT_WR)  # the body ends early
        code, _, answer = _parse_answer(_read_until_closed(conn))
    assert code == status == answer["status"]
    assert words.lower() in answer["error"].lower()


class PanicException(BaseException):
    """Like PyO3's: a Rust panic reaches Python as a BaseException, not an Exception."""


@pytest.mark.parametrize("fault", [RuntimeError, PanicException])
def test_internal_error_is_a_json_500(byte_tok: ts.Tokenizer, monkeypatch: pytest.MonkeyPatch,
                                      fault: type[BaseException]) -> None:
    log = io.StringIO()
    srv = make_server({"b": byte_tok}, port=0, log=log, workers=1)

    def broken(*args: Any) -> Any:
        raise fault("a bug")

    monkeypatch.setattr(srv, "tokenize", broken)
    for s in _start(srv):
        for _ in range(3):  # and the one worker survives it
            code, answer = post(s, {"text": "x"})
            assert code == 500 == answer["status"]
            assert answer["error"].startswith(f"internal error ({fault.__name__})")
            assert "a bug" not in answer["error"]  # the details go to the log
        assert get(s, "/api/tokenizers")[0] == 200
        assert s.worker_threads == 1
    assert f"{fault.__name__}: a bug" in log.getvalue() and "Traceback" in log.getvalue()


def test_server_limits_are_checked(byte_tok: ts.Tokenizer) -> None:
    for bad in ({"timeout": 0}, {"timeout": -1.0}, {"timeout": float("inf")},
                {"timeout": float("nan")}, {"workers": 0}, {"max_waiting": -1}):
        with pytest.raises(ConfigError):
            make_server({"b": byte_tok}, port=0, **bad)
    srv = make_server({"b": byte_tok}, port=0)
    assert (srv.request_timeout, srv.workers, srv.max_waiting) == (5.0, 16, 256)
    assert srv.request_queue_size == 128
    assert srv.server_address[0] == "127.0.0.1"
    srv.server_close()


# ------------------------------------------------------------------ command line


def test_cli_refuses_a_public_address_without_the_flag(tmp_path: Path, byte_tok: ts.Tokenizer,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = byte_tok.save(tmp_path / "tok.json")
    assert cli.main(["serve", str(path), "--host", "0.0.0.0", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "not a loopback address" in err and "--allow-remote" in err


def test_cli_timeout_option(tmp_path: Path, byte_tok: ts.Tokenizer,
                            monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    path = byte_tok.save(tmp_path / "tok.json")
    assert cli.main(["serve", str(path), "--port", "0", "--timeout", "0"]) == 2
    assert "--timeout must be a positive number" in capsys.readouterr().err
    seen: dict[str, Any] = {}

    def fake_make_server(*args: Any, **kwargs: Any) -> PlaygroundServer:
        seen.update(kwargs)
        raise PermissionError("stop here")

    import tokensmith.serve

    monkeypatch.setattr(tokensmith.serve, "make_server", fake_make_server)
    assert cli.main(["serve", str(path), "--port", "0", "--timeout", "2.5"]) == 2
    assert seen["timeout"] == 2.5
    seen.clear()
    cli.main(["serve", str(path), "--port", "0"])
    assert seen["timeout"] == 5.0  # the default


def test_cli_with_nothing_to_serve(monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "_default_tokenizers", lambda: [])
    assert cli.main(["serve", "--port", "0"]) == 2
    assert "tokensmith demo" in capsys.readouterr().err


def test_cli_every_tokenizer_broken(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["serve", str(tmp_path / "none.json"), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "could not load" in err and "none of the tokenizers" in err


def test_cli_defaults_to_the_demo_tokenizer(tmp_path: Path, byte_tok: ts.Tokenizer,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    byte_tok.save(tmp_path / "tokensmith-demo" / "tokenizer.json")
    monkeypatch.chdir(tmp_path)
    assert cli._default_tokenizers()[0] == "tokensmith-demo"


def test_cli_serves_until_interrupted(tmp_path: Path, byte_tok: ts.Tokenizer) -> None:
    path = byte_tok.save(tmp_path / "tok.json")
    # (faulthandler: should the server hang, SIGABRT makes it print every
    # thread's stack, and the failure shows where it stopped)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"}
    # (Ctrl-C's default action restored in the child: a shell that starts
    # a job in the background, as CI may run this suite, leaves SIGINT
    # ignored, the ignoring is inherited, and Python then never raises
    # KeyboardInterrupt)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tokensmith", "serve", str(path), "missing.json", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("tokensmith playground: http://127.0.0.1:"), line
        url = line.split()[2]
        with urllib.request.urlopen(url + "api/tokenizers", timeout=10) as resp:
            listed = json.loads(resp.read())["tokenizers"]
        assert [t["ok"] for t in listed] == [True, False]
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            _, stuck = proc.communicate(timeout=30)
            pytest.fail(f"the server did not stop within 30 s of SIGINT; its stderr:\n{stuck}")
        assert code == 0
        err = proc.stderr.read() if proc.stderr else ""
        assert "warning: could not load missing.json" in err
        assert "GET /api/tokenizers" in err  # one log line per request
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ------------------------------------------------------------------ in the browser


def _wait_done(bp: BrowserPage) -> None:
    bp.page.wait_for_function("() => document.body.dataset.state === 'done'")


def _panel_ids(bp: BrowserPage, name: str) -> list[int]:
    return [int(x) for x in bp.page.eval_on_selector_all(
        f'section.ts-result[data-name="{name}"] .ts-tok', "els => els.map(e => e.dataset.id)")]


def _panel_shown_ids(bp: BrowserPage, name: str) -> list[int]:
    return [int(x) for x in bp.page.eval_on_selector_all(
        f'section.ts-result[data-name="{name}"] .ts-tok .ts-id',
        "els => els.map(e => e.innerText)")]


def _panel_text(bp: BrowserPage, name: str) -> str:
    """The drawn token texts, without the ids."""
    return str(bp.page.eval_on_selector_all(
        f'section.ts-result[data-name="{name}"] .ts-tok',
        "els => els.map(e => e.firstChild.textContent).join('')"))


def _count(bp: BrowserPage, name: str) -> int:
    loc = bp.page.locator(f'section.ts-result[data-name="{name}"] .ts-count')
    shown = loc.inner_text()
    assert shown.endswith("tokens") or shown.endswith("token")
    return int(shown.split()[0].replace(",", ""))


def test_playground_in_a_browser(server: PlaygroundServer, browser_page: BrowserPage,
                                 byte_tok: ts.Tokenizer, char_tok: ts.Tokenizer,
                                 tmp_path: Path) -> None:
    page = browser_page.page
    page.goto(server.url)
    _wait_done(browser_page)  # the sample text is tokenized on load
    # the broken tokenizer is listed, cannot be picked, and says why
    broken = page.locator("label.ts-unavailable")
    assert "could not load" in broken.inner_text()
    assert page.locator("label.ts-unavailable input").is_disabled()

    page.fill("#text", MIXED)
    _wait_done(browser_page)
    for name, tok in (("bytes", byte_tok), ("chars", char_tok)):
        ids = tok.encode(MIXED, disallowed_special=())
        assert _count(browser_page, name) == len(ids)
        assert _panel_ids(browser_page, name) == ids
    # the XSS text is drawn as text, and nothing ran
    assert XSS in _panel_text(browser_page, "bytes")
    assert page.locator("#results script").count() == 0
    # characters whose bytes were split show their byte pieces
    splits = page.locator('section[data-name="bytes"] li.ts-split')
    chars = splits.evaluate_all("els => els.map(e => e.dataset.char)")
    assert chars == ["分", "词", "器", "😀", "ï"]
    emoji = page.locator('section[data-name="bytes"] li.ts-split[data-char="😀"] code.ts-piece')
    assert " ".join(emoji.all_inner_texts()) == "f0 9f 98 80"
    partial = page.locator('section[data-name="bytes"] .ts-tok.ts-partial')
    assert partial.count() >= 4 and partial.first.inner_text().startswith("<0x")
    # the character-level tokenizer cannot represent the emoji or the Chinese
    note = page.locator('section[data-name="chars"] .ts-unknown').inner_text()
    assert "😀" in note and "分" in note

    # ids: hidden until asked for, then the ones shown are the ids
    first_id = page.locator('section[data-name="bytes"] .ts-tok .ts-id').first
    assert not first_id.is_visible()
    page.check("#show-ids")
    assert first_id.is_visible()
    assert _panel_shown_ids(browser_page, "bytes") == byte_tok.encode(MIXED)

    # picking tokenizers
    page.uncheck('input.ts-pick[value="chars"]')
    _wait_done(browser_page)
    assert page.locator("section.ts-result").evaluate_all(
        "els => els.map(e => e.dataset.name)") == ["bytes"]
    page.uncheck('input.ts-pick[value="bytes"]')
    _wait_done(browser_page)
    assert "pick at least one tokenizer" in page.inner_text("#status")
    page.check('input.ts-pick[value="chars"]')
    page.check('input.ts-pick[value="bytes"]')
    _wait_done(browser_page)

    # Chinese and emoji typed key by key, as a user would
    page.fill("#text", "")
    page.locator("#text").press_sequentially("中文 😀 ok", delay=5)
    _wait_done(browser_page)
    assert _panel_ids(browser_page, "bytes") == byte_tok.encode("中文 😀 ok")

    browser_page.screenshot(tmp_path / "playground.png")
    assert browser_page.dialogs == []
    assert browser_page.errors == []


def test_playground_bad_input_in_a_browser(server: PlaygroundServer,
                                           browser_page: BrowserPage) -> None:
    page = browser_page.page
    page.goto(server.url)
    _wait_done(browser_page)
    page.fill("#text", "")
    _wait_done(browser_page)
    assert _count(browser_page, "bytes") == 0
    assert "empty text" in page.inner_text("#status")
    # huge pasted text: a clear error, and no request the server would refuse
    page.evaluate("""() => {
        const t = document.getElementById('text');
        t.value = 'pasted text '.repeat(10000);
        t.dispatchEvent(new Event('input'));
    }""")
    page.wait_for_function("() => document.body.dataset.state === 'error'")
    status = page.inner_text("#status")
    assert "too large" in status and "50,000" in status
    assert page.locator("section.ts-result").count() == 0
    # and it recovers
    page.fill("#text", "small again")
    _wait_done(browser_page)
    assert _count(browser_page, "bytes") > 0
    assert browser_page.dialogs == [] and browser_page.errors == []


def test_playground_with_real_tokenizers_in_a_browser(browser_page: BrowserPage) -> None:
    cl100k = asset("cl100k_base", "cl100k_base.tiktoken")
    bert = asset("bert-base-uncased", "vocab.txt")
    toks = {"cl100k_base": ts.load(cl100k), "bert-base-uncased": ts.load(bert)}
    text = f"Hello, world! 你好世界 😀👍🏽 {XSS}"
    for s in _start(make_server(toks, port=0)):
        browser_page.page.goto(s.url)
        _wait_done(browser_page)
        browser_page.page.fill("#text", text)
        _wait_done(browser_page)
        for name, tok in toks.items():
            ids = tok.encode(text)
            assert _count(browser_page, name) == len(ids)
            assert _panel_ids(browser_page, name) == ids
    assert browser_page.dialogs == []


def test_browser_reports_missing_dependencies(monkeypatch: pytest.MonkeyPatch) -> None:
    """The skip (or, when required, the failure) names how to install what is missing."""
    from . import _browser

    monkeypatch.delenv(_browser.REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y chromium"):
        _browser.browser_unavailable("no `chromium` on PATH")
    monkeypatch.setenv(_browser.REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="pip install playwright"):
        _browser.browser_unavailable("no `chromium` on PATH")


def test_json_for_script_cannot_close_the_element() -> None:
    from tokensmith.serve import _json_for_script

    out = _json_for_script({"a": "</script><!-- \u2028"})
    assert "<" not in out and ">" not in out and "\u2028" not in out
    assert json.loads(out) == {"a": "</script><!-- \u2028"}


def test_warnings_are_not_raised_for_loopback(byte_tok: ts.Tokenizer) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_server({"b": byte_tok}, port=0).server_close()
