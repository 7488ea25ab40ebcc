"""Authenticate before reading: pure ASGI middleware in front of every ``/v1`` route.

Order, each step before the next costs anything:

1. **Headers only.** The party header names a member, the signature (over a
   message that carries the body's SHA-256 from ``X-Fedtopic-Content-Sha256``)
   recovers that member's address; for non-update requests the timestamp is in
   the window and the nonce is new. Anyone without a member's key is refused
   here, and the server has read no byte of the body.
2. **The route's bound.** A JSON route takes at most what it can legitimately
   carry (a session spec: ``max_json_bytes``; a vocabulary:
   ``max_vocabulary_bytes``); an update or a recovery at most what the
   session's declared shape and protection allow (``update_bound``, after the
   session and the membership are checked). A declared Content-Length above it
   is refused at once; a streamed body is cut the moment it passes it.
3. **Streaming.** The body is read with a running SHA-256 and compared with
   the signed hash at the end; a body that has not fully arrived within
   ``read_timeout_seconds`` is dropped (408).
4. **Strict JSON** for JSON routes: no NaN, no ±Infinity, no number that
   overflows a float, nesting counted on the bytes before parsing (``safe_json``). Only then does FastAPI parse the body.

5. **An update in canonical form is answered here** (``network.updates.direct_update``): the route's own
   logic, without FastAPI's router and dependency resolution, half the aggregator's CPU for a small update.

The authenticated party goes to the routes in ``scope["state"]["party"]``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fedtopic.network.auth import (
    NonceGuard,
    check_request_headers,
    check_update_headers,
)
from fedtopic.network.errors import Rejection
from fedtopic.network.updates import direct_update
from fedtopic.network.wire import H_CONTENT_SHA256, sha256_hex
from fedtopic.safe_json import MAX_DEPTH, UntrustedJSONError, loads_untrusted

log = logging.getLogger("fedtopic.aggregator")

_SESSION_ROUTE = re.compile(r"^/v1/sessions/([^/]+)(/.*)?$")
_ROUND_ROUTE = re.compile(r"^/v1/sessions/([^/]+)/rounds/(\d{1,10})/(updates|recoveries)$")
_WITNESS_ROUTE = re.compile(r"/rounds/\d{1,10}/witness")
WITNESS_MAX_BYTES = 8192  # up to MAX_SPAN (64) digests of 64 hex, a signature, a span to check: about 4.5 kB
_EMPTY_SHA256 = sha256_hex(b"")


@dataclass(frozen=True)
class RouteBody:
    """What a route may receive: ``kind`` "update" | "request", its bound in bytes, and whether it is JSON."""

    kind: str
    bound: int
    is_json: bool


class _Disconnected(Exception):
    pass


def check_strict_json(body: bytes) -> None:
    """Rejection 422 unless ``body`` is UTF-8 strict JSON nested at most ``MAX_DEPTH`` deep (``safe_json``: the
    depth is counted on the bytes before any parser recurses)."""
    try:
        loads_untrusted(body, MAX_DEPTH)
    except UntrustedJSONError as exc:
        raise Rejection(422, "invalid_json", str(exc)) from None


def _is_update(scope: Scope) -> bool:
    m = _ROUND_ROUTE.match(scope["path"]) if scope["method"] == "POST" else None
    return m is not None and m.group(3) == "updates"


class AuthGate:
    """The middleware (see module docstring). ``app_state()`` gives the app's state (aggregator, guard, settings)."""

    def __init__(self, app: ASGIApp, *, state: Callable[[], Any]) -> None:
        self.app = app
        self.state = state

    async def _problem(self, send: Send, rej: Rejection) -> None:
        body = json.dumps({"code": rej.code, "detail": rej.reason, **rej.extra}).encode()
        await send({"type": "http.response.start", "status": rej.status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})

    def _route(self, method: str, path: str, party: str) -> RouteBody:
        st = self.state()
        settings, aggregator = st.settings, st.aggregator
        if method in ("GET", "HEAD", "DELETE", "OPTIONS"):
            return RouteBody("request", 0, False)
        m = _ROUND_ROUTE.match(path)
        if m:
            bound = min(aggregator.update_bound(m.group(1), party), settings.max_body_bytes)
            return RouteBody("update" if m.group(3) == "updates" else "request", bound, False)
        if path == "/v1/sessions":
            return RouteBody("request", settings.max_json_bytes, True)
        m = _SESSION_ROUTE.match(path)
        if m and m.group(2) == "/vocabulary":
            return RouteBody("request", settings.max_vocabulary_bytes, True)
        if m and _WITNESS_ROUTE.fullmatch(m.group(2) or ""):
            return RouteBody("request", WITNESS_MAX_BYTES, True)
        return RouteBody("request", 0, False)

    def _authenticate(self, scope: Scope, headers: dict[bytes, bytes]) -> tuple[str, str]:
        """(party, the body's signed SHA-256) from the headers alone."""
        st = self.state()

        def h(name: str) -> str | None:
            raw = headers.get(name.lower().encode())
            return None if raw is None else raw.decode("latin-1")

        method, path = scope["method"], scope["path"]
        body_sha = h(H_CONTENT_SHA256)
        declared = headers.get(b"content-length")
        if body_sha is None:
            if method in ("GET", "HEAD") or declared == b"0":
                body_sha = _EMPTY_SHA256
            else:
                raise Rejection(401, "unsigned", f"missing {H_CONTENT_SHA256} header (the signed hash of the body)")
        if not re.fullmatch(r"[0-9a-f]{64}", body_sha):
            raise Rejection(401, "bad_signature", f"{H_CONTENT_SHA256} must be 64 lower-case hex digits")
        m = _ROUND_ROUTE.match(path)
        query = scope.get("query_string", b"").decode("latin-1")  # the whole request target is signed
        if method == "POST" and m and m.group(3) == "updates":
            party = check_update_headers(st.aggregator.parties, h("X-Fedtopic-Party"), h("X-Fedtopic-Signature"),
                                         m.group(1), int(m.group(2)), body_sha, query)
        else:
            guard: NonceGuard = st.nonce_guard
            party = check_request_headers(st.aggregator.parties, guard, h("X-Fedtopic-Party"),
                                          h("X-Fedtopic-Signature"), h("X-Fedtopic-Timestamp"),
                                          h("X-Fedtopic-Nonce"), method, path + ("?" + query if query else ""),
                                          body_sha)
        return party, body_sha

    def _admit(self, scope: Scope, headers: dict[bytes, bytes]) -> tuple[str, str, RouteBody]:
        """Steps 1 and 2 in one worker-thread hop: (party, signed body hash, the route's bound)."""
        party, body_sha = self._authenticate(scope, headers)
        return party, body_sha, self._route(scope["method"], scope["path"], party)

    async def _read_body(self, receive: Receive, bound: int, declared: bytes | None, expected_sha: str) -> bytes:
        if declared is not None:
            if not declared.isdigit():
                raise Rejection(400, "bad_request", "Content-Length is not a number")
            if int(declared) > bound:
                raise Rejection(413, "payload_too_large",
                                f"body of {int(declared)} bytes exceeds this route's bound of {bound} bytes")
        digest, chunks, size = hashlib.sha256(), [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Disconnected
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > bound:
                raise Rejection(413, "payload_too_large", f"body exceeds this route's bound of {bound} bytes")
            digest.update(chunk)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        if digest.hexdigest() != expected_sha:
            raise Rejection(401, "bad_signature", "the body does not match its signed SHA-256")
        return b"".join(chunks)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        try:
            if _is_update(scope):  # no store, no lock: one signature recovery (40 µs), not worth a thread hop
                party, body_sha, route = self._admit(scope, headers)
            else:  # a nonce is recorded in the store
                party, body_sha, route = await anyio.to_thread.run_sync(self._admit, scope, headers)
            timeout = self.state().settings.read_timeout_seconds
            try:
                with anyio.fail_after(timeout):
                    body = await self._read_body(receive, route.bound, headers.get(b"content-length"), body_sha)
            except TimeoutError:
                log.info("%s %s: body not complete after %.0f s; dropped", scope["method"], scope["path"], timeout)
                raise Rejection(408, "request_timeout", f"the body did not arrive within {timeout:.0f} s") from None
            if route.is_json:
                check_strict_json(body)
        except Rejection as rej:
            await self._problem(send, rej)
            return
        except _Disconnected:
            log.info("%s %s: client disconnected before sending its whole body", scope["method"], scope["path"])
            return
        if route.kind == "update":
            answer = await direct_update(self.state(), scope, party, body_sha, body)
            if answer is not None:
                await answer(scope, receive, send)
                return
        # the hash just checked, and the body itself: a route reading it back through Request.body() would copy
        # it once more (Starlette joins it with the empty chunk that ends its stream)
        scope.setdefault("state", {}).update(party=party, body_sha256=body_sha, body=body)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
