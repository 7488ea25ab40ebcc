"""One-process asynchronous simulation (DAFed-LDA, any ``AsyncParty``): P parties on an engine (threads by default)
over a shared channel board or chain.

Parties genuinely overlap (the numba sweeps release the GIL) and each sleeps
a random delay after every round (paper §8.1), so the staleness they record is
real. Which channels a party reads is the CP matrix; parties in different
consortia therefore train different models (Fig. 5).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from fedtopic.algorithms.asynchronous import PartyLog, RoundReport
from fedtopic.algorithms.base import Mode, TrainSpec
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.corpus.types import Corpus
from fedtopic.node.roster import readable_channels
from fedtopic.node.transport import ChannelTransport
from fedtopic.simulation.async_parties import SimulationResult, run_parties


def run_simulation(
    corpora: Sequence[Corpus],
    spec: TrainSpec,
    transports: Sequence[ChannelTransport],
    cp: Mapping[str, Sequence[str]],
    *,
    algorithm: str = "dafed-lda",  # the papers' asynchronous algorithm, for the harnesses of their figures
    max_delay: float = 0.0,
    on_round: Callable[[str, RoundReport, PartyLog], None] | None = None,
    history_dir: Path | None = None,
    engine: str = "threads",
) -> SimulationResult:
    """Train all parties of ``algorithm`` (an asynchronous one) concurrently until the fastest reaches
    ``spec.iterations`` sweeps.

    ``transports[i]`` belongs to party ``i``; its id must be a CP key. Party i
    uses seed ``spec.seed + i`` for sampling and for its delays. ``cp`` maps a
    channel owner to the other parties that may read it (consortium.toml's [cp]). ``history_dir``: every
    party's history as ``<dir>/<party>.jsonl``.
    """
    ids = [t.party_id for t in transports]
    algo = get_algorithm(algorithm)
    algo.require(Mode.async_, "an asynchronous simulation")
    parties = [algo.channel_party(pid, i, corpus, spec) for i, (pid, corpus) in enumerate(zip(ids, corpora))]
    return run_parties(parties, transports, spec, readable_channels(ids, cp), algorithm=algorithm,
                       max_delay=max_delay, on_round=on_round, history_dir=history_dir, engine=engine)
