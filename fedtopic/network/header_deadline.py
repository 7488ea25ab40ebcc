"""Drop a connection whose request headers do not arrive whole within a deadline (slowloris).

uvicorn times out only an idle keep-alive connection: a client that opens a connection and sends nothing, or
trickles a header byte every few seconds, holds its socket (and a file descriptor) for as long as it likes, and
300 of them were not dropped within 15 s. This protocol arms a timer when a connection opens and whenever the
first bytes of a next request arrive, and cancels it when the request's headers are complete (uvicorn starts the
request's cycle); a timer that fires closes the connection. Bodies are the gate's (``--read-timeout``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEADER_SECONDS = 10.0


class _HeaderDeadline:
    """Mixed in before a uvicorn HTTP protocol class (its ``cycle`` is set when a request's headers are in)."""

    header_seconds: float = HEADER_SECONDS
    cycle: Any
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport

    def connection_made(self, transport: asyncio.Transport) -> None:
        self._header_timer: asyncio.TimerHandle | None = None
        super().connection_made(transport)  # type: ignore[misc]
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)  # type: ignore[misc]

    def data_received(self, data: bytes) -> None:
        before = self.cycle
        super().data_received(data)  # type: ignore[misc]
        if self.cycle is not before:  # a request's headers are in
            self._cancel()
        elif self._header_timer is None and (self.cycle is None or self.cycle.response_complete):
            self._arm()  # the first bytes of a next request on a kept-alive connection

    def _arm(self) -> None:
        self._header_timer = self.loop.call_later(self.header_seconds, self._expire)

    def _cancel(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _expire(self) -> None:
        self._header_timer = None
        if self.cycle is None or self.cycle.response_complete:
            self.transport.close()


def header_deadline_protocol(seconds: float) -> type:
    """uvicorn's httptools protocol, dropping connections whose headers take over ``seconds``."""
    return type("HeaderDeadlineProtocol", (_HeaderDeadline, HttpToolsProtocol), {"header_seconds": float(seconds)})
