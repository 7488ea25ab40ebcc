"""A transport that rides out chain outages: retries with exponential back-off, and says so."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from fedtopic.algorithms.lda.snapshot import ChannelSnapshot
from fedtopic.ledger.errors import ChainUnreachable
from fedtopic.node.transport import ChannelTransport

T = TypeVar("T")


class RetryingTransport:
    """Wraps a ``ChannelTransport``; on ``ChainUnreachable`` waits 1, 2, 4 … s (capped) up to ``give_up_after`` seconds."""

    def __init__(self, inner: ChannelTransport, *, give_up_after: float = 600.0, max_backoff: float = 30.0,
                 say: Callable[[str], None] = print, sleep: Callable[[float], None] = time.sleep) -> None:
        self.inner = inner
        self.party_id = inner.party_id
        self._give_up_after = give_up_after
        self._max_backoff = max_backoff
        self._say = say
        self._sleep = sleep

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        waited, backoff = 0.0, 1.0
        while True:
            try:
                return fn()
            except ChainUnreachable as exc:
                if waited >= self._give_up_after:
                    raise ChainUnreachable(f"{what}: gave up after {waited:.0f} s of retries ({exc})") from None
                self._say(f"party {self.party_id}: chain unreachable while {what}; retrying in {backoff:.0f} s")
                self._sleep(backoff)
                waited += backoff
                backoff = min(backoff * 2, self._max_backoff)

    def publish(self, round: int, n_wk: np.ndarray) -> int:
        return self._call(f"publishing round {round}", lambda: self.inner.publish(round, n_wk))

    def read_latest(self) -> list[ChannelSnapshot]:
        return self._call("reading the channels", self.inner.read_latest)

    def latest_round(self, owner: str) -> int | None:
        return self._call(f"reading {owner}'s latest round", lambda: self.inner.latest_round(owner))

    def bytes_received(self) -> int:
        return self.inner.bytes_received()
