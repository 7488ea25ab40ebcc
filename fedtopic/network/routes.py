"""The aggregator's HTTP routes: thin — authenticate (dependencies), call ``Aggregator``, shape the answer."""

from __future__ import annotations

import json
import time
from typing import Annotated

import anyio
from fastapi import APIRouter, Query, Response, status
from pydantic import ValidationError

from fedtopic.crypto.witness import Witness
from fedtopic.network.deps import (
    AggregatorDep,
    BodySha256,
    RawBody,
    RequestParty,
    RoundNumber,
    RoundSignalDep,
    SessionId,
    SettingsDep,
    UpdateParty,
)
from fedtopic.network.errors import Rejection
from fedtopic.network.schemas import (
    Health,
    Problem,
    RecoveryReceipt,
    RoundOut,
    SessionCreate,
    SessionOut,
    SessionProgress,
    StatusOut,
    UpdateReceipt,
    VocabularyIn,
    VocabularyOut,
    WitnessesOut,
    WitnessIn,
    WitnessOut,
)
from fedtopic.network.updates import (
    MAX_WAIT,
    aggregate_response,
    answer_update,
    await_close,
)
from fedtopic.network.wire import PAYLOAD_MEDIA_TYPE
from fedtopic.safe_json import UntrustedJSONError, loads_untrusted

STATUS_MAX_AGE = 1.0  # /status repeats its last answer while nothing changed, for at most this many seconds
_BINARY = {PAYLOAD_MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}}}
_PROBLEMS = {code: {"model": Problem} for code in (401, 403, 404, 409, 413, 422)}

ops = APIRouter()
v1 = APIRouter(prefix="/v1", responses=_PROBLEMS)


@ops.get("/healthz")
def healthz() -> Health:
    """Liveness: the process answers."""
    return Health()


@ops.get("/status")
def status_(aggregator: AggregatorDep) -> StatusOut:
    """Sessions, their open round, who has submitted, and straggler events (no payloads)."""
    return aggregator.status(max_age=STATUS_MAX_AGE)


@v1.post("/sessions", status_code=status.HTTP_201_CREATED, responses={200: {"model": SessionOut}})
def open_session(body: SessionCreate, party: RequestParty, aggregator: AggregatorDep,
                 response: Response) -> SessionOut:
    """Initializer: open a session (201) or re-join an identical one (200); round 0 opens with it."""
    out, created = aggregator.open_session(body, party)
    if not created:
        response.status_code = status.HTTP_200_OK
    return out


@v1.get("/sessions/{session_id}")
def get_session(session_id: SessionId, party: RequestParty, aggregator: AggregatorDep) -> SessionOut:
    """The session's spec (parties, combiner, meta, shared parameters) and its open round."""
    return aggregator.session(session_id, party)


@v1.get("/sessions/{session_id}/progress")
def get_progress(session_id: SessionId, party: RequestParty, aggregator: AggregatorDep) -> SessionProgress:
    """The session's state and the caller's own progress in it (its size does not grow with the session's)."""
    return aggregator.progress(session_id, party)


@v1.post("/sessions/{session_id}/finished")
def session_finished(session_id: SessionId, party: RequestParty, aggregator: AggregatorDep) -> SessionProgress:
    """This party finished its training in the session (the session is finished once every member has)."""
    return aggregator.end_session(session_id, party, "finished")


@v1.post("/sessions/{session_id}/abandoned")
def session_abandoned(session_id: SessionId, party: RequestParty, aggregator: AggregatorDep) -> SessionProgress:
    """This party left the session for a fresh run (`node run --fresh`): the others stop instead of waiting."""
    return aggregator.end_session(session_id, party, "abandoned")


@v1.post("/sessions/{session_id}/vocabulary", openapi_extra={"requestBody": {
    "required": True, "content": {"application/json": {"schema": VocabularyIn.model_json_schema()}}}})
def post_vocabulary(session_id: SessionId, raw: RawBody, party: RequestParty,
                    aggregator: AggregatorDep) -> VocabularyOut:
    """Initializer: post this party's vocabulary (once; re-posting the same one is a no-op). A session that is over
    refuses it before the body is parsed."""
    aggregator.check_open(session_id, party)
    try:
        body = VocabularyIn.model_validate(loads_untrusted(raw))
    except (UntrustedJSONError, ValidationError) as exc:
        raise Rejection(422, "invalid_vocabulary", " ".join(str(exc).split())[:300]) from None
    return aggregator.post_vocabulary(session_id, party, body.words, body.documents, body.document_frequency,
                                      body.term_frequency)


@v1.get("/sessions/{session_id}/vocabulary")
def get_vocabulary(session_id: SessionId, party: RequestParty, aggregator: AggregatorDep) -> VocabularyOut:
    """Initializer: alignment state; the union of all vocabularies (code-point order) once all have posted."""
    return aggregator.vocabulary(session_id, party)


@v1.get("/sessions/{session_id}/rounds/{round}")
def get_round(session_id: SessionId, round: RoundNumber, party: RequestParty, aggregator: AggregatorDep) -> RoundOut:
    """Clock controller: one round's state (who has submitted, deadline, how it closed)."""
    aggregator.session(session_id, party)
    return aggregator.round_info(session_id, round)


@v1.post("/sessions/{session_id}/rounds/{round}/updates", status_code=status.HTTP_202_ACCEPTED,
         response_model=UpdateReceipt,
         openapi_extra={"requestBody": {"required": True, "content": _BINARY}},
         responses={200: {"content": _BINARY, "description": "with wait > 0: the round closed within wait "
                                                              "seconds; its aggregate, contributors in headers"}})
async def submit_update(session_id: SessionId, round: RoundNumber, body: RawBody, sha: BodySha256,
                        party: UpdateParty, aggregator: AggregatorDep, settings: SettingsDep, signal: RoundSignalDep,
                        wait: Annotated[float, Query(ge=0, le=MAX_WAIT, description="then long-poll the "
                                                                                    "aggregate this many seconds")] = 0.0
                        ) -> Response:
    """Data receiver: this party's one update for the open round, signed over session, round and sha256(body).
    202 with the receipt; with ``wait`` > 0 the answer is the round's aggregate (200, as the aggregate route
    gives it) if the round closes within ``wait`` seconds, which saves a synchronous round its second request.
    The receipt (202) still comes if it does not, or if the round waits for a mask recovery message. While the
    party waits, its update is held in memory (``Aggregator.submit``): it is written before a receipt goes out.
    A request in canonical form is answered by ``AuthGate`` without coming here (``network.updates``)."""
    return await answer_update(aggregator, settings, signal, session_id, round, party, body, sha, wait)


@v1.post("/sessions/{session_id}/rounds/{round}/recoveries",
         openapi_extra={"requestBody": {"required": True, "content": _BINARY}})
def post_recovery(session_id: SessionId, round: RoundNumber, body: RawBody, party: RequestParty,
                  aggregator: AggregatorDep) -> RecoveryReceipt:
    """A surviving contributor's mask recovery message for a round that lost parties (signed request)."""
    return aggregator.post_recovery(session_id, round, party, body)


@v1.post("/sessions/{session_id}/rounds/{round}/witness", openapi_extra={"requestBody": {
    "required": True, "content": {"application/json": {"schema": WitnessIn.model_json_schema()}}}})
def post_witness(session_id: SessionId, round: RoundNumber, raw: RawBody, party: RequestParty,
                 aggregator: AggregatorDep) -> WitnessesOut:
    """This party's signed witness of the aggregates of a span of rounds ending at ``round`` (sha256 of what it
    received, one a round), before its next update: the others check it against their own (``crypto.witness``).
    The answer is every member's witness overlapping the span ``check``, which the party checks now."""
    try:
        body = WitnessIn.model_validate(loads_untrusted(raw))
    except (UntrustedJSONError, ValidationError) as exc:
        raise Rejection(422, "invalid_witness", " ".join(str(exc).split())[:300]) from None
    witness = Witness(party, body.first, tuple(body.digests), body.signature)
    if witness.last != round:
        raise Rejection(422, "invalid_witness", f"a witness of rounds {witness.first}-{witness.last} posted as round "
                        f"{round}'s")
    aggregator.post_witness(session_id, witness)
    if body.check is None:
        return WitnessesOut(session_id=session_id, first=round, last=round, witnesses=[])
    return _witnesses_out(session_id, *body.check, aggregator, party)


@v1.get("/sessions/{session_id}/witnesses")
def get_witnesses(session_id: SessionId, party: RequestParty, aggregator: AggregatorDep,
                  first: Annotated[int, Query(ge=0, le=2**31)], last: Annotated[int, Query(ge=0, le=2**31)]
                  ) -> WitnessesOut:
    """Every member's witness overlapping rounds ``first`` … ``last`` so far."""
    return _witnesses_out(session_id, first, last, aggregator, party)


def _witnesses_out(session_id: str, first: int, last: int, aggregator: AggregatorDep, party: str) -> WitnessesOut:
    held = aggregator.witnesses(session_id, first, last, party)
    return WitnessesOut(session_id=session_id, first=first, last=last, witnesses=[
        WitnessOut(party=w.party, first=w.first, digests=list(w.digests), signature=w.signature) for w in held])


def _not_ready(code: str, detail: str, **extra: object) -> Response:
    body = Problem(code=code, detail=detail).model_dump() | extra
    return Response(status_code=425, media_type="application/json", content=json.dumps(body))


@v1.get("/sessions/{session_id}/rounds/{round}/aggregate", response_class=Response,
        responses={200: {"content": _BINARY, "description": "the aggregate; contributors in headers"},
                   425: {"model": Problem, "description": "round still open, or (code recovery_needed, "
                                                          "with dropped and survivors) waiting for this party's "
                                                          "mask recovery message"}})
async def get_aggregate(session_id: SessionId, round: RoundNumber, party: RequestParty, aggregator: AggregatorDep,
                        settings: SettingsDep, signal: RoundSignalDep,
                        wait: Annotated[float, Query(ge=0, le=600, description="long-poll seconds")] = 0.0) -> Response:
    """Data transmitter: the round's aggregate (200); 425 if the round is still open after ``wait`` seconds,
    or at once if it waits for this party's recovery message."""
    until = time.monotonic() + min(wait, settings.max_wait_seconds)
    while True:
        row = aggregator.recent_aggregate(session_id, round, party) or \
            await anyio.to_thread.run_sync(aggregator.aggregate, session_id, round, party)
        if row is not None:
            return aggregate_response(row)
        wanted = None if not aggregator.is_recovering(session_id, round) else \
            await anyio.to_thread.run_sync(aggregator.recovery_wanted, session_id, round, party)
        if wanted is not None:
            return _not_ready("recovery_needed", f"round {round} lost {', '.join(wanted[0])}: send your recovery",
                              dropped=wanted[0], survivors=wanted[1])
        remaining = until - time.monotonic()
        if remaining <= 0:
            return _not_ready("not_ready", f"round {round} is still open")
        await await_close(aggregator, signal, session_id, round, party, remaining)
