"""One-process asynchronous simulation (DAFed-LDA, any ``AsyncParty``): P parties on an engine (threads by default)
over a shared channel board.

Parties genuinely overlap (the numba sweeps release the GIL) and each sleeps
a random delay after every round (paper §8.1), so the staleness they record is
real. Which channels a party reads is the CP matrix; parties in different
consortia therefore train different models (Fig. 5).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedtopic.algorithms.asynchronous import PartyLog
from fedtopic.algorithms.base import Mode, TrainSpec
from fedtopic.algorithms.lda.party import RoundReport
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.corpus.types import Corpus
from fedtopic.engines import get_engine
from fedtopic.node.async_loop import run_party
from fedtopic.node.roster import delay_rng, readable_channels
from fedtopic.node.transport import ChannelTransport


@dataclass(frozen=True)
class SimulationResult:
    """Trained parties (``AsyncParty``: for DAFed-LDA θ_p and Φ_Σ each) and what each did."""

    parties: list[Any]
    logs: list[PartyLog]
    wall_seconds: float


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
    readable = readable_channels(ids, cp)
    algo = get_algorithm(algorithm)
    algo.require(Mode.async_, "an asynchronous simulation")
    parties = [algo.party(pid, i, corpus, spec) for i, (pid, corpus) in enumerate(zip(ids, corpora))]
    converge_tol = spec.options.get("converge_tol")
    stop = threading.Event()

    def delay_for(i: int) -> Callable[[], float]:
        rng = delay_rng(spec.seed, i)
        return lambda: float(rng.uniform(0.0, max_delay)) if max_delay > 0 else 0.0

    started = time.perf_counter()

    def one(i: int, slots: Any) -> PartyLog:
        party, transport = parties[i], transports[i]
        try:
            return run_party(party, transport, readable=set(readable[party.party_id]), max_sweeps=spec.iterations,
                             stop=stop, delay=delay_for(i), on_round=on_round,
                             converge_tol=None if converge_tol is None else float(converge_tol),
                             history=None if history_dir is None else history_dir / f"{party.party_id}.jsonl",
                             algorithm=algorithm)
        except BaseException:
            stop.set()  # the others end their loops instead of training on without this party
            raise

    # every party computes whenever it likes (asynchronous): as many slots as parties
    logs = get_engine(engine).run([f"party {p.party_id}" for p in parties], one, slots=len(parties))
    wall = time.perf_counter() - started
    for party, transport in zip(parties, transports):
        party.absorb(transport.read_latest())
    return SimulationResult(parties=parties, logs=logs, wall_seconds=wall)
