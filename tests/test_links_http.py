"""The party's connections (``links.http``) against a plain HTTP/1.1 server on loopback: kept alive and reused,
dropped when idle too long, and every failure a one-line ``TransportFailure`` of the right kind."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from fedtopic.links import http
from fedtopic.links.base import TransportFailure
from fedtopic.links.http import HttpConnection


class Server:
    """Answers every request with its body reversed; ``mode``: "ok", "silent" (reads, never answers) or "drop"
    (closes the connection without a word). Counts the connections it accepted."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.mode, self.accepted, self.stop = "ok", 0, threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        reader = conn.makefile("rb")
        with conn:
            for _ in range(100):  # requests on one kept-alive connection
                line = reader.readline()
                if not line:
                    return
                length = 0
                while (header := reader.readline()) not in (b"\r\n", b""):
                    name, _, value = header.decode().partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                body = reader.read(length)
                if self.mode == "drop":
                    return
                if self.mode == "silent":
                    self.stop.wait(5)
                    return
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nX-Echo: yes\r\n\r\n" % len(body) + body[::-1])

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


def test_requests_reuse_one_kept_alive_connection(server):
    conn = HttpConnection(f"http://127.0.0.1:{server.port}", timeout=5)
    for i in range(5):
        answer = conn.exchange("POST", "/echo", body=b"abc%d" % i, headers={})
        assert (answer.status, answer.body) == (200, b"%dcba" % i)
        assert answer.headers.get("x-echo") == "yes"  # looked up case-insensitively
    assert server.accepted == 1
    conn.close()


def test_a_connection_idle_too_long_is_replaced(server, monkeypatch):
    conn = HttpConnection(f"http://127.0.0.1:{server.port}", timeout=5)
    conn.exchange("GET", "/", headers={})
    monkeypatch.setattr(http, "IDLE_EXPIRY", 0.0)
    conn.exchange("GET", "/", headers={})
    assert server.accepted == 2
    conn.close()


def test_failures_are_one_line_and_say_their_kind(server):
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with pytest.raises(TransportFailure, match=r"^ConnectError: ") as refused:
        HttpConnection(f"http://127.0.0.1:{port}", timeout=2).exchange("GET", "/", headers={})
    assert not refused.value.certificate
    conn = HttpConnection(f"http://127.0.0.1:{server.port}", timeout=5)
    server.mode = "silent"
    with pytest.raises(TransportFailure, match=r"^ReadTimeout: no answer within 0.2 s$"):
        conn.exchange("POST", "/", body=b"x", headers={}, timeout=0.2)
    server.mode = "drop"
    with pytest.raises(TransportFailure, match=r"^ConnectionBroken: ") as broken:
        conn.exchange("POST", "/", body=b"x", headers={})
    assert "\n" not in str(broken.value)
    server.mode = "ok"  # a failed connection is never reused: the next request opens a new one and is answered
    assert conn.exchange("POST", "/", body=b"ok", headers={}).body == b"ko"
    conn.close()
