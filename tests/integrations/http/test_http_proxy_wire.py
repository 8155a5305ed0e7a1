"""The HTTP proxy's upstream client on the wire: framings, interim answers, closes and keep-alive races.

The upstream here is a raw socket server that answers each path with fixed bytes, so each test sends exactly
the HTTP/1.1 it is about (a HEAD that announces a length, chunks, a body ended by a close, 100 Continue, a
kept-alive connection the server drops, an answer cut off, bytes that are not HTTP).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")
pytest.importorskip("httptools")

from chaoskit_http import serve  # noqa: E402

import chaoskit  # noqa: E402
from chaoskit import telemetry  # noqa: E402

PLAN = {"seed": 1, "faults": []}


def _answer(path: str, method: str, body: bytes) -> tuple[bytes, bool]:
    """The raw answer for ``path``, and whether the server closes the connection after it."""
    if path == "/head":
        return b"HTTP/1.1 200 OK\r\ncontent-length: 1234\r\ncontent-type: text/plain\r\n\r\n", False
    if path == "/chunked":
        return b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", False
    if path == "/until-close":
        return b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nall of it, then a close", True
    if path == "/continue":
        return b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok", False
    if path == "/cut":
        return b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly ten b", True
    if path == "/garbage":
        return b"SSH-2.0-OpenSSH_9.6\r\n\r\n", True
    if path == "/once":  # answers, then drops the kept-alive connection as if its idle timeout passed
        return b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nonce", True
    if path == "/echo":
        text = b"%d %s" % (len(body), method.encode())
        return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(text), text), False
    return b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", False


def _read_request(conn: socket.socket, buf: bytes) -> tuple[str, str, bytes, bytes] | None:
    """One request from ``conn``: method, path, body, and the bytes read past it."""
    while b"\r\n\r\n" not in buf:
        data = conn.recv(65536)
        if not data:
            return None
        buf += data
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    if fields.get("transfer-encoding") == "chunked":
        body = b""
        while True:
            while b"\r\n" not in rest:
                rest += conn.recv(65536)
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line, 16)
            while len(rest) < size + 2:
                rest += conn.recv(65536)
            body, rest = body + rest[:size], rest[size + 2 :]
            if size == 0:
                return method, path, body, rest
    length = int(fields.get("content-length", "0"))
    while len(rest) < length:
        rest += conn.recv(65536)
    return method, path, rest[:length], rest[length:]


@contextlib.contextmanager
def raw_upstream() -> Iterator[tuple[str, list[str]]]:
    """A raw HTTP/1.1 server on 127.0.0.1; yields its URL and the list of ``METHOD /path`` it was sent."""
    seen: list[str] = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def handle(conn: socket.socket) -> None:
        buf = b""
        with conn:
            while (got := _read_request(conn, buf)) is not None:
                method, path, body, buf = got
                seen.append(f"{method} {path}")
                answer, close = _answer(path, method, body)
                conn.sendall(answer)
                if close:
                    return

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", seen
    finally:
        listener.close()


@pytest.fixture
def proxied() -> Iterator[tuple[httpx.Client, list[str]]]:
    with raw_upstream() as (up, seen), serve(PLAN, upstream=up) as url, httpx.Client(base_url=url, timeout=10) as c:
        yield c, seen


def test_head_answers_announce_a_length_and_the_connection_stays_usable(proxied: tuple[httpx.Client, list]) -> None:
    client, seen = proxied
    head = client.head("/head")
    assert head.status_code == 200 and head.headers["content-length"] == "1234" and head.content == b""
    assert client.get("/plain").text == "ok"  # the same upstream connection, not waiting for 1234 bytes
    assert seen == ["HEAD /head", "GET /plain"]


def test_chunked_and_close_delimited_bodies_arrive_whole(proxied: tuple[httpx.Client, list]) -> None:
    client, _ = proxied
    assert client.get("/chunked").text == "hello world"
    assert client.get("/until-close").text == "all of it, then a close"
    assert client.get("/plain").text == "ok"  # a new upstream connection after the close


def test_an_interim_100_continue_is_not_the_answer(proxied: tuple[httpx.Client, list]) -> None:
    client, _ = proxied
    resp = client.post("/continue", content=b"x")
    assert (resp.status_code, resp.text) == (201, "ok")


def test_a_kept_alive_connection_the_upstream_dropped_is_retried_once(proxied: tuple[httpx.Client, list]) -> None:
    client, seen = proxied
    for _ in range(3):
        assert client.get("/once").text == "once"
        assert client.post("/echo", content=b"abc").text == "3 POST"
    assert seen.count("POST /echo") == 3  # each write reached the upstream exactly once


def test_an_answer_cut_off_upstream_is_cut_off_for_the_client(proxied: tuple[httpx.Client, list]) -> None:
    client, _ = proxied
    with pytest.raises(httpx.RemoteProtocolError):
        client.get("/cut")
    assert client.get("/plain").text == "ok"  # the proxy keeps answering


def test_an_upstream_that_does_not_speak_http_is_a_502(proxied: tuple[httpx.Client, list]) -> None:
    client, _ = proxied
    resp = client.get("/garbage")
    assert resp.status_code == 502
    assert "RemoteProtocolError" in resp.json()["error"]["message"]
    assert client.get("/plain").text == "ok"


def test_request_bodies_stream_in_either_framing(proxied: tuple[httpx.Client, list]) -> None:
    client, _ = proxied
    big = b"z" * (3 * 1024 * 1024)  # over the 64 KiB recorded up front: the rest streams
    assert client.post("/echo", content=big).text == f"{len(big)} POST"

    def pieces() -> Iterator[bytes]:  # no Content-Length: sent upstream chunked
        for _ in range(40):
            yield b"y" * 10_000

    assert client.post("/echo", content=pieces()).text == "400000 POST"


def test_every_call_is_one_attempt_whatever_the_framing() -> None:
    paths = ("/chunked", "/until-close", "/head", "/plain")
    with raw_upstream() as (up, _), telemetry.capture() as cap, chaoskit.episode("wire", plan=PLAN) as ep:
        with serve(PLAN, upstream=up) as url, httpx.Client(base_url=url, timeout=10) as client:
            for path in paths:
                client.request("HEAD" if path == "/head" else "GET", path).raise_for_status()
        ep.finish("done")
    assert [a.attempt for a in ep.attempts] == [1, 1, 1, 1]  # four tools (routes), called once each
    assert [s.attributes["url.path"] for s in cap.attempt_spans()] == list(paths)
