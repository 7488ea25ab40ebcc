"""``fedtopic simulate`` of any synchronous algorithm whose party is a ``FederatedParty``: a real aggregator child
process on loopback and the parties on an engine (``fedtopic.engines``: threads of this process by default), each
built where it runs and driven by the one party runtime over HTTP; then the algorithm evaluates and writes the run
folder (``Algorithm.write_simulation``). Every party's history is in ``<run>/history/<party>.jsonl``.

A party comes back from its engine as plain data, its history and ``state()`` arrays (``PartyOutcome``), and is
rebuilt here with ``restore``, as a restarted node rebuilds itself from its checkpoint: so ``write_simulation``
sees the same party objects whichever process or machine the party trained on.
"""

from __future__ import annotations

import os
import resource
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.base import TrainSpec
from fedtopic.algorithms.federated import ConsortiumRun
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.consortium.init import key_file_path
from fedtopic.corpus.training_data import TrainingData
from fedtopic.crypto.keys import load_party_keys
from fedtopic.engines import get_engine
from fedtopic.engines.base import placement
from fedtopic.errors import ConfigError
from fedtopic.links import AggregatorAt, get_link
from fedtopic.network.stopping import start_clients, stop_clients
from fedtopic.network.tls import is_loopback, trust_pem
from fedtopic.node.link import AggregatorLink
from fedtopic.node.session_params import session_params
from fedtopic.node.sync_runtime import Connection, ProtectionSettings, run_sync_party
from fedtopic.runs.folder import write_summary
from fedtopic.runs.history import HistoryLine
from fedtopic.runs.interrupted import note_kept
from fedtopic.runs.private import keep_private
from fedtopic.runs.process import raise_open_files_limit
from fedtopic.simulation.aggregator_proc import AggregatorProcess
from fedtopic.simulation.local_consortium import local_consortium

FILES_PER_PARTY = 4
"""Open files a simulated party holds at most: a connection per channel and its history file."""
_BUILDING = threading.Lock()
PATIENCE = 30.0
"""Seconds a simulated party keeps retrying an unreachable aggregator (its own child: if it is gone, the run is
over)."""


@dataclass(frozen=True)
class PartyOutcome:
    """What a party's engine hands back: its history lines and its final ``state()`` arrays."""

    history: list[dict[str, Any]]
    state: dict[str, np.ndarray]
    place: dict[str, str]  # where the engine ran it (``engines.placement``)


def simulate_sync(data: TrainingData, algorithm: str, spec: TrainSpec, run_dir: Path, *, protection: str = "none",
                  delta: float = 0.005, key_bits: int = 2048, compare_centralized: bool = False,
                  serialize_compute: bool = False, port: int = 0, host: str = "127.0.0.1", engine: str = "threads",
                  engine_address: str | None = None, engine_verbose: bool = False, link: str = "http",
                  say: Callable[[str], None] = print,
                  on_round: Callable[[str, HistoryLine], None] | None = None) -> dict[str, Any]:
    """Train one party per ``data.parties`` through a real aggregator on ``engine``; the algorithm writes
    ``run_dir``.

    ``link``: the synchronous link the parties' requests travel by. ``engine_verbose``: the engine's own log lines
    too (Ray's). ``serialize_compute``: one party computes at a time (the others wait in their exchanges), so that the
    history's per-phase seconds are each party's alone, not a share of contended cores (timing studies)."""
    algo = get_algorithm(algorithm)
    algo.check_protection(spec, protection, len(data.parties))
    algo.check_data(data.parties, spec)
    runner = get_engine(engine).configured(run_dir, verbose=engine_verbose, say=say)
    if is_loopback(host):  # parties on other machines could not reach it: refused before anything starts
        mine, others = runner.machines(engine_address)
        if others:
            raise ConfigError(f"the cluster at {engine_address} has nodes on {', '.join(others)}, which cannot reach "
                              f"an aggregator on {host}: give --aggregator-host {mine} (this machine's address on "
                              "the cluster)")
    n = len(data.parties)
    files = raise_open_files_limit()
    if files != resource.RLIM_INFINITY and files < FILES_PER_PARTY * n + 256:
        raise ConfigError(f"{n} parties in one process need about {FILES_PER_PARTY * n + 256} open files (a "
                          f"connection per channel each); this process may open {files} (`ulimit -n`)")
    with tempfile.TemporaryDirectory(prefix=f"{algorithm}-") as tmp:
        work = Path(tmp)
        remote = not is_loopback(host)  # parties on other machines: HTTPS with a certificate they pin
        config, cfg = local_consortium(work / "consortium", n, spec, algorithm=algorithm, protection=protection,
                                       delta=delta, key_bits=key_bits, seed=spec.seed,
                                       tls_host=host if remote else None, link=link)
        cert = cfg.aggregator.tls_cert_file(config.parent)
        pem = None if cert is None else cert.read_bytes()
        publics = [p.x25519_public_bytes for p in cfg.parties]
        params = session_params(algorithm, spec, data.train.vocab)
        keys = {pid: load_party_keys(key_file_path(config.parent, pid)) for pid in cfg.party_ids}  # travel with work
        # parties in other processes checkpoint, so that a worker killed mid-run resumes them (``engines.ray``)
        states = None if runner.in_process else Path(tempfile.gettempdir()) / f"fedtopic-sim-{secrets.token_hex(8)}"
        with AggregatorProcess(config, work / "aggregator", run_dir / "aggregator.log", port=port or None,
                               host=host) as agg:
            by = "" if link == "http" else f", reached by the {link} link"
            say(f"aggregator {agg.url} (pid {agg.proc.pid}){by}; {n} parties, K = {spec.topics}, "
                f"protection {protection}")
            started, url = time.perf_counter(), agg.url
            if pem is not None:  # this process checks the certificate its parties will pin
                trust_pem(pem)
            get_link(link, "sync").connect(AggregatorAt(url)).close()  # a link that cannot reach it: one line, now
            if not runner.in_process:  # the work crosses processes: nothing of this process's console goes with it
                say(f"parties on the {runner.name} engine; their progress is in {run_dir / 'history'}")
                say, on_round = _quiet, None

            def one(i: int, slots: Any) -> PartyOutcome:
                pid = cfg.party_ids[i]
                if pem is not None:
                    trust_pem(pem)
                if states is not None:  # a party's checkpoints hold its counts: owner-only, as node run's
                    keep_private()
                    (states / pid).mkdir(parents=True, exist_ok=True)
                party = _built(algo, pid, i, data.parties[i], spec)
                link_for = AggregatorLink(url, keys[pid], PATIENCE, {p.id: p.address for p in cfg.parties}, link)
                conn = Connection(link_for, cfg.party_ids, publics, cfg.parties[0].address,
                                  ProtectionSettings(protection, key_bits, delta),
                                  f"{algorithm[:24]}-s{spec.seed}", params)
                report = None if on_round is None else (lambda line: on_round(pid, line))
                place = placement()
                lines = run_sync_party(party, conn, algorithm=algorithm, history=run_dir / "history" / f"{pid}.jsonl",
                                       vocab=data.train.vocab, on_round=report, say=say, compute_lock=slots,
                                       labels=place, state_dir=None if states is None else states / pid)
                return PartyOutcome([line.as_dict() for line in lines], dict(party.state()), place)

            start_clients()
            try:
                outcomes = runner.run([f"party {pid}" for pid in cfg.party_ids], one,
                                      slots=1 if serialize_compute else _compute_slots(), address=engine_address)
            except KeyboardInterrupt:  # Ctrl-C: the parties stop at their next request, not after their patience
                stop_clients()
                note_kept(f"the parties' histories so far in {run_dir / 'history'}")
                raise
            finally:
                if states is not None:
                    shutil.rmtree(states, ignore_errors=True)  # this machine's; another's stays in its temp folder
            wall = time.perf_counter() - started
    histories = [o.history for o in outcomes]
    if not runner.in_process:
        histories = _keep_histories(run_dir / "history", cfg.party_ids, histories)
    parties = [_rebuilt(algo, pid, i, data.parties[i], spec, o.state)
               for i, (pid, o) in enumerate(zip(cfg.party_ids, outcomes))]
    run = ConsortiumRun(data, spec, parties, histories, protection, wall,
                        {"compare_centralized": compare_centralized, "engine": engine})
    summary = algo.write_simulation(run_dir, run)
    if any(o.place for o in outcomes):  # where each party ran (a cluster's node), beside the algorithm's figures
        summary = summary | {"engine": engine, "placement": {pid: o.place for pid, o in zip(cfg.party_ids, outcomes)}}
        write_summary(run_dir, summary)
    return summary


def _built(algo: Any, party_id: str, index: int, corpus: Any, spec: TrainSpec) -> Any:
    """Party ``index``, built one at a time in a process (building may fill a shared cache: CombinedTM's
    embeddings)."""
    with _BUILDING:
        return algo.party(party_id, index, corpus, spec)


def _keep_histories(folder: Path, ids: list[str], rows: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """Every party's history (the last line per round): its file where it ran on this machine (a party resumed after
    its worker was killed returns only the lines of its last process), else the lines its result carried, written
    here (they went to the other machine's disk)."""
    from fedtopic.runs.history import latest_per_round, read_history, write_history_rows

    out = []
    for pid, lines in zip(ids, rows):
        path = folder / f"{pid}.jsonl"
        if path.exists():
            kept = latest_per_round(read_history(path))
            out.append(kept if len(kept) > len(lines) else lines)
        else:
            write_history_rows(path, lines)
            out.append(lines)
    return out


def _quiet(_: str) -> None:
    """What a party on another process's engine says: nothing (its history says what it did)."""


def _rebuilt(algo: Any, party_id: str, index: int, corpus: Any, spec: TrainSpec,
             state: dict[str, np.ndarray]) -> Any:
    """Party ``index`` as it ended on its engine: built afresh, then restored from its final state."""
    party = algo.party(party_id, index, corpus, spec)
    party.restore(state)
    return party


def _compute_slots() -> int:
    """Parties that compute at once: two per core this process may use. A party holding a slot also runs the
    Python around its numeric kernels (decoding, encoding, autograd's bookkeeping), during which its core could
    run another party's kernel: gFedNTM's step with 5 parties on 2 cores took 116 ms with one slot per core, 108
    with two (``benchmarks/bench_gfedntm_phases.py --docs 4000``, medians of 3, alternating). Far more would
    only queue for the GIL's slices (numba releases it, the Python around it does not), and every party waiting
    in an exchange then waits for the GIL after each socket call: with 1,000 party threads a request's body took
    over a minute to arrive."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return 2 * max(1, cores)

