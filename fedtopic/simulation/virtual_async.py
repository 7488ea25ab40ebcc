"""Deterministic asynchronous DAFed-LDA (any asynchronous algorithm): the runtime's own loop on a virtual clock.

Threads make staleness real but not reproducible (the OS schedules them). For
experiments the parties run the same loop (``node.async_loop``) over channels
whose rounds take virtual time (``virtual_clock``): ``cost_per_token × tokens × steps`` plus a
seeded random delay U(0, max_delay) (paper §8.1) of *virtual* seconds; a round
reads what was published by its start and publishes at its end. Larger parties
are therefore slower, as on real machines. A party stops when, at the start of
a round, a party it reads has published its last round (paper §8.1 stop rule,
per consortium as in the threaded loop). Same seed, same staleness pattern,
same model.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence

from fedtopic.algorithms.asynchronous import AsyncParty, PartyLog, RoundReport
from fedtopic.algorithms.base import Mode, TrainSpec
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.corpus.types import Corpus
from fedtopic.node.roster import readable_channels
from fedtopic.simulation.async_parties import SimulationResult, run_parties
from fedtopic.simulation.virtual_clock import VirtualBoard

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
    is real time, each party's virtual finishing time is its log's ``delay_seconds``.
    """
    ids = list(party_ids)
    algo = get_algorithm(algorithm)
    algo.require(Mode.async_, "an asynchronous simulation")
    parties = [algo.channel_party(pid, i, corpus, spec) for i, (pid, corpus) in enumerate(zip(ids, corpora))]
    seconds = [cost_per_token * corpus.n_tokens * p.steps for corpus, p in zip(corpora, parties)]
    result, finished = run_on_clock(parties, spec, ids, cp, seconds, algorithm=algorithm, max_delay=max_delay,
                                    on_round=on_round)
    for log, at in zip(result.logs, finished):
        log.delay_seconds = at
    return result


def run_on_clock(parties: Sequence[AsyncParty], spec: TrainSpec, party_ids: Sequence[str], cp: Mapping[str, Sequence[str]] | None,
                 round_seconds: Sequence[float], *, algorithm: str, max_delay: float = 0.0,
                 on_round: Callable[[str, RoundReport, PartyLog], None] | None = None, count_bytes: bool = True,
                 ) -> tuple[SimulationResult, list[float]]:
    """``parties`` (built in ``party_ids`` order) through the runtime on a ``VirtualBoard`` whose rounds last
    ``round_seconds`` (party order) plus their delays; also each party's virtual finishing time.
    ``count_bytes`` False: the logs' bytes stay 0 (``VirtualBoard``)."""
    ids = list(party_ids)
    readable = readable_channels(ids, cp)
    stop = threading.Event()
    board = VirtualBoard(ids, readable, round_seconds, stop, count_bytes=count_bytes)
    channels = [board.channel(i) for i in range(len(ids))]
    result = run_parties(parties, channels, spec, readable, algorithm=algorithm, stop=stop, max_delay=max_delay,
                         on_round=on_round)
    return result, [board.clock(i) for i in range(len(ids))]
