"""The dashboard's HTTP app: one page, its assets, its data under ``/api/`` and a server-sent event stream.

Read-only but for the topic labels (``PUT /api/labels/{id}``), which are saved beside the run. Two gates come
before anything is read, as Jupyter's do:

- the Host header must name a loopback address (``127.0.0.1``, ``localhost``, ``[::1]``) or the address the
  dashboard was bound to, else 421: a page of another site whose name was rebound to 127.0.0.1 (DNS rebinding)
  reaches the port but names its own host;
- every request carries the token made at start (given, or drawn per start): ``?token=`` in the URL the command
  prints, then an HttpOnly SameSite=Strict cookie, or ``Authorization: Bearer``; compared in constant time, else
  401.

Bodies are parsed by ``safe_json`` within a small size (a label is a short string). Every asset is a file of this
package: the page fetches nothing from the internet (its Content-Security-Policy forbids it).
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator
from importlib import resources
from typing import Annotated

import anyio
from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint

from fedtopic.dashboard.board import Board
from fedtopic.runs.json_text import dumps
from fedtopic.safe_json import UntrustedJSONError, loads_untrusted

ASSETS = ("dashboard.js", "dashboard.css", "charts.js")
EVENT_POLL_SECONDS = 1.0  # a round shows within 2 s of its line: ≤ 1 s here, ≤ 0.25 s of refresh, the render
RESEND_SECONDS = 2.0
MAX_STREAM_SECONDS = 6 * 3600.0  # a page reconnects on its own after this (bounded loop)
COOKIE = "fedtopic_dashboard"
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "font-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'")


def asset(name: str) -> bytes:
    """A file of ``fedtopic/dashboard/static``."""
    return resources.files("fedtopic.dashboard").joinpath("static", name).read_bytes()


def _json(data: object) -> Response:
    return Response(dumps(data, indent=None), media_type="application/json",
                    headers={"Cache-Control": "no-store"})


def _parse_cursors(since: str) -> dict[str, int]:
    """``p1:10,p2:12`` → {"p1": 10, "p2": 12}; malformed pieces are ignored (the page then gets everything)."""
    out: dict[str, int] = {}
    for piece in since.split(",")[:10_000]:
        party, _, n = piece.partition(":")
        if party and n.isdigit():
            out[party] = int(n)
    return out


class _TokenGate(BaseHTTPMiddleware):
    """Every request carries the token (query once, then the cookie; or a bearer header), else 401."""

    def __init__(self, app: FastAPI, token: str) -> None:
        super().__init__(app)
        self.token = token.encode()

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        given = request.query_params.get("token") or request.cookies.get(COOKIE) or ""
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            given = auth[7:]
        if not hmac.compare_digest(given.encode(), self.token):
            return JSONResponse({"code": "token_required", "detail": "this dashboard needs the token given at "
                                 "its start (open the URL it printed)"}, status_code=401)
        response = await call_next(request)
        if request.query_params.get("token"):
            response.set_cookie(COOKIE, given, httponly=True, samesite="strict")
        return response


LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
MAX_LABEL_BODY = 4096  # bytes: a label of at most 80 characters, as JSON


def host_name(header: str) -> str:
    """The host of a Host header, without its port (``[::1]:8600`` → ``[::1]``), lower case."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[: header.find("]") + 1] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class _HostGate:
    """A request whose Host names none of ``hosts`` is answered 421 before any route (raw ASGI: nothing read)."""

    def __init__(self, app: object, hosts: frozenset[str]) -> None:
        self.app, self.hosts = app, hosts

    async def __call__(self, scope: dict, receive: object, send: object) -> None:
        if scope["type"] == "http":
            header = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), "")
            if host_name(header) not in self.hosts:
                await JSONResponse({"code": "wrong_host", "detail": "this dashboard answers only to the address it "
                                    "was started on"}, status_code=421)(scope, receive, send)  # type: ignore[arg-type]
                return
        await self.app(scope, receive, send)  # type: ignore[operator]


class _Headers(BaseHTTPMiddleware):
    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        response = await call_next(request)
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        return response


def allowed_hosts(bind: str) -> frozenset[str] | None:
    """The Host names a dashboard bound to ``bind`` answers: the loopback names and ``bind`` itself; None (any,
    the token still gates) when bound to every address (0.0.0.0, ::), whose names it cannot know."""
    if bind in ("0.0.0.0", "::", ""):
        return None
    return LOOPBACK_NAMES | {host_name(f"[{bind}]" if ":" in bind else bind)}


def create_app(board: Board, *, token: str, hosts: frozenset[str] | None = LOOPBACK_NAMES) -> FastAPI:
    """The dashboard over ``board``: ``token`` required on every request; a Host header naming none of ``hosts``
    refused (``allowed_hosts``; None: any)."""
    app = FastAPI(title="fedtopic dashboard", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(_Headers)
    app.add_middleware(_TokenGate, token=token)
    if hosts is not None:
        app.add_middleware(_HostGate, hosts=hosts)

    @app.get("/")
    def page() -> Response:
        return Response(asset("index.html"), media_type="text/html; charset=utf-8")

    @app.get("/favicon.ico")
    def favicon() -> Response:
        return Response(status_code=204)

    @app.get("/static/{name}")
    def static(name: str) -> Response:
        if name not in ASSETS:
            return JSONResponse({"code": "not_found", "detail": "no such asset"}, status_code=404)
        kind = "text/css" if name.endswith(".css") else "text/javascript"
        return Response(asset(name), media_type=f"{kind}; charset=utf-8", headers={"Cache-Control": "no-cache"})

    @app.get("/api/state")
    async def state() -> Response:
        return _json(await anyio.to_thread.run_sync(board.state))

    @app.get("/api/history")
    async def history(since: Annotated[str, Query(max_length=200_000)] = "") -> Response:
        cursors = _parse_cursors(since)
        return _json(await anyio.to_thread.run_sync(lambda: board.history(cursors)))

    @app.get("/api/topics")
    async def topics(party: Annotated[str | None, Query(max_length=64)] = None) -> Response:
        return _json(await anyio.to_thread.run_sync(lambda: board.topics(party)))

    @app.get("/api/ledger")
    async def ledger() -> Response:
        return _json(await anyio.to_thread.run_sync(board.ledger))

    @app.put("/api/labels/{topic}")
    async def put_label(topic: int, request: Request) -> Response:
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_LABEL_BODY:
                return JSONResponse({"code": "too_large", "detail": f"a label's body is at most {MAX_LABEL_BODY} "
                                     "bytes"}, status_code=413)
        try:
            parsed = loads_untrusted(body, max_depth=2)
        except UntrustedJSONError as exc:
            return JSONResponse({"code": "bad_label", "detail": str(exc)}, status_code=422)
        label = parsed.get("label") if isinstance(parsed, dict) else None
        if not isinstance(label, str):
            return JSONResponse({"code": "bad_label", "detail": 'the body is {"label": "…"}'}, status_code=422)
        try:
            labels = await anyio.to_thread.run_sync(lambda: board.set_label(topic, label))
        except ValueError as exc:
            return JSONResponse({"code": "bad_label", "detail": str(exc)}, status_code=422)
        return _json({"labels": labels})

    @app.get("/api/events")
    async def events(request: Request, since: Annotated[str, Query(max_length=200_000)] = "") -> StreamingResponse:
        return StreamingResponse(_stream(request, board, _parse_cursors(since)), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    return app


async def _stream(request: Request, board: Board, cursors: dict[str, int]) -> AsyncIterator[bytes]:
    """Server-sent events: ``update`` with the state and the rows after the page's cursors, whenever something
    changed (looked at every ``EVENT_POLL_SECONDS``) and at least every ``RESEND_SECONDS`` (a party's status
    changes with time alone: silence); ends after ``MAX_STREAM_SECONDS`` (the browser reconnects) or when the
    page goes."""
    sent_version, quiet, waited = -1, 0.0, 0.0
    yield b"retry: 1000\n\n"
    while waited < MAX_STREAM_SECONDS:
        if await request.is_disconnected():
            return
        state = await anyio.to_thread.run_sync(board.state)
        if state["version"] != sent_version or quiet >= RESEND_SECONDS:
            rows = await anyio.to_thread.run_sync(lambda: board.history(cursors))
            cursors.update(rows["cursors"])
            payload = dumps({"state": state, "rows": rows["rows"], "cursors": rows["cursors"]}, indent=None)
            yield f"event: update\ndata: {payload}\n\n".encode()
            sent_version, quiet = state["version"], 0.0
        await anyio.sleep(EVENT_POLL_SECONDS)
        quiet += EVENT_POLL_SECONDS
        waited += EVENT_POLL_SECONDS
