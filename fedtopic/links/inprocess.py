"""The ``in-process`` link: the aggregator in this process, reached without a socket (an ASGI connection adapter).

``InProcessAggregator`` builds the very app ``aggregator serve`` runs (``create_app``: the authenticate-before-reading
gate, the body limits, the routes, the round clock's ticker) and drives it on an event loop of its own in a daemon
thread, under a URL of its own (``inprocess://aggregator-<n>``). The link connects to it by that URL and gives what
``http`` gives a client, ``exchange(...) -> Answer``, by calling the app as an ASGI server would: every request is
signed, authenticated, validated and answered exactly as over HTTP, so a party on an in-process link behaves as one over
the network (the link tests compare the two bit for bit). What it leaves out is the socket, TLS and uvicorn's limits on
slow clients, which an in-process caller cannot exercise anyway. For simulations and tests of one process; a consortium
across processes uses HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from fedtopic.errors import NetworkError
from fedtopic.links.base import AggregatorAt, Answer, TransportFailure
from fedtopic.network.app import create_app
from fedtopic.network.settings import AggregatorSettings

_START_SECONDS = 30.0
_RUNNING: dict[str, InProcessAggregator] = {}  # url → the in-process aggregators up now
_NUMBERS = itertools.count(1)


class _Headers(dict):
    """Response headers looked up case-insensitively (as ``http.client``'s are)."""

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        return super().get(key.lower(), default)

    def __getitem__(self, key: str) -> Any:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return super().__contains__(str(key).lower())


class InProcessAggregator:
    """The aggregator app of ``settings`` on an event loop in a daemon thread; ``shutdown()`` ends its lifespan
    (``close()``, a wire's, keeps it up for its other clients)."""

    def __init__(self, settings: AggregatorSettings) -> None:
        self.url = f"inprocess://aggregator-{next(_NUMBERS)}"
        self.app = create_app(settings)
        self._loop = asyncio.new_event_loop()
        self._stopped = asyncio.Event()
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._serve, name="inprocess-aggregator", daemon=True)
        self._thread.start()
        if not self._ready.wait(_START_SECONDS) or self._failure is not None:
            raise RuntimeError(f"the in-process aggregator did not start ({self._failure})")
        _RUNNING[self.url] = self

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def main() -> None:
            try:
                async with self.app.router.lifespan_context(self.app):
                    self._ready.set()
                    await self._stopped.wait()
            except BaseException as exc:  # told to the constructor, which is waiting
                self._failure = exc
                self._ready.set()

        self._loop.run_until_complete(main())
        self._loop.close()

    async def _call(self, method: str, target: str, query: str, body: bytes,
                    headers: Mapping[str, str]) -> Answer:
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                 "scheme": "http", "path": target, "raw_path": target.encode(), "root_path": "",
                 "query_string": query.encode(), "client": ("127.0.0.1", 0), "server": ("127.0.0.1", 0),
                 "headers": [(k.lower().encode("latin-1"), str(v).encode("latin-1")) for k, v in headers.items()]}
        sent, status, out, parts = False, 500, _Headers(), []
        done = asyncio.Event()

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await done.wait()  # as a server would: the client is gone only once its answer is complete
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                for k, v in message.get("headers", []):
                    out[k.decode("latin-1").lower()] = v.decode("latin-1")
            elif message["type"] == "http.response.body":
                parts.append(bytes(message.get("body", b"")))
                if not message.get("more_body"):
                    done.set()

        await self.app(scope, receive, send)
        done.set()
        return Answer(status, b"".join(parts), out)

    def exchange(self, method: str, path: str, *, body: bytes = b"", headers: Mapping[str, str],
                 params: Mapping[str, Any] | None = None, timeout: float | None = None) -> Answer:
        """One request answered by the app (TransportFailure if it is closed or no answer came in ``timeout``)."""
        if self._stopped.is_set() or self._loop.is_closed():
            raise TransportFailure("ConnectError: the in-process aggregator is closed")
        future = asyncio.run_coroutine_threadsafe(
            self._call(method, path, urlencode(params) if params else "", body, headers), self._loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise TransportFailure(f"ReadTimeout: no answer within {timeout:g} s") from None

    def close(self) -> None:
        """Nothing per client: the aggregator stays up until ``shutdown``."""

    def shutdown(self) -> None:
        """End the app's lifespan (its ticker) and the loop's thread."""
        _RUNNING.pop(self.url, None)
        if self._loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._stopped.set)
        self._thread.join(timeout=10)

    def __enter__(self) -> InProcessAggregator:
        return self

    def __exit__(self, *_: object) -> None:
        self.shutdown()


class InProcessLink:
    """The ``in-process`` link (synchronous): an ``InProcessAggregator`` of this process, by its URL."""

    name = "in-process"
    mode = "sync"
    summary = "the aggregator app of this process, through its gate and routes without a socket (tests, notebooks)"

    def connect(self, where: AggregatorAt) -> InProcessAggregator:
        found = _RUNNING.get(where.url.rstrip("/"))
        if found is None:
            raise NetworkError(f"no in-process aggregator at {where.url} in this process (the in-process link "
                               "reaches only an InProcessAggregator started here)")
        return found


IN_PROCESS = InProcessLink()
