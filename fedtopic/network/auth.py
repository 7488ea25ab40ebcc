"""Server-side checks of signed requests (message formats in ``wire``).

Order of checks, each a 401 unless noted: the party header names a consortium
member (``unknown_party``), the signature recovers that member's address
(``bad_signature``); for non-update requests also the timestamp lies within
the clock-skew window (``stale_request``) and the nonce was not seen within it
(``replayed_request``, 409). Updates need no nonce: their message binds
session, round and payload hash, and a second update for the same round is a
duplicate the data receiver refuses.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Protocol

from fedtopic.network.errors import Rejection
from fedtopic.network.wire import (
    ID_RE,
    recover_signer,
    request_message,
    update_message,
)

_NONCE_RE = re.compile(r"^[0-9a-f]{32}$")


class NonceStore(Protocol):
    """Where seen nonces live (``Store.record_nonce``)."""

    def record_nonce(self, nonce: str, now: float, window: float) -> bool: ...


def _known_party(parties: Mapping[str, str], party: str | None) -> str:
    if party is None:
        raise Rejection(401, "unsigned", "missing X-Fedtopic-Party / X-Fedtopic-Signature headers")
    if not ID_RE.fullmatch(party) or party not in parties:
        raise Rejection(401, "unknown_party", f"party {party[:64]!r} is not in the consortium")
    return party


def _check_signature(parties: Mapping[str, str], party: str, text: str, signature: str | None) -> None:
    if not signature:
        raise Rejection(401, "unsigned", "missing X-Fedtopic-Signature header")
    signer = recover_signer(text, signature)
    if signer is None or signer.lower() != parties[party].lower():
        raise Rejection(401, "bad_signature", f"signature does not match party {party!r}'s key and this request")


def check_update_headers(parties: Mapping[str, str], party: str | None, signature: str | None,
                         session: str, round: int, body_sha256: str, query: str = "") -> str:
    """The authenticated party id of an update whose body hashes to ``body_sha256`` (checked later), sent with the
    query string ``query``, or Rejection; from the headers alone."""
    pid = _known_party(parties, party)
    _check_signature(parties, pid, update_message(session, round, pid, body_sha256, query), signature)
    return pid


def _parse_timestamp(timestamp: str | None, nonce: str | None) -> tuple[int, str]:
    if timestamp is None or nonce is None:
        raise Rejection(401, "unsigned", "missing X-Fedtopic-Timestamp / X-Fedtopic-Nonce headers")
    if not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > 12:
        raise Rejection(401, "stale_request", "X-Fedtopic-Timestamp must be integer unix seconds")
    if not _NONCE_RE.fullmatch(nonce):
        raise Rejection(401, "bad_nonce", "X-Fedtopic-Nonce must be 32 lower-case hex digits")
    return int(timestamp), nonce


class NonceGuard:
    """Nonces seen within the clock-skew window, kept in the aggregator's store so that a restart forgets none."""

    def __init__(self, window_seconds: float, store: NonceStore) -> None:
        self.window = window_seconds
        self.store = store

    def check(self, timestamp: int, nonce: str, now: float | None = None) -> None:
        """Rejection unless ``timestamp`` is within the window of ``now`` and ``nonce`` is new; records it."""
        now = time.time() if now is None else now
        if abs(now - timestamp) > self.window:
            raise Rejection(401, "stale_request",
                            f"request timestamp is {now - timestamp:+.0f} s off the aggregator's clock "
                            f"(window ±{self.window:.0f} s)")
        if not self.store.record_nonce(nonce, now, self.window):
            raise Rejection(409, "replayed_request", "this request (nonce) was already used")


def check_request_headers(parties: Mapping[str, str], guard: NonceGuard, party: str | None,
                          signature: str | None, timestamp: str | None, nonce: str | None, method: str, target: str,
                          body_sha256: str) -> str:
    """The authenticated party id of a non-update request whose body hashes to ``body_sha256`` (checked later),
    or Rejection; from the headers alone. The nonce is recorded only once the signature holds, so garbage cannot
    burn a legitimate party's nonces."""
    pid = _known_party(parties, party)
    ts, nonce = _parse_timestamp(timestamp, nonce)
    _check_signature(parties, pid, request_message(method, target, pid, ts, nonce, body_sha256), signature)
    guard.check(ts, nonce)
    return pid
