"""The aggregator application: ``create_app(settings)`` wires store, service, routes and middleware.

Uvicorn runs it (``fedtopic aggregator serve``); tests run the same app in a
subprocess. A background task closes rounds whose straggler deadline passed.
Every refusal is JSON ``{"code", "detail"}`` with a 4xx status.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from fedtopic.network.auth import NonceGuard
from fedtopic.network.errors import Rejection
from fedtopic.network.gate import AuthGate
from fedtopic.network.limits import BodyLimitMiddleware
from fedtopic.network.routes import ops, v1
from fedtopic.network.service import Aggregator
from fedtopic.network.settings import AggregatorSettings
from fedtopic.network.signal import RoundSignal
from fedtopic.network.store import Store
from fedtopic.network.updates import rejection_response
from fedtopic.version import __version__

TICK_SECONDS = 0.2
log = logging.getLogger("fedtopic.aggregator")


def _problem(status: int, code: str, detail: str, **extra: object) -> JSONResponse:
    return rejection_response(Rejection(status, code, detail, **extra))


async def _on_rejection(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, Rejection)
    return rejection_response(exc)


async def _on_invalid_request(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
    where = ".".join(str(p) for p in first["loc"])
    more = f" (+{len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    return _problem(422, "invalid_request", f"{where}: {first['msg']}{more}")


async def _on_http(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    return _problem(exc.status_code, f"http_{exc.status_code}", str(exc.detail))


async def _ticker(aggregator: Aggregator) -> None:
    """Clock controller heartbeat: close rounds whose straggler deadline has passed."""
    while True:
        await asyncio.sleep(TICK_SECONDS)
        try:
            await anyio.to_thread.run_sync(aggregator.tick)
        except Exception:  # keep ticking; the failure is logged with its traceback
            log.exception("closing a round after its deadline failed")


def create_app(settings: AggregatorSettings) -> FastAPI:
    """The aggregator for ``settings`` (opens or resumes ``settings.data_dir``)."""
    store = Store(settings.data_dir)
    aggregator = Aggregator(store, settings.parties, protection=settings.protection,
                            default_deadline=settings.straggler_deadline_seconds,
                            memory_budget=settings.memory_budget_bytes)

    signal = RoundSignal()
    aggregator.on_change = signal.notify

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        task = asyncio.create_task(_ticker(aggregator))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            # the store stays open with the app (a lifespan may run more than once); every write is committed

    app = FastAPI(title="fedtopic aggregator", version=__version__, lifespan=lifespan,
                  description="CSFed aggregator (paper Fig. 3): sessions, synchronous rounds, signed updates, "
                              "pluggable combiners.")
    app.state.settings = settings
    app.state.aggregator = aggregator
    app.state.round_signal = signal
    app.state.nonce_guard = NonceGuard(settings.max_clock_skew_seconds, store)
    app.add_exception_handler(Rejection, _on_rejection)
    app.add_exception_handler(RequestValidationError, _on_invalid_request)
    app.add_exception_handler(StarletteHTTPException, _on_http)
    app.add_middleware(AuthGate, state=lambda: app.state)  # inner: authenticate, then read a bounded body
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)  # outer: every route's hard cap
    app.include_router(ops)
    app.include_router(v1)
    return app
