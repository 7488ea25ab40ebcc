"""One-process DAFed-LDA simulation: P parties as threads over a shared channel board.

Parties genuinely overlap (the numba sweeps release the GIL) and each sleeps
a random delay after every round (paper §8.1), so the staleness they record is
real. Which channels a party reads is the CP matrix; parties in different
consortia therefore train different models (Fig. 5).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass

from fedtopic.algorithms.baselines import LDAHyper
from fedtopic.algorithms.dafed import DAFedParty, RoundReport
from fedtopic.corpus.types import Corpus
from fedtopic.node.async_loop import PartyLog, run_party
from fedtopic.node.roster import build_parties, delay_rng, readable_channels
from fedtopic.node.transport import ChannelTransport


@dataclass(frozen=True)
class SimulationResult:
    """Trained parties (θ_p, Φ_Σ each) and what each did."""

    parties: list[DAFedParty]
    logs: list[PartyLog]
    wall_seconds: float


def run_simulation(
    corpora: Sequence[Corpus],
    hyper: LDAHyper,
    transports: Sequence[ChannelTransport],
    cp: Mapping[str, Sequence[str]],
    *,
    steps: int = 1,
    max_delay: float = 0.0,
    converge_tol: float | None = None,
    on_round: Callable[[str, RoundReport, PartyLog], None] | None = None,
) -> SimulationResult:
    """Train all parties concurrently until the fastest reaches ``hyper.iterations`` sweeps.

    ``transports[i]`` belongs to party ``i``; its id must be a CP key. Party i
    uses seed ``hyper.seed + i`` for sampling and for its delays. ``cp`` maps a
    channel owner to the other parties that may read it (consortium.toml's [cp]).
    """
    ids = [t.party_id for t in transports]
    readable = readable_channels(ids, cp)
    parties = build_parties(corpora, hyper, ids, steps=steps)
    stop = threading.Event()

    def delay_for(i: int) -> Callable[[], float]:
        rng = delay_rng(hyper.seed, i)
        return lambda: float(rng.uniform(0.0, max_delay)) if max_delay > 0 else 0.0

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=len(parties), thread_name_prefix="party") as pool:
        futures = [
            pool.submit(
                run_party,
                party,
                transport,
                readable=set(readable[party.party_id]),
                max_sweeps=hyper.iterations,
                stop=stop,
                delay=delay_for(i),
                on_round=on_round,
                converge_tol=converge_tol,
            )
            for i, (party, transport) in enumerate(zip(parties, transports))
        ]
        wait(futures, return_when=FIRST_EXCEPTION)
        failed = [f for f in futures if f.done() and f.exception() is not None]
        if failed:
            stop.set()
            raise failed[0].exception()
        logs = [f.result() for f in futures]
    wall = time.perf_counter() - started
    for party, transport in zip(parties, transports):
        party.absorb(transport.read_latest())
    return SimulationResult(parties=parties, logs=logs, wall_seconds=wall)
