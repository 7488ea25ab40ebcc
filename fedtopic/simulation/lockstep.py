"""Synchronous federated LDA in one process (CSFed-LDA's numbers without the aggregator).

Every round all parties read the counts everyone published at the end of the
previous round (staleness 0 for all), run ``steps`` sweeps and publish (paper
Alg. 1). Protection does not change the numbers (the aggregate is the exact
sum), so experiments use this to place CSFed-LDA beside DAFed-LDA cheaply.

It is the runtime's own loop (``node.async_loop``) on a virtual clock whose
rounds last one second for every party (``virtual_clock``): each round then
starts after everyone's previous one was published. A synchronous algorithm's
parties share one sweep budget (it depends on the spec alone), so all stop
together. It counts no bytes (its parties exchange nothing real; `simulate`
measures CSFed-LDA's traffic through the aggregator).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fedtopic.algorithms.base import Mode, TrainSpec
from fedtopic.algorithms.capabilities import ChannelParties, capability
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.corpus.types import Corpus
from fedtopic.simulation.async_parties import SimulationResult
from fedtopic.simulation.virtual_async import run_on_clock


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
    algo = get_algorithm(algorithm)
    algo.require(Mode.sync, "a lock-step simulation")
    # the LDA party itself, not the aggregator runtime's wrapper around it (``CSFedLDA.party``)
    lda: ChannelParties = capability(algo, ChannelParties, "a lock-step simulation")
    parties = [lda.channel_party(pid, i, corpus, spec) for i, (pid, corpus) in enumerate(zip(ids, corpora))]
    return run_on_clock(parties, spec, ids, cp, [1.0] * len(ids), algorithm=algorithm, count_bytes=False)[0]
