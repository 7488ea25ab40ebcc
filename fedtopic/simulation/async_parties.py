"""The one driver of a one-process asynchronous run: every party's loop is the runtime's (``node.async_loop``).

``threads.run_simulation`` (real concurrency over a channel board or chain), ``virtual_async`` (a virtual clock)
and ``lockstep`` (CSFed-LDA's lock-step on that clock) differ only in their channels; this module runs the parties
on them, stops the others when one fails, and hands back what each did.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedtopic.algorithms.asynchronous import AsyncParty, PartyLog, RoundReport
from fedtopic.algorithms.base import TrainSpec
from fedtopic.engines import get_engine
from fedtopic.node.async_loop import Liveness, run_party
from fedtopic.node.roster import delay_rng
from fedtopic.node.transport import ChannelTransport

UNTIMED = Liveness(rounds=sys.maxsize, seconds=math.inf)
"""On a virtual clock no peer is late in real time: nobody counts as behind."""


@dataclass(frozen=True)
class SimulationResult:
    """Trained parties (``AsyncParty``: for DAFed-LDA θ_p and Φ_Σ each) and what each did."""

    parties: list[Any]
    logs: list[PartyLog]
    wall_seconds: float


def run_parties(parties: Sequence[AsyncParty], transports: Sequence[ChannelTransport], spec: TrainSpec,
                readable: Mapping[str, Sequence[str]], *, algorithm: str, stop: threading.Event | None = None,
                max_delay: float = 0.0, on_round: Callable[[str, RoundReport, PartyLog], None] | None = None,
                history_dir: Path | None = None, engine: str = "threads") -> SimulationResult:
    """Run ``parties[i]`` over ``transports[i]`` until the fastest reaches ``spec.iterations`` sweeps, then let each
    absorb the last counts it reads.

    Party i sleeps U(0, ``max_delay``) after every round, from its own delay stream (``roster.delay_rng``): on a
    channel with a clock (``VirtualChannel``) in virtual seconds. ``stop``: the event a ``VirtualBoard`` watches
    (one is made otherwise).
    ``history_dir``: every party's history as ``<dir>/<party>.jsonl``."""
    stop = stop or threading.Event()
    converge_tol = spec.options.get("converge_tol")

    def delay_for(i: int) -> Callable[[], float]:
        rng = delay_rng(spec.seed, i)
        return lambda: float(rng.uniform(0.0, max_delay)) if max_delay > 0 else 0.0

    started = time.perf_counter()

    def one(i: int, slots: Any) -> PartyLog:
        party, transport = parties[i], transports[i]
        clock = transport.clock
        try:
            return run_party(party, transport, readable=set(readable[party.party_id]), max_sweeps=spec.iterations,
                             stop=stop, delay=delay_for(i), pause=None if clock is None else clock.pause,
                             on_round=on_round, converge_tol=None if converge_tol is None else float(converge_tol),
                             history=None if history_dir is None else history_dir / f"{party.party_id}.jsonl",
                             algorithm=algorithm, liveness=Liveness() if clock is None else UNTIMED)
        except BaseException:
            stop.set()  # the others end their loops instead of training on without this party
            raise
        finally:
            if clock is not None:
                clock.leave()

    # every party computes whenever it likes (asynchronous): as many slots as parties
    logs = get_engine(engine).run([f"party {p.party_id}" for p in parties], one, slots=len(parties))
    wall = time.perf_counter() - started
    for party, transport in zip(parties, transports):
        party.absorb(transport.read_latest())
    return SimulationResult(parties=list(parties), logs=logs, wall_seconds=wall)
