"""A node that cannot reach the chain retries with back-off, says so, and gives up clearly."""

from __future__ import annotations

import numpy as np
import pytest

from fedtopic.ledger.errors import ChainUnreachable
from fedtopic.node.retrying import RetryingTransport
from fedtopic.node.transport import InMemoryBoard


class Flaky:
    """A board channel that fails the first ``failures`` calls as an unreachable chain would."""

    def __init__(self, failures: int):
        self.inner = InMemoryBoard({"p1": ["p2"], "p2": ["p1"]}).channel("p1", (3, 2))
        self.party_id = "p1"
        self.failures = failures

    def _maybe_fail(self):
        if self.failures > 0:
            self.failures -= 1
            raise ChainUnreachable("connection refused")

    def publish(self, round, n_wk):
        self._maybe_fail()
        return self.inner.publish(round, n_wk)

    def read_latest(self):
        self._maybe_fail()
        return self.inner.read_latest()

    def latest_round(self, owner):
        self._maybe_fail()
        return self.inner.latest_round(owner)

    def bytes_received(self):
        return self.inner.bytes_received()


def test_retries_with_exponential_backoff_then_succeeds():
    said, slept = [], []
    t = RetryingTransport(Flaky(3), say=said.append, sleep=slept.append, max_backoff=3)
    assert t.publish(0, np.ones((3, 2), dtype=np.int32)) > 0
    assert slept == [1, 2, 3]
    assert len(said) == 3 and all("chain unreachable while publishing round 0" in s for s in said)
    assert t.latest_round("p1") == 0


def test_gives_up_with_one_clear_error():
    t = RetryingTransport(Flaky(100), give_up_after=5, say=lambda _: None, sleep=lambda _: None)
    with pytest.raises(ChainUnreachable, match=r"reading the channels: gave up after \d+ s"):
        t.read_latest()
