"""The answer to an update (``POST /v1/sessions/{id}/rounds/{n}/updates``), and the direct path that gives it.

A synchronous round is one update per party, answered by the round's aggregate (``wait`` > 0), so this route
is the aggregator's hot path: gFedNTM sends 30 updates per party per mini-batch step. ``answer_update`` is the
route's whole logic; the FastAPI route (``routes.submit_update``, which also declares the route in the OpenAPI
schema) and ``direct_update`` both call it. ``direct_update`` is what ``AuthGate`` calls once it has
authenticated an update and read its body: for a request in canonical form (a valid session id, a round in
range, no query or only ``wait`` with a number in [0, 600]) it answers without FastAPI's router, dependency
resolution and parameter validation, which cost the aggregator about half its CPU for a small update (a round of
five 200-value updates: 4.8–5.9 ms of CPU through FastAPI, 2.9–3.3 ms direct, ``benchmarks/bench_exchange.py``);
any other request goes on to FastAPI, whose validation gives its usual 422.
"""

from __future__ import annotations

import math
import re
import time
from functools import partial
from typing import Any

import anyio
from starlette.responses import JSONResponse, Response

from fedtopic.network.errors import Rejection
from fedtopic.network.service import Aggregator
from fedtopic.network.settings import AggregatorSettings
from fedtopic.network.signal import RoundSignal, wait_for
from fedtopic.network.store import AggregateRow
from fedtopic.network.wire import (
    H_CLOSE_REASON,
    H_CONTRIBUTORS,
    H_MISSING,
    H_SHA256,
    ID_PATTERN,
    PAYLOAD_MEDIA_TYPE,
)

MAX_SLEEP_SECONDS = 1.0  # a long-poll re-checks at least this often even if no close woke it
MAX_WAIT = 600.0  # the route's bound on ``wait`` (the settings may lower it)
MAX_ROUND = 2**31 - 1
_UPDATE_ROUTE = re.compile(r"^/v1/sessions/([^/]+)/rounds/(\d{1,10})/updates$")
_SESSION_ID = re.compile(ID_PATTERN)
_WAIT_QUERY = re.compile(r"^(?:wait=([0-9]{1,3}(?:\.[0-9]{1,9})?))?$")


def rejection_response(rej: Rejection) -> JSONResponse:
    """A refusal as every route gives it: its status and ``{"code", "detail", **extra}``."""
    return JSONResponse(status_code=rej.status, content={"code": rej.code, "detail": rej.reason, **rej.extra})


def aggregate_response(row: AggregateRow) -> Response:
    """A closed round's aggregate (200): the payload, its contributors and hash in headers."""
    headers = {H_CONTRIBUTORS: ",".join(row.contributors), H_MISSING: ",".join(row.missing),
               H_CLOSE_REASON: row.close_reason, H_SHA256: row.sha256}
    return Response(content=row.payload, media_type=PAYLOAD_MEDIA_TYPE, headers=headers)


async def await_close(aggregator: Aggregator, signal: RoundSignal, session_id: str, round: int, party: str,
                      seconds: float) -> bool:
    """Sleep until ``round`` closes, ``party`` owes a recovery message, or ``seconds`` pass; whether it closed."""
    deadline = time.monotonic() + seconds
    while True:
        event = signal.current()  # before the checks: a close in between still sets it
        if aggregator.is_closed(session_id, round):
            return True
        if time.monotonic() >= deadline:
            return False
        if aggregator.is_recovering(session_id, round) and await anyio.to_thread.run_sync(
                aggregator.recovery_wanted, session_id, round, party) is not None:
            return False  # the lock only off the event loop: a worker holding it must not stall every request
        aggregator.saw(party)  # a party waiting here is alive
        await wait_for(event, min(MAX_SLEEP_SECONDS, deadline - time.monotonic()))


async def answer_update(aggregator: Aggregator, settings: AggregatorSettings, signal: RoundSignal, session_id: str,
                        round: int, party: str, body: bytes, sha: str, wait: float) -> Response:
    """Accept ``party``'s update (signed, hash checked) and answer: 202 with the receipt, or with ``wait`` > 0 the
    round's aggregate (200) if the round closes within ``wait`` seconds. While the party waits its update is held
    in memory (``Aggregator.submit``), and written before a receipt goes out. Rejection for a refused update."""
    receipt = await anyio.to_thread.run_sync(partial(aggregator.submit, durable=wait <= 0), session_id, round,
                                             party, body, sha)
    if wait > 0:
        if receipt.round_closed or await await_close(aggregator, signal, session_id, round, party,
                                                     min(wait, settings.max_wait_seconds)):
            row = aggregator.recent_aggregate(session_id, round, party) or \
                await anyio.to_thread.run_sync(aggregator.aggregate, session_id, round, party)
            if row is not None:
                return aggregate_response(row)
        else:
            await anyio.to_thread.run_sync(aggregator.write_held, session_id, round, party)
    return Response(content=receipt.model_dump_json(), status_code=202, media_type="application/json")


def canonical_update(path: str, query: bytes) -> tuple[str, int, float] | None:
    """(session id, round, wait) of an update request in canonical form, else None (FastAPI validates it)."""
    m = _UPDATE_ROUTE.match(path)
    q = _WAIT_QUERY.match(query.decode("latin-1"))
    if m is None or q is None or not _SESSION_ID.match(m.group(1)) or int(m.group(2)) > MAX_ROUND:
        return None
    wait = float(q.group(1) or 0.0)
    return (m.group(1), int(m.group(2)), wait) if math.isfinite(wait) and wait <= MAX_WAIT else None


async def direct_update(state: Any, scope: dict[str, Any], party: str, sha: str, body: bytes) -> Response | None:
    """The answer to an authenticated update whose body has been read and checked, without FastAPI; None if
    the request is not in canonical form (``canonical_update``) and FastAPI must validate it."""
    parsed = canonical_update(scope["path"], scope.get("query_string", b""))
    if parsed is None:
        return None
    aggregator: Aggregator = state.aggregator
    aggregator.saw(party)
    try:
        return await answer_update(aggregator, state.settings, state.round_signal, *parsed[:2], party, body, sha,
                                   parsed[2])
    except Rejection as rej:
        return rejection_response(rej)
