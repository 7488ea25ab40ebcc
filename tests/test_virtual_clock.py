"""The virtual clock: the runtime's own asynchronous loop, scheduled as a discrete-event simulation.

``run_on_clock`` runs every party through ``node.async_loop.run_party`` in its own thread over ``VirtualBoard``
channels. A slow reference here replays the same schedule the way the papers' harness did before (a heap of round
starts, each round reading what was published by its start and publishing at its end): for random consortia,
round lengths (ties included), delays, read rights and budgets, every party must read exactly the rounds the
reference says, train as many rounds, stop for the same reason and absorb the same last rounds.
"""

from __future__ import annotations

import heapq
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedtopic.algorithms.asynchronous import RoundReport
from fedtopic.algorithms.base import TrainSpec
from fedtopic.crypto.codec import encode_counts
from fedtopic.errors import TrainingError
from fedtopic.node.roster import delay_rng, readable_channels
from fedtopic.simulation.virtual_async import run_on_clock
from fedtopic.simulation.virtual_clock import VirtualBoard


class Recorder:
    """An ``AsyncParty`` whose update is its round number; it records which round of whom each round read."""

    def __init__(self, party_id: str, steps: int, fail_at: int | None = None) -> None:
        self.party_id, self.steps, self.fail_at = party_id, steps, fail_at
        self.round = self.sweeps = 0
        self.vocab = ["round", "one"]
        self.reads: list[dict[str, int]] = []
        self.absorbed: dict[str, int] = {}

    def own_counts(self) -> np.ndarray:
        return np.array([[self.round], [1]], dtype=np.int32)  # [V = 2, K = 1]

    def genesis(self) -> np.ndarray:
        return self.own_counts()

    def max_sweeps(self, budget: int) -> int:
        return budget

    def train_round(self, others) -> RoundReport:
        if self.fail_at is not None and self.round + 1 == self.fail_at:
            raise RuntimeError(f"{self.party_id} breaks in round {self.fail_at}")
        read = {s.party: int(s.n_wk[0, 0]) for s in others}
        assert read == {s.party: s.round for s in others}  # the counts are the round's own
        self.reads.append(read)
        self.round += 1
        self.sweeps += self.steps
        return RoundReport(round=self.round, sweeps=self.sweeps, n_wk=self.own_counts(),
                           staleness={p: self.round - 1 - r for p, r in read.items()})

    def absorb(self, others) -> None:
        self.absorbed = {s.party: s.round for s in others}


def reference(ids, readable, seconds, steps, iterations, seed, max_delay):
    """The schedule as a heap of round starts (the harness before the virtual clock ran the runtime's loop)."""
    rngs = [delay_rng(seed, i) for i in range(len(ids))]
    published = {p: [(0.0, 0)] for p in ids}
    rounds = [0] * len(ids)
    reads: list[list[dict[str, int]]] = [[] for _ in ids]
    stopped = [""] * len(ids)

    def latest(owner, at):
        return max((h for h in published[owner] if h[0] <= at), key=lambda h: h[0])[1]

    queue = [(0.0, i) for i in range(len(ids))]
    heapq.heapify(queue)
    while queue:
        start, i = heapq.heappop(queue)
        seen = {o: latest(o, start) for o in readable[ids[i]]}
        if any(r * steps >= iterations for r in seen.values()):
            stopped[i] = "fastest-party-finished"
            continue
        reads[i].append(seen)
        rounds[i] += 1
        end = start + seconds[i] + (float(rngs[i].uniform(0, max_delay)) if max_delay > 0 else 0.0)
        published[ids[i]].append((end, rounds[i]))
        if rounds[i] * steps >= iterations:
            stopped[i] = "max-iterations"
        else:
            heapq.heappush(queue, (end, i))
    absorbed = [{o: latest(o, float("inf")) for o in readable[p]} for p in ids]
    return reads, rounds, stopped, absorbed


@st.composite
def consortia(draw):
    n = draw(st.integers(2, 5))
    ids = [f"p{i + 1}" for i in range(n)]
    cp = {o: [r for r in ids if r != o and draw(st.booleans())] for o in ids}
    # round lengths from a small set, so that equal stamps (ties between parties) happen
    seconds = [draw(st.sampled_from([0.5, 1.0, 1.0, 2.0, 3.25])) for _ in ids]
    return ids, cp, seconds, draw(st.integers(1, 3)), draw(st.integers(1, 9)), draw(st.integers(0, 99)), \
        draw(st.sampled_from([0.0, 0.0, 0.7, 4.0]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(consortia())
def test_the_runtime_on_the_clock_follows_the_reference_schedule(case):
    ids, cp, seconds, steps, iterations, seed, max_delay = case
    parties = [Recorder(p, steps) for p in ids]
    result, finished = run_on_clock(parties, TrainSpec(2, iterations, seed), ids, cp, seconds, algorithm="recorder",
                                    max_delay=max_delay)
    reads, rounds, stopped, absorbed = reference(ids, readable_channels(ids, cp), seconds, steps, iterations, seed,
                                                 max_delay)
    assert [p.reads for p in parties] == reads
    assert [log.rounds for log in result.logs] == rounds
    assert [log.stopped_by for log in result.logs] == stopped
    assert [p.absorbed for p in parties] == absorbed
    assert all(t >= r * min(seconds) for t, r in zip(finished, rounds))


def test_equal_round_lengths_are_lock_step():
    ids = ["p1", "p2", "p3"]
    parties = [Recorder(p, 1) for p in ids]
    result, finished = run_on_clock(parties, TrainSpec(2, 4, 0), ids, None, [1.0] * 3, algorithm="recorder")
    for p in parties:  # round r reads everyone's round r - 1
        assert p.reads == [{o: r for o in ids if o != p.party_id} for r in range(4)]
    assert finished == [4.0, 4.0, 4.0] and {log.stopped_by for log in result.logs} == {"max-iterations"}
    # each round's update is downloaded once: rounds 0–3 of 2 channels, as a real channel would carry them
    size = sum(len(encode_counts(np.array([[r], [1]], dtype=np.int32))) for r in range(4))
    assert [log.bytes_received for log in result.logs] == [2 * size] * 3


def test_a_failing_party_stops_the_others_instead_of_leaving_them_waiting():
    ids = ["p1", "p2", "p3"]
    parties = [Recorder("p1", 1), Recorder("p2", 1, fail_at=3), Recorder("p3", 1)]
    with pytest.raises(TrainingError, match="p2 breaks in round 3"):
        run_on_clock(parties, TrainSpec(2, 50, 0), ids, None, [1.0, 1.0, 1.0], algorithm="recorder")
    assert max(p.round for p in parties) < 50


def test_a_round_published_outside_its_turn_is_refused():
    ids = ["p1", "p2"]
    board = VirtualBoard(ids, readable_channels(ids, None), [1.0, 1.0], threading.Event())
    channel = board.channel(1)
    channel.publish(0, np.zeros((2, 1), dtype=np.int32))
    with pytest.raises(TrainingError, match="p2 published round 1 outside its turn"):
        channel.publish(1, np.zeros((2, 1), dtype=np.int32))
