"""The synchronous party runtime: one loop for every ``FederatedParty``, in ``node run`` and in ``simulate``.

For a party it opens every channel the party declares (one aggregator session each, ``channels``), restores
the party from its checkpoint, redoes ``setup``, then calls ``step`` until ``done``. Around the party's
exchanges it encodes under the protection, persists the encoded bytes before sending (``pending/``), makes one
request per exchange (submit and fetch), sends mask recovery messages when asked, decodes, and measures times
and bytes. After every step it checkpoints (party state + the next round, atomically) and appends one line to
the party's history (``fedtopic.runs.history``).

Crash recovery: the checkpoint is the state after the last finished step (or a mid-step one the party asked
for). A restarted party redoes the steps after it; every update it recomputes must have the digest of the one
persisted before the crash, and the persisted bytes are what is sent again, which the aggregator takes as the
update it already holds (or as a new one if the crash came before it arrived). So a killed and restarted
party ends bit-identical to one never killed.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.federated import (
    Aggregate,
    Channel,
    FederatedParty,
    TopicsUpdate,
)
from fedtopic.crypto.keys import PartyKeys
from fedtopic.errors import NetworkError, TrainingError
from fedtopic.node.channels import ChannelSession, open_channel, update_digest
from fedtopic.node.count_channel import RoundFailed, open_counts_channel
from fedtopic.node.heartbeat import Heartbeat
from fedtopic.node.link import Link
from fedtopic.node.run_session import resolve_run_session
from fedtopic.node.state_file import read_arrays, write_arrays, write_text_atomic
from fedtopic.protections import Secrets, get_protection
from fedtopic.runs.history import (
    HistoryLine,
    HistoryWriter,
    read_history,
    top_words_due,
)
from fedtopic.runs.topic_snapshot import record_topics
from fedtopic.temp_names import sibling_temp
from fedtopic.text import some_names

CHECKPOINT = "party-checkpoint.npz"
SESSION_FILE = "session.txt"  # the base session id this party's run trains in (``run_session``)
MAX_FAILED_ROUNDS = 100
_FORMAT = "fedtopic-sync-checkpoint/1"
_RUNTIME_KEY = "__runtime__"


@dataclass(frozen=True)
class ProtectionSettings:
    """The consortium's protection and the ``aggregator.*`` options protections read: the size of a key the
    launcher makes (Paillier) and the encrypted fraction of the vocabulary (IPHE / UPHE's δ)."""

    name: str = "none"
    key_bits: int = 2048
    delta: float = 0.005


@dataclass(frozen=True)
class Connection:
    """Where and how a party exchanges: its link to the aggregator (``node.link``: HTTP, or in-process) and the
    key it signs with, the consortium's parties (in order), their X25519 keys and the launcher's address, the
    protection, the base session
    id (a channel's session is ``<session>-<channel>``) and the params every party must agree on (algorithm, K,
    seed, vocabulary digest, options), and the round clock: how long a round may take for this party, and the
    aggregator's straggler deadline its ``counts`` sessions ask for (None: the aggregator's default)."""

    link: Link
    ids: Sequence[str]
    publics: Sequence[bytes]
    launcher: str  # the first party's address (from this party's consortium.toml): it signs every setup session
    protection: ProtectionSettings
    session: str
    params: Mapping[str, Any]
    round_timeout: float = 3600.0
    straggler_deadline_seconds: float | None = None

    @property
    def keys(self) -> PartyKeys:
        return self.link.keys


@dataclass
class _Meter:
    """Seconds and bytes of the exchanges of the current step."""

    exchange_s: float = 0.0
    wait_s: float = 0.0
    bytes_up: int = 0
    bytes_down: int = 0
    recoveries: int = 0
    contributors: tuple[str, ...] | None = None

    def take(self) -> _Meter:
        out = _Meter(self.exchange_s, self.wait_s, self.bytes_up, self.bytes_down, self.recoveries,
                     self.contributors)
        self.exchange_s = self.wait_s = 0.0
        self.bytes_up = self.bytes_down = self.recoveries = 0
        self.contributors = None
        return out


@dataclass
class _Pending:
    """Encoded updates persisted before sending, until the checkpoint that covers them."""

    folder: Path | None
    keep: frozenset[str] = frozenset()  # channels whose payloads outlive checkpoints (setup, redone at every start)

    def payload(self, channel: str, seq: int, update: np.ndarray | TopicsUpdate, encode: Callable[[], bytes]) -> bytes:
        """The encoded ``update``: persisted before it is sent (with the update's digest), or the one persisted
        before a restart when its digest matches. Without a folder (a one-process simulation) nothing is kept,
        and the update is not hashed (a gFedNTM gradient is 6 MB: 25 hashes a step)."""
        if self.folder is None:
            return encode()
        digest = update_digest(update)
        base = self.folder / f"{channel}-{seq}"
        meta, blob = base.with_suffix(".json"), base.with_suffix(".bin")
        if meta.is_file() and blob.is_file():
            try:
                info = json.loads(meta.read_text())
                payload = blob.read_bytes()
            except (OSError, ValueError):
                info, payload = None, b""
            if info is not None:
                if info.get("digest") != digest:
                    raise TrainingError(
                        f"the update of {channel} round {seq} differs from the one sent before the restart (the "
                        "party's state or data changed since): move the state folder away to start afresh")
                return payload
        payload = encode()
        self.folder.mkdir(parents=True, exist_ok=True)
        for path, data in ((blob, payload), (meta, json.dumps({"digest": digest}).encode())):
            tmp = sibling_temp(path)
            tmp.write_bytes(data)
            tmp.replace(path)
        return payload

    def clear(self) -> None:
        if self.folder is not None and self.folder.is_dir():
            for path in self.folder.iterdir():
                if path.name.rsplit("-", 1)[0] not in self.keep:
                    path.unlink(missing_ok=True)


class _Flight:
    """One exchange: its update encoded (and persisted) in the party's thread when it begins, sent in that
    thread (``sum``) or in one of its own (``start``), its aggregate decoded in the party's thread."""

    def __init__(self, ex: _Exchange, channel: str, seq: int, update: np.ndarray | TopicsUpdate) -> None:
        try:
            self.ch = ex.channels[channel]
        except KeyError:
            raise TrainingError(f"the party exchanges on channel {channel!r}, which it did not declare") from None
        if channel in ex.in_flight:
            raise TrainingError(f"the party exchanges on channel {channel!r} before its last exchange there ended")
        self.ex, self.channel, self.seq, self.update = ex, channel, seq, update
        self.recoveries = getattr(self.ch, "recoveries", 0)
        t0 = time.perf_counter()
        self.payload = self._encode()
        self.encode_s = time.perf_counter() - t0
        self.answer: Any = None
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None
        self.aggregate: Aggregate | None = None
        ex.in_flight.add(channel)

    def _encode(self) -> bytes:
        rnd = self.seq + getattr(self.ch, "offset", 0)  # the aggregator's round: later after a failed one
        return self.ex.pending.payload(self.channel, rnd, self.update, lambda: self.ch.encode(self.update, self.seq))

    def fly(self) -> None:
        """Send until a round takes the update (only counts channels fail rounds: the work is redone under the
        next round number, encoded holding the compute lock); an error is kept for ``result``."""
        ex = self.ex
        on_wait = None if ex._on_wait is None else (
            lambda r, missing, s: ex._on_wait(self.channel, missing, s))  # type: ignore[misc]
        try:
            for _ in range(MAX_FAILED_ROUNDS):
                try:
                    self.answer = self.ch.send(self.payload, self.seq, ex.timeout, on_wait)
                    return
                except RoundFailed:
                    self.ch.offset += 1  # type: ignore[union-attr]
                    rnd = self.seq + self.ch.offset  # type: ignore[union-attr]
                    ex.say(f"{self.channel} round {rnd - 1} failed (parties lost, survivors missing too); redoing "
                           f"it as round {rnd}")
                    with ex.lock:
                        self.payload = self._encode()
            raise TrainingError(f"{self.channel}: {MAX_FAILED_ROUNDS} aggregator rounds failed in a row")
        except BaseException as exc:  # handed to the party's thread by ``result``
            self.error = exc

    def result(self) -> Aggregate:
        """The aggregate (waiting for it without the compute lock if it is still under way), decoded and metered
        once."""
        if self.aggregate is not None:
            return self.aggregate
        ex, m = self.ex, self.ex.meter
        if self.thread is not None:  # ``sum`` sent it in the party's thread and metered that wait itself
            t1 = time.perf_counter()
            ex.lock.release()
            try:
                self.thread.join()
            finally:
                ex.lock.acquire()
            m.wait_s += time.perf_counter() - t1
        ex.in_flight.discard(self.channel)
        if self.error is not None:
            raise self.error
        t2 = time.perf_counter()
        self.aggregate = self.ch.decode(self.answer, self.seq)
        m.recoveries += getattr(self.ch, "recoveries", 0) - self.recoveries
        m.exchange_s += self.encode_s + (time.perf_counter() - t2)
        m.bytes_up += len(self.payload)
        m.bytes_down += len(self.answer.payload)
        m.contributors = self.aggregate.contributors
        return self.aggregate


class _Exchange:
    """The runtime's ``Exchange``: what ``FederatedParty.step`` calls."""

    def __init__(self, channels: Mapping[str, ChannelSession], pending: _Pending, meter: _Meter, timeout: float,
                 checkpoint: Callable[[], None],
                 on_wait: Callable[[str, list[str], float], None] | None = None,
                 say: Callable[[str], None] = lambda _: None, lock: Any = None) -> None:
        # ``lock``: held while the party computes, released while it waits (its own, or one the parties share)
        self.channels, self.pending, self.meter, self.timeout = channels, pending, meter, timeout
        self._checkpoint, self._on_wait, self.say, self.lock = checkpoint, on_wait, say, lock
        self.in_flight: set[str] = set()  # channels with an exchange not yet ended by ``result``

    def sum(self, channel: str, seq: int, update: np.ndarray | TopicsUpdate) -> Aggregate:
        flight = _Flight(self, channel, seq, update)
        t1 = time.perf_counter()
        self.lock.release()  # computing is done: let another party compute while this one waits
        try:
            flight.fly()
        finally:
            self.lock.acquire()
        self.meter.wait_s += time.perf_counter() - t1
        return flight.result()

    def start(self, channel: str, seq: int, update: np.ndarray | TopicsUpdate) -> _Flight:
        flight = _Flight(self, channel, seq, update)
        flight.thread = threading.Thread(target=flight.fly, name=f"exchange-{channel}-{seq}", daemon=True)
        flight.thread.start()
        return flight

    def checkpoint(self) -> None:
        self._checkpoint()


def _runtime_meta(party_id: str, algorithm: str, params: Mapping[str, Any], next_round: int,
                  offsets: Mapping[str, int] | None = None, session: str = "") -> np.ndarray:
    return np.array(json.dumps({"format": _FORMAT, "party": party_id, "algorithm": algorithm,
                                "params": dict(params), "round": next_round, "offsets": dict(offsets or {}),
                                "session": session}, sort_keys=True, default=str))


def _restore(path: Path, party: FederatedParty, algorithm: str,
             params: Mapping[str, Any]) -> tuple[int, dict[str, int], str | None]:
    """Restore ``party`` from ``path``; (the round to do next, the channels' round offsets: failed rounds redone,
    the base session it trained in: None for checkpoints from before generations). One-line TrainingError when it
    does not fit."""
    try:
        arrays = read_arrays(path)
        meta = json.loads(str(arrays.pop(_RUNTIME_KEY)))
    except (OSError, ValueError, KeyError) as exc:
        raise TrainingError(f"checkpoint {path} is unreadable ({exc}); move it away (`node run --fresh` sets it aside) to start afresh") from None
    made_for = {"format": meta.get("format"), "party": meta.get("party"), "algorithm": meta.get("algorithm")}
    this = {"format": _FORMAT, "party": party.party_id, "algorithm": algorithm}
    changed = [f"{k} {made_for[k]!r} → {v!r}" for k, v in this.items() if made_for[k] != v]
    old_params = json.loads(json.dumps(meta.get("params", {}), default=str))
    new_params = json.loads(json.dumps(dict(params), default=str))
    changed += [f"{k} {old_params.get(k)!r} → {new_params.get(k)!r}" for k in sorted(set(old_params) | set(new_params))
                if old_params.get(k) != new_params.get(k)]
    if changed:
        raise TrainingError(f"checkpoint {path} was made for another run ({'; '.join(changed)}); move the state "
                            "folder away (`node run --fresh` sets it aside) to start afresh")
    try:
        party.restore(arrays)
    except (ValueError, KeyError, TypeError) as exc:
        raise TrainingError(f"checkpoint {path} does not fit this party ({exc}); move it away (`node run --fresh` sets it aside) to start afresh") \
            from None
    return (int(meta["round"]), {str(k): int(v) for k, v in meta.get("offsets", {}).items()},
            meta.get("session") or None)


def history_gaps(history: Path, upto: int) -> list[int]:
    """The rounds below ``upto`` that ``history`` has no line for (torn lines skipped)."""
    have = {int(r["round"]) for r in read_history(history)} if history.exists() else set()
    return [r for r in range(upto) if r not in have]


def number_ranges(numbers: Sequence[int]) -> str:
    """"2, 8–15, 20" for [2, 8, 9, …, 15, 20]."""
    out: list[str] = []
    for n in sorted(numbers):
        if out and out[-1].split("–")[-1] == str(n - 1):
            out[-1] = f"{out[-1].split('–')[0]}–{n}"
        else:
            out.append(str(n))
    return ", ".join(out)


def run_sync_party(party: FederatedParty, conn: Connection, *, algorithm: str, state_dir: Path | None = None,
                   history: Path | None = None, vocab: Sequence[str] | None = None,
                   on_round: Callable[[HistoryLine], None] | None = None,
                   say: Callable[[str], None] = lambda _: None, compute_lock: Any = None,
                   fresh: bool = False, labels: Mapping[str, Any] | None = None) -> list[HistoryLine]:
    """Run ``party`` to the end through the aggregator of ``conn``; the history lines this process wrote.

    ``state_dir``: checkpoints and persisted updates (None: no crash recovery, as in a one-process simulation);
    ``history``: the JSON-lines file to append to; ``vocab``: the words, for the history's top words;
    ``compute_lock``: a lock shared by the parties of one process, held while a party computes and released
    while it waits in an exchange, so that parties never compute at the same time and every phase is timed
    alone (Table 4's timing, the mask benchmark); ``fresh``: this party's state was set aside for a new run, so
    a generation that holds its updates is abandoned (``run_session``); ``labels``: added to every history line's
    ``extra`` (where an engine ran the party: ``ray_node``)."""
    if conn.keys.party_id != party.party_id:
        raise TrainingError(f"the key file is {conn.keys.party_id}'s, the party is {party.party_id}")
    n = len(conn.ids)
    setup_of = getattr(party, "setup_channels", None)
    early = list(setup_of(n)) if setup_of is not None else list(party.channels(n))
    ckpt = None if state_dir is None else state_dir / CHECKPOINT
    start, resumed, offsets = 0, ckpt is not None and ckpt.exists(), {}
    base: str | None = None
    if resumed:
        assert ckpt is not None
        start, offsets, base = _restore(ckpt, party, algorithm, conn.params)
        say(f"{party.party_id}: resumed at round {start}")
        if history is not None:
            lacking = history_gaps(history, start)
            if lacking:
                say(f"{party.party_id}: its history {history} lacks rounds {number_ranges(lacking)} (the file was "
                    "cut or damaged); their lines cannot be written again: the checkpoint holds only the state after "
                    f"round {start - 1}, and the summary says which are missing")
    chosen = None if state_dir is None else state_dir / SESSION_FILE  # written before anything is sent
    if base is None and chosen is not None and chosen.is_file():
        base = chosen.read_text(encoding="utf-8").strip() or None
    if base is None:
        base = conn.session if resumed else resolve_run_session(
            conn.link.session, conn.session,
            early[0].name, party.party_id, conn.params, fresh=fresh, say=say)
        if chosen is not None:
            write_text_atomic(chosen, base)
    keep = frozenset(c.name for c in early) if setup_of is not None else frozenset()
    pending = _Pending(None if state_dir is None else state_dir / "pending", keep)
    writer = None if history is None else HistoryWriter(history, resumed=resumed)
    lines: list[HistoryLine] = []
    meter = _Meter()
    round_box = [start]
    sessions: dict[str, ChannelSession] = {}

    def checkpoint() -> None:
        if ckpt is not None:
            now = {name: int(getattr(ch, "offset", 0)) for name, ch in sessions.items()}
            write_arrays(ckpt, party.state() | {_RUNTIME_KEY: _runtime_meta(party.party_id, algorithm, conn.params,
                                                                             round_box[0], now, base)})
            pending.clear()

    def checkpoint_mid_round() -> None:
        if ckpt is not None:
            checkpoint()
            say(f"{party.party_id}: checkpoint during round {round_box[0]}")

    def waiting(channel: str, missing: list[str], seconds: float) -> None:
        say(f"{party.party_id}: round {round_box[0]} waits for {some_names(missing) or 'the aggregator'} "
            f"({seconds:.0f} s, channel {channel})")

    protection = get_protection(conn.protection.name)
    with ExitStack() as stack:
        secrets: list[Secrets | None] = [None]

        def open_all(channels: Sequence[Channel]) -> None:
            for channel in channels:
                if channel.name in sessions:
                    raise TrainingError(f"{algorithm}: two channels are named {channel.name!r}")
                client = stack.enter_context(conn.link.session(f"{base}-{channel.name}"))
                if channel.kind == "counts":
                    ch, secrets[0] = open_counts_channel(
                        client, channel, conn.ids, conn.keys, conn.publics, launcher=conn.launcher,
                        protection=protection,
                        params=conn.params, timeout=conn.round_timeout, key_bits=conn.protection.key_bits,
                        delta=conn.protection.delta,
                        straggler_deadline=conn.straggler_deadline_seconds, secrets=secrets[0])
                    ch.offset = offsets.get(channel.name, 0)
                    sessions[channel.name] = ch
                else:
                    sessions[channel.name] = open_channel(client, channel, conn.ids, conn.keys, conn.publics,
                                                          launcher=conn.launcher, protection=protection,
                                                          params=conn.params,
                                                          timeout=conn.round_timeout,
                                                          key_bits=conn.protection.key_bits)
                stack.callback(getattr(sessions[channel.name], "close", lambda: None))

        open_all(early)
        if state_dir is not None:  # a node process (simulate's parties share a process the dashboard checks)
            beat = stack.enter_context(conn.link.session(f"{base}-{early[0].name}", patience=0.0, timeout=5.0))
            stack.enter_context(Heartbeat(beat.session_info))
        lock = compute_lock if compute_lock is not None else threading.Lock()  # uncontended: this party alone
        exchange = _Exchange(sessions, pending, meter, conn.round_timeout, checkpoint_mid_round, waiting, say, lock)
        with lock:
            party.setup(exchange)
        if setup_of is not None:
            open_all(party.channels(n))
        meter.take()
        r = start
        while not party.done():
            t0 = time.perf_counter()
            with lock:
                record = party.step(r, exchange)
            if exchange.in_flight:
                raise TrainingError(f"{algorithm}: step {r} ended with exchanges it started still under way "
                                    f"({', '.join(sorted(exchange.in_flight))}); a step waits for each one's result")
            seconds = time.perf_counter() - t0
            m = meter.take()
            r += 1
            round_box[0] = r
            top = weights = prevalence = None
            if vocab is not None and (top_words_due(r - 1) or party.done()):
                top, weights, prevalence = record_topics(party, vocab, history, algorithm=algorithm, round=r - 1)
            line = HistoryLine(party=party.party_id, algorithm=algorithm, round=r - 1, time=time.time(),
                               compute_s=max(0.0, seconds - m.exchange_s - m.wait_s), exchange_s=m.exchange_s,
                               wait_s=m.wait_s, bytes_up=m.bytes_up, bytes_down=m.bytes_down,
                               recoveries=m.recoveries,
                               contributors=None if m.contributors is None else list(m.contributors),
                               epsilon=record.epsilon, quality=record.quality, quality_name=record.quality_name,
                               top_words=top, top_weights=weights, prevalence=prevalence,
                               extra=dict(record.extra) | dict(labels or {}))
            if writer is not None:  # before the checkpoint: a kill in between redoes the round, which writes its
                writer.append(line)  # line again (readers keep the last per round); after, it would lose the line
            checkpoint()
            lines.append(line)
            if on_round is not None:
                on_round(line)
        for session in sessions.values():  # the aggregator's /status then says the session finished
            try:
                session.client.finished()
            except NetworkError as exc:  # the training is done and its model comes next: only the status suffers
                say(f"{party.party_id}: could not tell the aggregator this session finished ({exc})")
    return lines
