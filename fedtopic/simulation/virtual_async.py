"""Deterministic asynchronous DAFed-LDA: the same parties on a virtual clock.

Threads make staleness real but not reproducible (the OS schedules them). For
experiments we replay asynchrony as a discrete-event simulation: a party's
round takes ``cost_per_token × tokens × steps`` plus a seeded random delay
U(0, max_delay) (paper §8.1) of *virtual* seconds; it reads what was published
by its start time and publishes at its end time. Larger parties are therefore
slower, as on real machines. A party stops when, at the start of a round, a
party it reads has published its last round (paper §8.1 stop rule, per
consortium as in the threaded loop).
Same seed, same staleness pattern, same model.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from fedtopic.algorithms.asynchronous import ChannelSnapshot, PartyLog, RoundReport
from fedtopic.algorithms.base import Mode, TrainSpec
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.corpus.types import Corpus
from fedtopic.crypto.codec import encode_counts
from fedtopic.node.roster import delay_rng, readable_channels
from fedtopic.simulation.lda_parties import build_parties
from fedtopic.simulation.threads import SimulationResult

DEFAULT_COST_PER_TOKEN = 1e-6
"""Virtual seconds per token per sweep (≈ a 1 Mtok/s sampler)."""


def run_virtual_simulation(
    corpora: Sequence[Corpus],
    spec: TrainSpec,
    party_ids: Sequence[str],
    cp: Mapping[str, Sequence[str]],
    *,
    algorithm: str = "dafed-lda",
    max_delay: float = 0.0,
    cost_per_token: float = DEFAULT_COST_PER_TOKEN,
    on_round: Callable[[str, RoundReport, PartyLog], None] | None = None,
) -> SimulationResult:
    """Train all parties of ``algorithm`` on a virtual clock until the fastest reaches ``spec.iterations`` sweeps.

    ``cp`` maps a channel owner to the other parties that may read it. Returns
    the same ``SimulationResult`` as the threaded simulation; ``wall_seconds``
    is real time, the virtual finishing time is in each log's ``delay_seconds``.
    """
    ids = list(party_ids)
    readable = readable_channels(ids, cp)
    algo = get_algorithm(algorithm)
    algo.require(Mode.async_, "an asynchronous simulation")
    parties = build_parties(algo, spec, corpora, ids)
    steps = int(spec.options.get("steps", 1))  # type: ignore[arg-type]
    rngs = [delay_rng(spec.seed, i) for i in range(len(ids))]
    logs = [PartyLog(pid) for pid in ids]
    history: dict[str, list[tuple[float, int, np.ndarray, int]]] = {}
    last_read: list[dict[str, int]] = [{} for _ in ids]

    def publish(i: int, at: float, rnd: int, n_wk: np.ndarray) -> None:
        size = len(encode_counts(n_wk))
        history.setdefault(ids[i], []).append((at, rnd, n_wk, size))
        logs[i].bytes_sent += size

    def latest(reader: int, owner: str, at: float) -> ChannelSnapshot:
        _, rnd, n_wk, size = max((h for h in history[owner] if h[0] <= at), key=lambda h: h[0])
        if last_read[reader].get(owner) != rnd:  # a real reader downloads each round once
            logs[reader].bytes_received += size
            last_read[reader][owner] = rnd
        return ChannelSnapshot(owner, rnd, n_wk)

    limits = [p.max_sweeps(spec.iterations) for p in parties]  # fewer when a privacy budget pays for fewer rounds
    started = time.perf_counter()
    for i, party in enumerate(parties):
        publish(i, 0.0, 0, party.genesis())
    queue = [(0.0, i) for i in range(len(parties))]
    heapq.heapify(queue)
    while queue:
        start, i = heapq.heappop(queue)
        party = parties[i]
        others = [latest(i, o, start) for o in readable[party.party_id]]
        if any(s.round * steps >= limits[i] for s in others):
            logs[i].stopped_by = "fastest-party-finished"
            continue
        report = party.train_round(others)
        end = start + cost_per_token * party.corpus.n_tokens * steps + (float(rngs[i].uniform(0, max_delay)) if max_delay > 0 else 0.0)
        publish(i, end, report.round, report.n_wk)
        log = logs[i]
        log.rounds, log.sweeps = report.round, report.sweeps
        log.staleness.extend(report.staleness.values())
        log.read_from.update(report.staleness)
        log.delay_seconds = end
        if on_round is not None:
            on_round(party.party_id, report, log)
        if report.sweeps >= limits[i]:
            log.stopped_by = "max-iterations" if limits[i] == spec.iterations else "epsilon-budget"
        else:
            heapq.heappush(queue, (end, i))
    for i, party in enumerate(parties):
        party.absorb([latest(i, o, float("inf")) for o in readable[party.party_id]])
    return SimulationResult(parties=parties, logs=logs, wall_seconds=time.perf_counter() - started)
