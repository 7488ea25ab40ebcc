"""A party's HTTP/1.1 connections to one aggregator (urllib3): kept alive, dropped when idle, TLS pinned.

Why urllib3 rather than httpx: the party's CPU per request, measured against a local server on this machine
(``benchmarks/bench_http_client.py``): a 3 MB update answered by a 4 MB aggregate cost 4.7 ms in httpx and 1.2
ms in urllib3 (1.0 in the bare ``http.client``), a small one 0.29 and 0.13 ms. A gFedNTM step sends 30 updates
per party, and a one-process simulation's parties share one interpreter lock, so that CPU is the step's.

Idle connections are dropped after ``IDLE_EXPIRY`` seconds, before uvicorn's keep-alive closes them: reusing
one the server is closing at that moment fails with "connection reset" (seen with 1,000 parties).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import urllib3

from fedtopic.network.tls import client_verify

IDLE_EXPIRY = 2.0
"""Seconds a kept-alive connection may sit unused before it is dropped instead of reused."""


@dataclass(frozen=True)
class Answer:
    """A complete HTTP response: status, body, headers (looked up case-insensitively)."""

    status: int
    body: bytes
    headers: Mapping[str, str]

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


class TransportFailure(Exception):
    """The request got no answer (refused, reset, timed out, TLS failed); ``certificate``: the server's TLS
    certificate was refused, which no retry mends."""

    def __init__(self, message: str, certificate: bool = False) -> None:
        super().__init__(message)
        self.certificate = certificate


_KINDS = ((urllib3.exceptions.NewConnectionError, "ConnectError"), (urllib3.exceptions.ConnectTimeoutError,
          "ConnectTimeout"), (urllib3.exceptions.ReadTimeoutError, "ReadTimeout"), (urllib3.exceptions.SSLError,
          "TLSError"), (urllib3.exceptions.ProtocolError, "ConnectionBroken"))
_WHERE = re.compile(r"^\w*(Connection|Pool)\w*\(host=[^)]*\): ")


def _describe(exc: urllib3.exceptions.HTTPError) -> str:
    """A one-line "Kind: reason" for a failed request (urllib3's messages repeat the pool's host and port)."""
    kind = next((name for cls, name in _KINDS if isinstance(exc, cls)), type(exc).__name__)
    return f"{kind}: {_WHERE.sub('', str(exc))}"


class HttpConnection:
    """Connections to the server at ``url`` (thread-safe: urllib3's pool hands each request its own)."""

    def __init__(self, url: str, timeout: float, *, max_connections: int = 4) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        parts = urlsplit(self.url)
        self._base = parts.path
        verify = client_verify(self.url)  # a NetworkError (one line) for plain http to a non-loopback host
        tls: dict[str, Any] = {}
        if parts.scheme == "https":
            tls = {"ssl_context": verify} if verify else {"cert_reqs": "CERT_NONE", "assert_hostname": False}
            if not verify:  # the user passed --insecure: no warning on every request
                urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        self._options = {"maxsize": max_connections, "block": False, "retries": False, **tls}
        self._lock = threading.Lock()
        self._pool = self._new_pool()
        self._last_used = time.monotonic()
        self._busy = 0  # requests under way (the pool is only replaced while none is)

    def _new_pool(self) -> urllib3.HTTPConnectionPool:
        return urllib3.connection_from_url(self.url, **self._options)

    def request(self, method: str, path: str, *, body: bytes = b"", headers: Mapping[str, str],
                params: Mapping[str, Any] | None = None, timeout: float | None = None) -> Answer:
        """One request and its whole answer; TransportFailure if none came."""
        with self._lock:
            if self._busy == 0 and time.monotonic() - self._last_used > IDLE_EXPIRY:
                self._pool.close()
                self._pool = self._new_pool()
            self._busy += 1
            pool = self._pool
        target = self._base + path + ("?" + urlencode(params) if params else "")
        seconds = self.timeout if timeout is None else timeout
        try:
            resp = pool.urlopen(method, target, body=body or None, headers=dict(headers), redirect=False,
                                timeout=urllib3.Timeout(connect=self.timeout, read=seconds), preload_content=True)
        except urllib3.exceptions.HTTPError as exc:
            text = _describe(exc)
            raise TransportFailure(text, "CERTIFICATE_VERIFY_FAILED" in text) from None
        finally:
            with self._lock:
                self._busy -= 1
                self._last_used = time.monotonic()
        return Answer(resp.status, resp.data, resp.headers)

    def close(self) -> None:
        """Close every kept-alive connection."""
        with self._lock:
            self._pool.close()
