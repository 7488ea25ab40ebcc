"""The ``http`` link: a party's HTTP/1.1 connections to one aggregator (the standard library's ``http.client``):
kept alive, each dropped when it has been idle too long, TLS pinned.

Why ``http.client`` and not a client library: a party's CPU per request is a simulation's step time, because a
one-process simulation's parties share one interpreter lock and two cores with the aggregator (gFedNTM sends
30 requests per party per mini-batch step). ``benchmarks/bench_http_client.py`` against a local server on this
machine: a small request cost 0.30 ms in httpx, 0.15 in urllib3 (this module's client until session 27) and
0.08 in ``http.client``; a 3 MB update answered by a 4 MB aggregate 4.0, 1.6 and 1.5 ms. urllib3 runs on
``http.client`` itself; what it adds (a pool on a queue, retry and timeout objects, its response wrapper) is
what we do not need: this module keeps the connections, and ``AggregatorClient`` owns retries.

Idle connections are dropped after ``IDLE_EXPIRY`` seconds, before uvicorn's keep-alive closes them: reusing
one the server is closing at that moment fails with "connection reset" (seen with 1,000 parties).
"""

from __future__ import annotations

import functools
import http.client
import ssl
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

from fedtopic.links.base import AggregatorAt, Answer, TransportFailure
from fedtopic.network.tls import client_verify

IDLE_EXPIRY = 2.0
"""Seconds a kept-alive connection may sit unused before it is dropped instead of reused."""


def _describe(exc: BaseException, connected: bool, seconds: float) -> str:
    """A one-line "Kind: reason" for a failed request; ``connected``: whether it failed after the connection
    was made (a timeout then is the answer's, not the connection's)."""
    if isinstance(exc, ssl.SSLError):
        kind = "TLSError"
    elif isinstance(exc, TimeoutError):
        return f"ReadTimeout: no answer within {seconds:g} s" if connected else "ConnectTimeout: timed out"
    elif not connected:
        kind = "ConnectError"
    else:
        kind = "ConnectionBroken"
    reason = str(exc) or type(exc).__name__
    return f"{kind}: {reason}"


@functools.cache
def _insecure_context() -> ssl.SSLContext:
    """TLS without verification, for ``--insecure``: one per process, and no CA bundle loaded for nothing."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


class HttpConnection:
    """Connections to the server at ``url`` (thread-safe: a request takes an idle connection or opens one; at
    most ``max_connections`` idle ones are kept)."""

    def __init__(self, url: str, timeout: float, *, max_connections: int = 4) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        parts = urlsplit(self.url)
        self._base = parts.path
        self._host, self._port = parts.hostname or "", parts.port
        verify = client_verify(self.url)  # a NetworkError (one line) for plain http to a non-loopback host
        self._tls: ssl.SSLContext | None = None
        if parts.scheme == "https":
            self._tls = verify if isinstance(verify, ssl.SSLContext) else _insecure_context()
        self._max = max_connections
        self._lock = threading.Lock()
        self._idle: list[tuple[http.client.HTTPConnection, float]] = []  # (connection, when last used)

    def _take(self) -> http.client.HTTPConnection:
        """The most recently used idle connection still fresh, else a new (unconnected) one."""
        now, stale = time.monotonic(), []
        conn = None
        with self._lock:
            while self._idle and conn is None:
                candidate, used = self._idle.pop()
                if now - used <= IDLE_EXPIRY:
                    conn = candidate
                else:
                    stale.append(candidate)
        for old in stale:
            old.close()
        if conn is not None:
            return conn
        if self._tls is None:
            return http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)
        return http.client.HTTPSConnection(self._host, self._port, timeout=self.timeout, context=self._tls)

    def _keep(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < self._max:
                self._idle.append((conn, time.monotonic()))
                return
        conn.close()

    def exchange(self, method: str, path: str, *, body: bytes = b"", headers: Mapping[str, str],
                 params: Mapping[str, Any] | None = None, timeout: float | None = None) -> Answer:
        """One request and its whole answer; TransportFailure if none came."""
        target = self._base + path + ("?" + urlencode(params) if params else "")
        seconds = self.timeout if timeout is None else timeout
        conn = self._take()
        connected = conn.sock is not None
        try:
            if not connected:
                conn.connect()  # within ``self.timeout``, the TLS handshake included
                connected = True
            assert conn.sock is not None
            conn.sock.settimeout(seconds)
            conn.request(method, target, body=body or None, headers=dict(headers))
            resp = conn.getresponse()
            data = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            text = _describe(exc, connected, seconds)
            raise TransportFailure(text, "CERTIFICATE_VERIFY_FAILED" in text) from None
        if resp.will_close:
            conn.close()
        else:
            self._keep(conn)
        return Answer(resp.status, data, resp.headers)

    def close(self) -> None:
        """Close every kept-alive connection."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn, _ in idle:
            conn.close()


class HttpLink:
    """The ``http`` link (synchronous): the aggregator at an ``http(s)://`` URL, TLS pinned (``network.tls``)."""

    name = "http"
    mode = "sync"
    summary = "HTTP/1.1 to the aggregator's URL, kept alive, TLS pinned to the consortium's certificate"

    def connect(self, where: AggregatorAt) -> HttpConnection:
        return HttpConnection(where.url, where.timeout)


HTTP = HttpLink()
