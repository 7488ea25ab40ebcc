"""Synchronous federated LDA in one process (CSFed-LDA's numbers without the aggregator).

Every round all parties read the counts everyone published at the end of the
previous round (staleness 0 for all), run ``steps`` sweeps and publish (paper
Alg. 1). Protection does not change the numbers (the aggregate is the exact
sum), so experiments use this to place CSFed-LDA beside DAFed-LDA cheaply.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from fedtopic.algorithms.asynchronous import ChannelSnapshot, PartyLog
from fedtopic.algorithms.base import Mode, TrainSpec
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.corpus.types import Corpus
from fedtopic.node.roster import readable_channels
from fedtopic.simulation.lda_parties import build_parties
from fedtopic.simulation.threads import SimulationResult


def run_lockstep_simulation(
    corpora: Sequence[Corpus],
    spec: TrainSpec,
    party_ids: Sequence[str],
    cp: Mapping[str, Sequence[str]] | None = None,
    *,
    algorithm: str = "csfed-lda",
) -> SimulationResult:
    """All parties of ``algorithm`` (a synchronous one) in lock-step for ``ceil(iterations / steps)`` rounds;
    ``cp`` None = everyone reads everyone."""
    ids = list(party_ids)
    readable = readable_channels(ids, cp)
    algo = get_algorithm(algorithm)
    algo.require(Mode.sync, "a lock-step simulation")
    parties = build_parties(algo, spec, corpora, ids)
    logs = [PartyLog(pid) for pid in ids]
    limit = min(p.max_sweeps(spec.iterations) for p in parties)  # fewer when a privacy budget pays for fewer rounds
    started = time.perf_counter()
    published = {p.party_id: ChannelSnapshot(p.party_id, 0, p.genesis()) for p in parties}
    while max(p.sweeps for p in parties) < limit:
        reports = [p.train_round([published[o] for o in readable[p.party_id]]) for p in parties]
        published = {p.party_id: ChannelSnapshot(p.party_id, r.round, r.n_wk) for p, r in zip(parties, reports)}
        for log, r in zip(logs, reports):
            log.rounds, log.sweeps = r.round, r.sweeps
            log.staleness.extend(r.staleness.values())
            log.read_from.update(r.staleness)
    for p, log in zip(parties, logs):
        p.absorb([published[o] for o in readable[p.party_id]])
        log.stopped_by = "max-iterations" if limit == spec.iterations else "epsilon-budget"
    return SimulationResult(parties=parties, logs=logs, wall_seconds=time.perf_counter() - started)
