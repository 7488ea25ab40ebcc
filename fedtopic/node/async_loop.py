"""The asynchronous loop of one party (DAFed-LDA's Alg. 3, and any ``AsyncParty``), transport-agnostic.

The party never waits for slower parties: it reads whatever is latest, trains,
publishes. Training ends when the fastest party reaches the maximum number of
sweeps (paper §8.1, "decentralized settings"): every party sees on the
channels it reads that someone has published its last round, in one process
or across machines alike. With CP consortia (Fig. 5) the rule therefore holds
per consortium: a party stops when a party it can read has finished.
Optionally a party also stops when its own counts settle; ``stop`` aborts
everyone (a simulation sets it when one party fails).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fedtopic.algorithms.asynchronous import AsyncParty, PartyLog, RoundReport
from fedtopic.errors import TrainingError
from fedtopic.node.checkpoint import load_checkpoint, save_checkpoint
from fedtopic.node.transport import ChannelTransport
from fedtopic.runs.history import HistoryLine, HistoryWriter, top_words_due
from fedtopic.runs.topic_snapshot import record_topics


@dataclass(frozen=True)
class Liveness:
    """When a peer counts as behind, and what this party does about it.

    ``rounds``: more rounds behind this party than this; ``seconds``: no new round for longer than this.
    ``wait``: pause until every peer is within the limits again (at most ``wait_limit`` seconds, then stop with
    one line); else go on, using the peer's last counts (DAFed reads whatever is latest), and say so."""

    rounds: int = 10
    seconds: float = 300.0
    wait: bool = False
    wait_limit: float = 600.0


class _PeerClock:
    """Each readable peer's latest round and when it last changed (this process's monotonic clock)."""

    def __init__(self, peers: set[str]) -> None:
        start = time.monotonic()
        self.round = {p: 0 for p in peers}
        self.changed = {p: start for p in peers}

    def see(self, snapshots: list) -> None:
        now = time.monotonic()
        for s in snapshots:
            if s.party in self.round and s.round != self.round[s.party]:
                self.round[s.party], self.changed[s.party] = s.round, now

    def behind(self, own_round: int, rule: Liveness) -> dict[str, tuple[int, float]]:
        """peer → (rounds behind, seconds silent) for every peer beyond ``rule``'s limits."""
        now = time.monotonic()
        out = {}
        for p, r in self.round.items():
            lag, silent = own_round - r, now - self.changed[p]
            if lag > rule.rounds or silent > rule.seconds:
                out[p] = (lag, silent)
        return out


def describe_behind(behind: dict[str, tuple[int, float]]) -> str:
    """"p2 12 rounds behind, silent 95 s; p3 …"."""
    return "; ".join(f"{p} {lag} rounds behind, silent {silent:.0f} s" for p, (lag, silent) in sorted(behind.items()))


RoundCallback = Callable[[str, RoundReport, PartyLog], None]


def wait_for_genesis(transport: ChannelTransport, expected: set[str], *, timeout: float, poll: float = 0.05) -> None:
    """Block (bounded) until every readable channel has published its genesis counts."""
    deadline = time.monotonic() + timeout
    while True:
        seen = {s.party for s in transport.read_latest()}
        if expected <= seen:
            return
        if time.monotonic() > deadline:
            raise TrainingError(f"party {transport.party_id}: no genesis from {sorted(expected - seen)} after {timeout:.0f} s")
        time.sleep(poll)


def run_party(
    party: AsyncParty,
    transport: ChannelTransport,
    *,
    readable: set[str],
    max_sweeps: int,
    stop: threading.Event,
    delay: Callable[[], float] = lambda: 0.0,
    pause: Callable[[float], object] | None = None,
    on_round: RoundCallback | None = None,
    genesis_timeout: float = 120.0,
    converge_tol: float | None = None,
    checkpoint: Path | None = None,
    history: Path | None = None,
    algorithm: str = "",
    say: Callable[[str], None] = lambda _: None,
    liveness: Liveness = Liveness(),
) -> PartyLog:
    """Run party ``party`` until it or any party it reads reaches ``max_sweeps`` (or ``stop`` aborts it).

    ``delay()`` seconds are slept after every local round (the paper's random
    per-iteration delay that makes asynchrony real), by ``pause(seconds)`` if given (a virtual clock's,
    ``simulation.virtual_clock``), else by waiting on ``stop``. ``converge_tol``: stop this
    party when the fraction of its tokens whose counts changed drops below it.
    ``checkpoint``: an .npz path; if it exists the party resumes from it, and it
    is rewritten around every publication so that a crash never publishes a
    round twice nor skips one. ``history``: the party's history file (one line
    per round, ``fedtopic.runs.history``; ``algorithm`` names the run there and in the checkpoint). ``liveness``: when a peer counts
    as behind (said on the status line and in the history) and whether to wait for it (issue 28).
    """
    log = PartyLog(party.party_id)
    budget = max_sweeps
    max_sweeps = party.max_sweeps(budget)  # fewer when a privacy budget pays for fewer rounds

    received_before = 0  # bytes this party read before a restart (the transport counts from zero again)

    def totals() -> dict:
        return {"bytes_sent": log.bytes_sent, "bytes_received": received_before + transport.bytes_received(),
                "staleness": log.staleness, "read_from": sorted(log.read_from),
                "compute_seconds": log.compute_seconds, "comm_seconds": log.comm_seconds,
                "delay_seconds": log.delay_seconds}

    def publish(rnd: int, counts: np.ndarray) -> None:
        if checkpoint is not None:
            save_checkpoint(checkpoint, party, published=False, totals=totals(), algorithm=algorithm)
        log.bytes_sent += transport.publish(rnd, counts)
        if checkpoint is not None:
            save_checkpoint(checkpoint, party, published=True, totals=totals(), algorithm=algorithm)

    resumed = checkpoint is not None and checkpoint.exists()
    writer = None if history is None else HistoryWriter(history, resumed=resumed)
    if checkpoint is not None and checkpoint.exists():
        info = load_checkpoint(checkpoint, party, algorithm)
        log.rounds, log.sweeps = info.round, info.sweeps
        before = info.totals  # what happened before the restart counts too
        log.bytes_sent = int(before.get("bytes_sent", 0))
        received_before = int(before.get("bytes_received", 0))
        log.staleness = list(before.get("staleness", []))
        log.read_from = set(before.get("read_from", []))
        log.compute_seconds = float(before.get("compute_seconds", 0.0))
        log.comm_seconds = float(before.get("comm_seconds", 0.0))
        log.delay_seconds = float(before.get("delay_seconds", 0.0))
        say(f"{party.party_id}: resumed from {checkpoint} at round {info.round} ({info.sweeps} sweeps; "
            f"round {info.round} {'published' if info.published else 'not yet published'})")
        if not info.published and transport.latest_round(party.party_id) != info.round:
            publish(info.round, party.own_counts())
    else:
        publish(0, party.genesis())
    wait_for_genesis(transport, readable - {party.party_id}, timeout=genesis_timeout)
    n_words = len(party.vocab)  # the counts' rows (a learning party publishes its histograms below them)
    previous = party.own_counts()[:n_words]
    reads_before = transport.bytes_received()
    clock, told = _PeerClock(readable - {party.party_id}), frozenset[str]()

    def someone_finished(snapshots: list) -> bool:  # the fastest party's last round ends everyone's training
        return any(s.round * party.steps >= max_sweeps for s in snapshots)

    while not stop.is_set() and party.sweeps < max_sweeps:
        t0 = time.perf_counter()
        others = transport.read_latest()
        clock.see(others)
        behind = clock.behind(party.round, liveness)
        waited_since = time.monotonic()
        while behind and liveness.wait and not stop.is_set() and not someone_finished(others):
            waited = time.monotonic() - waited_since
            if waited > liveness.wait_limit:
                raise TrainingError(f"{party.party_id}: waited {waited:.0f} s for peers that fell behind "
                                    f"({describe_behind(behind)}); they did not come back")
            if int(waited) % 10 == 0:
                say(f"{party.party_id}: waiting for {describe_behind(behind)} (--if-behind wait)")
            stop.wait(1.0)
            others = transport.read_latest()
            clock.see(others)
            behind = clock.behind(party.round, liveness)
        if behind and frozenset(behind) != told:  # said once each time the set of late peers changes
            told = frozenset(behind)
            say(f"{party.party_id}: {describe_behind(behind)}; going on with their last counts"
                + ("" if liveness.wait else " (--if-behind wait waits for them)"))
        for p, (lag, _) in behind.items():
            log.behind[p] = max(log.behind.get(p, 0), lag)
        t1 = time.perf_counter()
        if someone_finished(others):
            break
        report = party.train_round(others)
        t2 = time.perf_counter()
        seconds = delay()
        if seconds > 0:
            (stop.wait if pause is None else pause)(seconds)
        t3 = time.perf_counter()
        sent_before, received_before_round = log.bytes_sent, transport.bytes_received()
        publish(report.round, report.n_wk)
        t4 = time.perf_counter()
        if writer is not None:
            top = weights = prevalence = None
            if top_words_due(report.round):
                top, weights, prevalence = record_topics(party, party.vocab, history, algorithm=algorithm,
                                                         round=report.round)
            quality, quality_name = party.quality()
            log.quality, log.quality_name = quality, quality_name
            writer.append(HistoryLine(
                party=party.party_id, algorithm=algorithm, round=report.round, time=time.time(),
                compute_s=t2 - t1, exchange_s=(t1 - t0) + (t4 - t3), wait_s=t3 - t2,
                bytes_up=log.bytes_sent - sent_before, bytes_down=received_before_round - reads_before,
                staleness=dict(report.staleness), epsilon=report.epsilon, quality=quality,
                quality_name=quality_name, top_words=top, top_weights=weights, prevalence=prevalence,
                extra={"sweeps": report.sweeps} | ({"behind": {p: lag for p, (lag, _) in behind.items()}}
                                                   if behind else {}) | dict(transport.publication())))
        reads_before = transport.bytes_received()
        log.rounds, log.sweeps = report.round, report.sweeps
        log.staleness.extend(report.staleness.values())
        log.read_from.update(report.staleness)
        log.compute_seconds += t2 - t1
        log.comm_seconds += (t1 - t0) + (t4 - t3)
        log.delay_seconds += t3 - t2
        if on_round is not None:
            on_round(party.party_id, report, log)
        if converge_tol is not None:
            # the share of the update's mass that moved (for counts: of the party's tokens that changed topic)
            counts = report.n_wk[:n_words]
            changed = np.abs(counts.astype(np.int64) - previous).sum() / (2 * max(int(np.sum(previous)), 1))
            previous = counts
            if changed < converge_tol:
                log.stopped_by = "converged"
                break
    if party.sweeps >= max_sweeps:
        log.stopped_by = "max-iterations" if max_sweeps == budget else "epsilon-budget"
    # a party that stops because a party it reads finished (Alg. 3's rule: the fastest ends everyone) does not train
    # on alone against counts nobody will publish again; its summary says how short its own training is
    log.stopped_by = log.stopped_by or "fastest-party-finished"
    log.planned_sweeps = max_sweeps
    log.bytes_received = received_before + transport.bytes_received()
    return log

