"""FastAPI dependencies as typed ``Annotated`` aliases: the routes only declare what they need."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Path, Request

from fedtopic.network.auth import NonceGuard, verify_request, verify_update
from fedtopic.network.service import Aggregator
from fedtopic.network.settings import AggregatorSettings
from fedtopic.network.wire import ID_PATTERN

SessionId = Annotated[str, Path(pattern=ID_PATTERN, description="session id")]
RoundNumber = Annotated[int, Path(ge=0, le=2**31 - 1, description="round number, from 0")]
PartyHeader = Annotated[str | None, Header(alias="X-Fedtopic-Party", description="signing party's id")]
SignatureHeader = Annotated[str | None, Header(alias="X-Fedtopic-Signature", description="0x EIP-191 signature")]
TimestampHeader = Annotated[str | None, Header(alias="X-Fedtopic-Timestamp", description="unix seconds")]
NonceHeader = Annotated[str | None, Header(alias="X-Fedtopic-Nonce", description="32 hex digits, used once")]


def _aggregator(request: Request) -> Aggregator:
    return request.app.state.aggregator


def _settings(request: Request) -> AggregatorSettings:
    return request.app.state.settings


def _guard(request: Request) -> NonceGuard:
    return request.app.state.nonce_guard


async def _raw_body(request: Request) -> bytes:
    return await request.body()  # capped by BodyLimitMiddleware; cached for JSON parsing


AggregatorDep = Annotated[Aggregator, Depends(_aggregator)]
SettingsDep = Annotated[AggregatorSettings, Depends(_settings)]
RawBody = Annotated[bytes, Depends(_raw_body)]


def _request_party(request: Request, aggregator: AggregatorDep, guard: Annotated[NonceGuard, Depends(_guard)],
                   body: RawBody, party: PartyHeader = None, signature: SignatureHeader = None,
                   timestamp: TimestampHeader = None, nonce: NonceHeader = None) -> str:
    return verify_request(aggregator.parties, guard, party, signature, timestamp, nonce, request.method,
                          request.url.path, body)


def _update_party(aggregator: AggregatorDep, session_id: SessionId, round: RoundNumber, body: RawBody,
                  party: PartyHeader = None, signature: SignatureHeader = None) -> str:
    return verify_update(aggregator.parties, party, signature, session_id, round, body)


RequestParty = Annotated[str, Depends(_request_party)]
"""The party that signed this (non-update) request."""
UpdateParty = Annotated[str, Depends(_update_party)]
"""The party that signed this update payload for this session and round."""
