"""Errors of ``fedtopic.network``, all under ``fedtopic.errors.NetworkError``.

Server side, a ``Rejection`` becomes a 4xx answer ``{"code": ..., "detail": ...}``
and nothing is stored. Client side, the same answer comes back as
``AggregatorRejected`` with the same code and reason.
"""

from __future__ import annotations

from typing import Any

from fedtopic.errors import NetworkError

__all__ = [
    "AggregateTimeout",
    "AggregatorRejected",
    "AggregatorUnavailable",
    "InvalidMeta",
    "InvalidPayload",
    "NetworkError",
    "RecoveryRequested",
    "Rejection",
]


class Rejection(NetworkError):
    """The aggregator refuses a request: HTTP ``status``, a stable machine ``code`` and a one-line reason."""

    def __init__(self, status: int, code: str, reason: str, **extra: Any) -> None:
        super().__init__(reason)
        self.status = status
        self.code = code
        self.reason = reason
        self.extra = extra


class InvalidPayload(NetworkError):
    """A combiner found an update payload malformed for the session (shape, dtype, negative/NaN values)."""


class InvalidMeta(NetworkError):
    """A combiner cannot work with a session's payload metadata."""


class AggregatorRejected(NetworkError):
    """The aggregator answered 4xx; ``code`` is its machine-readable reason (e.g. ``duplicate_update``)."""

    def __init__(self, status: int, code: str, reason: str, body: dict[str, Any] | None = None) -> None:
        super().__init__(f"aggregator refused ({status} {code}): {reason}")
        self.status = status
        self.code = code
        self.reason = reason
        self.body = body or {}


class AggregatorUnavailable(NetworkError):
    """The aggregator could not be reached (or kept failing with 5xx) after every retry."""


class AggregateTimeout(NetworkError):
    """A round's aggregate was not ready within the caller's timeout."""


class RecoveryRequested(NetworkError):
    """A masked round lost parties and waits for this party's recovery message (``dropped`` party ids)."""

    def __init__(self, round: int, dropped: list[str], survivors: list[str]) -> None:
        super().__init__(f"round {round} lost {', '.join(dropped)}; the aggregator asks for a recovery message")
        self.round = round
        self.dropped = tuple(dropped)
        self.survivors = tuple(survivors)
