"""A malicious aggregator for the tests: the real one (`fedtopic aggregator serve`, a child process) behind a proxy
that misbehaves where the operator of an aggregator could.

Every request reaches the real aggregator unchanged (the parties' signatures still check there), unless
``intercept`` answers it instead (a dropped update); ``tamper`` sees each answer and may replace it before the
party gets it: swap a sealed secret, edit a session's meta, give one party another aggregate than the others, or
an older one. What it saw is kept in ``exchanges`` for the test to read. The proxy
serves on 127.0.0.1 from a thread of the test process and stops with ``stop``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "content-encoding"}


@dataclass
class Exchange:
    """One request through the proxy and the answer the real aggregator gave."""

    method: str
    path: str
    party: str | None
    body: bytes
    status: int
    headers: dict[str, str]
    answer: bytes


@dataclass
class EvilAggregator:
    """The proxy in front of ``upstream``; ``tamper(exchange)`` returns a new answer body, or (status, body), or
    None to pass the answer on."""

    upstream: str
    tamper: Callable[[Exchange], bytes | tuple[int, bytes] | None]
    intercept: Callable[[str, str, str | None, bytes], tuple[int, bytes] | None] = lambda *_: None
    """Called before forwarding (method, path, party, body): an answer here and the request never reaches the
    real aggregator (a dropped update, say)."""
    exchanges: list[Exchange] = field(default_factory=list)

    def __post_init__(self) -> None:
        proxy = self
        client = httpx.Client(base_url=self.upstream, timeout=httpx.Timeout(180.0, connect=10.0))

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _relay(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                instead = proxy.intercept(self.command, self.path, self.headers.get("X-Fedtopic-Party"), body)
                if instead is not None:
                    self.send_response(instead[0])
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(instead[1])))
                    self.end_headers()
                    self.wfile.write(instead[1])
                    return
                resp = client.request(self.command, self.path, content=body, headers=headers)
                seen = Exchange(self.command, self.path, self.headers.get("X-Fedtopic-Party"), body,
                                resp.status_code, dict(resp.headers), resp.content)
                proxy.exchanges.append(seen)
                changed = proxy.tamper(seen)
                status, answer = (resp.status_code, resp.content) if changed is None else \
                    changed if isinstance(changed, tuple) else (resp.status_code, changed)
                self.send_response(status)
                for k, v in resp.headers.items():
                    if k.lower() not in HOP_BY_HOP:
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            do_GET = do_POST = _relay  # noqa: N815 - http.server's naming

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        daemon=True)
        self._thread.start()
        self._client = client

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()

    def __enter__(self) -> EvilAggregator:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()
