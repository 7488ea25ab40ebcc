"""One simulated consortium, any federated algorithm: pick the harness its mode needs, write the run folder.

Asynchronous algorithms run their parties as threads over an in-memory board
or encrypted channels on an embedded chain (``threads``); synchronous ones run
a real aggregator child process on loopback with the parties as threads over
HTTP, each driven by the one party runtime (``sync_run``). ``fedtopic
simulate`` and ``fedtopic.api.simulate`` both come here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedtopic.algorithms.base import Mode, TrainSpec
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.consortium.init import cp_from_consortia, party_ids
from fedtopic.corpus.training_data import TrainingData
from fedtopic.errors import ConfigError

TRANSPORTS = ("memory", "chain")


@dataclass(frozen=True)
class Harness:
    """How to run the consortium: who reads whom, and the mode's transport settings."""

    ids: Sequence[str] | None = None  # default p1..pP
    cp: Mapping[str, Sequence[str]] | None = None  # default: everyone reads everyone
    transport: str = "memory"  # asynchronous
    max_delay: float = 0.0  # asynchronous: U(0, max) seconds after every round
    protection: str = "none"  # synchronous
    delta: float = 0.005
    key_bits: int = 2048
    compare_centralized: bool = False
    port: int = 0  # synchronous: the aggregator's port on 127.0.0.1 (0: a free one)


def simulate_run(data: TrainingData, algorithm: str, spec: TrainSpec, run_dir: Path, harness: Harness = Harness(), *,
                 on_round: Callable[..., None] | None = None,
                 say: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Train ``algorithm`` with one party per ``data.parties``; writes ``run_dir`` (with the parties' histories
    in ``history/`` and the PNGs drawn from them) and returns its summary."""
    from fedtopic.eval.history_plots import histories_in, plot_history
    from fedtopic.runs.folder import write_run_info

    algo = get_algorithm(algorithm)
    sync = Mode.sync in algo.modes
    write_run_info(run_dir, {"kind": "simulate", "algorithm": algorithm, "mode": "sync" if sync else "async",
                             "topics": spec.topics, "iterations": spec.iterations, "seed": spec.seed,
                             "options": dict(spec.options), "dataset": data.name,
                             "parties": list(harness.ids or party_ids(len(data.parties))),
                             "protection": harness.protection if sync else None,
                             "transport": None if sync else harness.transport,
                             "privacy": algo.privacy(spec).as_dict(), "rounds": algo.rounds(spec)})
    summary = _run(data, algorithm, spec, run_dir, harness, on_round=on_round, say=say)
    if (run_dir / "history").is_dir():
        plot_history(run_dir, histories_in(run_dir / "history"), title=algorithm)
    return summary


def _run(data: TrainingData, algorithm: str, spec: TrainSpec, run_dir: Path, harness: Harness, *,
         on_round: Callable[..., None] | None, say: Callable[[str], None]) -> dict[str, Any]:
    algo = get_algorithm(algorithm)
    ids = list(harness.ids or party_ids(len(data.parties)))
    if len(ids) != len(data.parties):
        raise ConfigError(f"{len(ids)} party ids for {len(data.parties)} parties' data")
    if Mode.sync in algo.modes:
        from fedtopic.simulation.sync_run import simulate_sync

        return simulate_sync(data, algorithm, spec, run_dir, protection=harness.protection, delta=harness.delta,
                             key_bits=harness.key_bits, compare_centralized=harness.compare_centralized, say=say,
                             on_round=on_round, port=harness.port)
    algo.require(Mode.async_, "a simulation")
    if harness.transport not in TRANSPORTS:
        raise ConfigError(f"unknown transport {harness.transport!r}: choose {' or '.join(TRANSPORTS)}")
    from fedtopic.node.transport import ChannelTransport, InMemoryBoard
    from fedtopic.simulation.async_run import write_async_run
    from fedtopic.simulation.chain_setup import chain_usage, embedded_consortium
    from fedtopic.simulation.threads import run_simulation

    cp = harness.cp if harness.cp is not None else cp_from_consortia([ids])
    shape = (data.train.n_words, spec.topics)
    extra: dict[str, object] = {"transport": harness.transport, "schedule": "threads"}
    if harness.transport == "chain":
        chain = embedded_consortium(ids, cp, shape, seed=spec.seed)
        transports: list[ChannelTransport] = list(chain.channels)
    else:
        board = InMemoryBoard(cp)
        transports = [board.channel(pid, shape) for pid in ids]
    sim = run_simulation(data.parties, spec, transports, cp, algorithm=algorithm, max_delay=harness.max_delay,
                         on_round=on_round, history_dir=run_dir / "history")
    if harness.transport == "chain":
        usage = chain_usage(chain.w3, chain.first_block)
        extra |= {"chain_transactions": usage.transactions, "chain_calldata_bytes": usage.calldata_bytes,
                  "chain_gas_used": usage.gas_used}
    return write_async_run(data, spec, sim, run_dir, algorithm=algorithm, max_delay=harness.max_delay, extra=extra)
