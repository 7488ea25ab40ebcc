"""Request body cap as pure ASGI middleware: refuses an oversize body before it is read in full.

A declared ``Content-Length`` above the cap is answered 413 at once, without
reading a byte of the body. A body without a length (chunked) is counted as it
streams in and cut off with 413 the moment it passes the cap. Nothing reaches
the routes, so nothing is stored.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class _TooLarge(Exception):
    pass


class BodyLimitMiddleware:
    """413 ``payload_too_large`` for any request body over ``max_bytes``."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def _reject(self, send: Send, why: str) -> None:
        body = json.dumps({"code": "payload_too_large", "detail": why}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None:
            if not declared.isdigit():
                body = json.dumps({"code": "bad_request", "detail": "Content-Length is not a number"}).encode()
                await send({"type": "http.response.start", "status": 400,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": body})
                return
            if int(declared) > self.max_bytes:
                await self._reject(send, f"body of {int(declared)} bytes exceeds the aggregator's cap of "
                                         f"{self.max_bytes} bytes")
                return
        seen = 0
        started = False

        async def counted_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except _TooLarge:
            if not started:
                await self._reject(send, f"body exceeds the aggregator's cap of {self.max_bytes} bytes")
