"""One simulated consortium, any federated algorithm: validate once, pick the harness its mode needs, write the run
folder.

Asynchronous algorithms run their parties over an asynchronous link's board (``fedtopic.links``: ``memory``, the
``chain``'s encrypted channels on an embedded chain, a plugin's); synchronous ones run a real aggregator child
process on loopback with the parties over a synchronous link (``http`` or a plugin's), each driven by the one party
runtime (``sync_run``). Either way the parties run on an engine (``fedtopic.engines``: threads of this process by
default). ``fedtopic simulate`` and ``fedtopic.api.simulate`` both come here, and
``check_simulation`` is the one place a simulation's settings are refused, before any data is loaded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedtopic.algorithms.base import Algorithm, Mode, TrainSpec
from fedtopic.algorithms.registry import algorithms_for, get_algorithm
from fedtopic.consortium.init import cp_from_consortia, party_ids
from fedtopic.corpus.training_data import TrainingData
from fedtopic.errors import ConfigError
from fedtopic.links import Channels, get_link


@dataclass(frozen=True)
class SyncSettings:
    """A synchronous run's settings: the protection (and its Paillier δ and key size), the aggregator's port."""

    protection: str = "none"
    delta: float = 0.005
    key_bits: int = 2048
    compare_centralized: bool = False
    port: int = 0  # the aggregator's port on 127.0.0.1 (0: a free one)
    host: str = "127.0.0.1"  # where the aggregator listens: another address of this machine for a cluster's nodes


@dataclass(frozen=True)
class AsyncSettings:
    """An asynchronous run's settings: the random delay after every round."""

    max_delay: float = 0.0  # U(0, max) seconds after every round


@dataclass(frozen=True)
class Harness:
    """How to run the consortium: who takes part, who reads whom, on which engine, and the mode's settings."""

    ids: Sequence[str] | None = None  # default p1..pP
    cp: Mapping[str, Sequence[str]] | None = None  # default: everyone reads everyone (asynchronous)
    engine: str = "threads"
    engine_address: str | None = None  # the engine's cluster (``--address``; Ray)
    engine_verbose: bool = False  # the engine's own log lines too (``--verbose``)
    link: str | None = None  # how messages travel (``fedtopic.links``; None: http, or memory for asynchronous runs)
    sync: SyncSettings = field(default_factory=SyncSettings)
    async_: AsyncSettings = field(default_factory=AsyncSettings)


def check_simulation(algorithm: str, spec: TrainSpec, harness: Harness, n_parties: int) -> Algorithm:
    """The algorithm, after refusing in one line whatever would fail later: an algorithm that is not federated, an
    unknown engine, a protection that cannot carry its update or protect this configuration (synchronous), an
    link that is unknown or of the other mode, party ids that do not match the parties."""
    from fedtopic.engines import get_engine

    algo = get_algorithm(algorithm)
    if not algo.modes & {Mode.sync, Mode.async_}:
        raise ConfigError(f"{algorithm} is not federated; a simulation runs: "
                          f"{', '.join(algorithms_for(Mode.sync) + algorithms_for(Mode.async_))} "
                          f"(train {algorithm} with `fedtopic train`)")
    engine = get_engine(harness.engine)
    if harness.engine_address is not None and engine.in_process:
        raise ConfigError(f"--address names a cluster; the {engine.name} engine runs every party in this process")
    if harness.sync.host != "127.0.0.1" and (engine.in_process or Mode.sync not in algo.modes):
        raise ConfigError("--aggregator-host serves the aggregator to a cluster's other nodes; with the "
                          f"{engine.name} engine every party runs in this process and reaches it on 127.0.0.1")
    if Mode.sync not in algo.modes and not engine.in_process:
        raise ConfigError(f"{algorithm} is asynchronous: its parties share an in-process board or chain, which the "
                          f"{engine.name} engine's processes cannot reach; run it on the threads engine, or across "
                          "machines with `node run` over a chain")
    if harness.sync.compare_centralized and not algo.compares_centralized:
        with_it = ", ".join(a for a in algorithms_for(Mode.sync) if get_algorithm(a).compares_centralized)
        raise ConfigError(f"--compare-centralized: {algorithm} has no centralised comparison in its run folder "
                          f"({with_it} has); train centralized-lda on the same data with `fedtopic train` instead")
    if harness.ids is not None and len(harness.ids) != n_parties:
        raise ConfigError(f"{len(harness.ids)} party ids for {n_parties} parties' data")
    if Mode.sync in algo.modes:
        algo.check_protection(spec, harness.sync.protection, n_parties)
    get_link(link_of(harness, algo), "sync" if Mode.sync in algo.modes else "async")
    return algo


def link_of(harness: Harness, algo: Algorithm) -> str:
    """The link a run of ``algo`` uses: the harness's, else ``http`` (synchronous) or ``memory`` (asynchronous)."""
    return harness.link or ("http" if Mode.sync in algo.modes else "memory")


def simulate_run(data: TrainingData, algorithm: str, spec: TrainSpec, run_dir: Path, harness: Harness = Harness(), *,
                 on_round: Callable[..., None] | None = None,
                 say: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Train ``algorithm`` with one party per ``data.parties``; writes ``run_dir`` (with the parties' histories
    in ``history/`` and the PNGs drawn from them) and returns its summary."""
    from fedtopic.eval.history_plots import histories_in, plot_history
    from fedtopic.runs.folder import write_run_info

    algo = check_simulation(algorithm, spec, harness, len(data.parties))
    algo.check_data(data.parties, spec)
    sync = Mode.sync in algo.modes
    write_run_info(run_dir, {"kind": "simulate", "algorithm": algorithm, "mode": "sync" if sync else "async",
                             "topics": spec.topics, "iterations": spec.iterations, "seed": spec.seed,
                             "options": dict(spec.options), "dataset": data.name,
                             "parties": list(harness.ids or party_ids(len(data.parties))),
                             "protection": harness.sync.protection if sync else None,
                             "transport": None if sync else link_of(harness, algo), "link": link_of(harness, algo),
                             "engine": harness.engine,
                             "privacy": algo.privacy(spec).as_dict(), "rounds": algo.rounds(spec),
                             "setup_rounds": algo.setup_rounds(spec)})
    run = _sync if sync else _async
    summary = run(data, algorithm, spec, run_dir, harness, on_round=on_round, say=say)
    if (run_dir / "history").is_dir():
        plot_history(run_dir, histories_in(run_dir / "history"), title=algorithm)
    return summary


def _sync(data: TrainingData, algorithm: str, spec: TrainSpec, run_dir: Path, harness: Harness, *,
          on_round: Callable[..., None] | None, say: Callable[[str], None]) -> dict[str, Any]:
    from fedtopic.simulation.sync_run import simulate_sync

    s = harness.sync
    return simulate_sync(data, algorithm, spec, run_dir, protection=s.protection, delta=s.delta, key_bits=s.key_bits,
                         compare_centralized=s.compare_centralized, say=say, on_round=on_round, port=s.port,
                         host=s.host, link=link_of(harness, get_algorithm(algorithm)),
                         engine=harness.engine, engine_address=harness.engine_address,
                         engine_verbose=harness.engine_verbose)


def _async(data: TrainingData, algorithm: str, spec: TrainSpec, run_dir: Path, harness: Harness, *,
           on_round: Callable[..., None] | None, say: Callable[[str], None]) -> dict[str, Any]:
    from fedtopic.algorithms.asynchronous import AsyncRun
    from fedtopic.simulation.threads import run_simulation

    ids = list(harness.ids or party_ids(len(data.parties)))
    a = harness.async_
    cp = harness.cp if harness.cp is not None else cp_from_consortia([ids])
    shape = get_algorithm(algorithm).publication_shape(spec, data.train.n_words)
    name = link_of(harness, get_algorithm(algorithm))
    board = get_link(name, "async").connect(Channels(ids, cp, shape, seed=spec.seed))
    try:
        sim = run_simulation(data.parties, spec, [board.channel(pid) for pid in ids], cp, algorithm=algorithm,
                             max_delay=a.max_delay, on_round=on_round, history_dir=run_dir / "history",
                             engine=harness.engine)
        extra = {"transport": name, "link": name, "schedule": "threads", "engine": harness.engine} | \
            dict(board.publication())
    finally:
        board.close()
    run = AsyncRun(data, spec, sim.parties, sim.logs, sim.wall_seconds, extra | {"max_delay": a.max_delay})
    return get_algorithm(algorithm).write_async_simulation(run_dir, run)
