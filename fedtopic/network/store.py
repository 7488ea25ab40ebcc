"""The aggregator's durable state in one SQLite file (stdlib sqlite3, WAL, one writer lock).

Every method that changes state commits before it returns, with
``synchronous=FULL``: once a caller answers 2xx, a kill -9 (or power loss)
cannot undo it. Accepted update payloads are kept until their round's
aggregate is committed, then dropped (their hash and size stay for the
record). Aggregates of the last ``KEEP_AGGREGATES`` rounds are kept so late
parties can still fetch them. A masked round that lost parties keeps its
recovery request and the survivors' recovery messages here until it closes.

Update and aggregate payloads larger than ``INLINE_MAX`` bytes (dense masked
residues, ciphertexts) live in files (``blobs``): each is written and fsynced
before the transaction that commits its row (payload NULL, hash and size set),
so the guarantee above holds for them too; the row's (session, round, party,
sha256) names the file. Small payloads (the sparse ``none`` updates) stay in
their rows. The large payloads of open rounds are also kept in memory as
accepted, so closing a round does not read them back; files a closed round no
longer needs are deleted by a background thread (deleting 20 files took ~7 ms
of the closing request; a crash before they are gone leaves orphans the next
start sweeps).

An update whose sender waits on the line for the round's aggregate needs none of this: until it is answered, a
crash only breaks its connection and the sender sends it again. The service holds such updates in memory
(``HeldUpdate``) and hands them to ``close_round`` / ``fail_round``, which record their rows (hash, size, time;
no payload) in the transaction that commits the round's end; one that must be answered before its round ends
goes through ``add_update`` first.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from fedtopic.crypto.witness import Witness
from fedtopic.network.blobs import BlobDir, aggregate_blob, update_blob
from fedtopic.network.errors import NetworkError

KEEP_AGGREGATES = 16
INLINE_MAX = 1 << 16
"""Payloads up to this many bytes are stored in their SQLite row, larger ones in a file (see module docstring)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY, spec TEXT NOT NULL, created_by TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS rounds (
  session TEXT NOT NULL, number INTEGER NOT NULL, opened_at REAL NOT NULL, first_update_at REAL,
  closed_at REAL, close_reason TEXT, PRIMARY KEY (session, number));
CREATE TABLE IF NOT EXISTS updates (
  session TEXT NOT NULL, number INTEGER NOT NULL, party TEXT NOT NULL, sha256 TEXT NOT NULL,
  size INTEGER NOT NULL, payload BLOB, received_at REAL NOT NULL, PRIMARY KEY (session, number, party));
CREATE TABLE IF NOT EXISTS aggregates (
  session TEXT NOT NULL, number INTEGER NOT NULL, payload BLOB, sha256 TEXT NOT NULL,
  contributors TEXT NOT NULL, missing TEXT NOT NULL, PRIMARY KEY (session, number));
CREATE TABLE IF NOT EXISTS recovery_requests (
  session TEXT NOT NULL, number INTEGER NOT NULL, dropped TEXT NOT NULL, survivors TEXT NOT NULL,
  requested_at REAL NOT NULL, PRIMARY KEY (session, number));
CREATE TABLE IF NOT EXISTS recoveries (
  session TEXT NOT NULL, number INTEGER NOT NULL, party TEXT NOT NULL, sha256 TEXT NOT NULL, payload BLOB,
  PRIMARY KEY (session, number, party));
CREATE TABLE IF NOT EXISTS vocabularies (
  session TEXT NOT NULL, party TEXT NOT NULL, words TEXT NOT NULL, sha256 TEXT NOT NULL,
  PRIMARY KEY (session, party));
CREATE TABLE IF NOT EXISTS nonces (
    nonce TEXT PRIMARY KEY, seen REAL NOT NULL);
CREATE INDEX IF NOT EXISTS nonces_seen ON nonces (seen);
CREATE INDEX IF NOT EXISTS updates_by_party ON updates (session, party, number);
CREATE TABLE IF NOT EXISTS witness_spans (
  session TEXT NOT NULL, party TEXT NOT NULL, first INTEGER NOT NULL, last INTEGER NOT NULL, digests TEXT NOT NULL,
  signature TEXT NOT NULL, PRIMARY KEY (session, last, party));
CREATE TABLE IF NOT EXISTS session_ends (
  session TEXT NOT NULL, party TEXT NOT NULL, kind TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (session, party));
"""


_LAST_UPDATE = ("SELECT number, received_at FROM updates WHERE session = ? AND party = ? "
                "ORDER BY number DESC LIMIT 1")
"""A party's latest update: one lookup in ``updates_by_party``, however many rounds the session has run."""


@dataclass(frozen=True)
class RoundRow:
    """One round's clock data; ``received`` in acceptance order."""

    number: int
    opened_at: float
    first_update_at: float | None
    closed_at: float | None
    close_reason: str | None
    received: tuple[str, ...]


@dataclass(frozen=True)
class AggregateRow:
    """A closed round's aggregate; ``payload`` is None once pruned."""

    payload: bytes | None
    sha256: str
    contributors: tuple[str, ...]
    missing: tuple[str, ...]
    close_reason: str


@dataclass(frozen=True)
class HeldUpdate:
    """An accepted update not yet written (see the module docstring): its row is written when the round ends."""

    party: str
    sha256: str
    size: int
    received_at: float


def _held_rows(session: str, number: int, held: Sequence[HeldUpdate]) -> list[tuple[str, tuple[object, ...]]]:
    """The statements that record ``held`` updates' rows (no payload) and the round's first-update time."""
    out: list[tuple[str, tuple[object, ...]]] = [
        ("INSERT INTO updates VALUES (?, ?, ?, ?, ?, NULL, ?)", (session, number, h.party, h.sha256, h.size,
                                                                 h.received_at)) for h in held]
    if held:
        first = min(h.received_at for h in held)
        out.append(("UPDATE rounds SET first_update_at = COALESCE(MIN(first_update_at, ?), ?) WHERE session = ? "
                    "AND number = ?", (first, first, session, number)))
    return out


class Store:
    """All reads and writes of ``DIR/aggregator.sqlite3``, serialised by one lock."""

    def __init__(self, data_dir: Path) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.path = data_dir / "aggregator.sqlite3"
        try:
            self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise NetworkError(f"aggregator state {self.path} cannot be opened: {exc}") from None
        self._lock = threading.Lock()
        self.blobs = BlobDir(data_dir / "blobs")
        self.blobs.sweep(self._needed_blobs())
        self._open_payloads: dict[tuple[str, int, str], bytes] = {}  # large accepted updates of open rounds
        self._reaper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="blob-reaper")

    def _needed_blobs(self) -> set[str]:
        """Files that rows still name: large updates of open rounds, large aggregates not yet pruned."""
        updates = self._read("SELECT u.session, u.number, u.party, u.sha256 FROM updates u JOIN rounds r "
                             "ON r.session = u.session AND r.number = u.number "
                             "WHERE r.closed_at IS NULL AND u.payload IS NULL AND u.size > ?", (INLINE_MAX,))
        aggregates = self._read("SELECT a.session, a.number, a.sha256 FROM aggregates a WHERE a.payload IS NULL "
                                "AND a.sha256 != '' AND a.number > (SELECT MAX(b.number) FROM aggregates b "
                                "WHERE b.session = a.session) - ?", (KEEP_AGGREGATES,))
        return {update_blob(*row) for row in updates} | {aggregate_blob(*row) for row in aggregates}

    def _end_round(self, session: str, number: int, statements: list[tuple[str, tuple[object, ...]]],
                   extra: Iterable[str] = ()) -> None:
        """Commit the round's end (``statements``), then forget its payloads and delete their files (and
        ``extra``) off-thread: the files of the rows written before this commit (held updates have none)."""
        rows = self._read("SELECT party, sha256 FROM updates WHERE session = ? AND number = ? AND size > ?",
                          (session, number, INLINE_MAX))
        self._write(statements)
        for party, _ in rows:
            self._open_payloads.pop((session, number, party), None)
        names = [update_blob(session, number, party, sha) for party, sha in rows] + list(extra)
        if names:
            self._reaper.submit(self.blobs.drop, names)

    def close(self) -> None:
        """Close the database (everything is already committed) after pending file deletions."""
        self._reaper.shutdown(wait=True)
        with self._lock:
            self._conn.close()

    def _write(self, statements: list[tuple[str, tuple[object, ...]]]) -> None:
        """Run ``statements`` as one committed transaction."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                for sql, args in statements:
                    self._conn.execute(sql, args)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _read(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple]:
        with self._lock:
            return self._conn.execute(sql, args).fetchall()

    # replay protection ----------------------------------------------------------
    def record_nonce(self, nonce: str, now: float, window: float) -> bool:
        """Record a request nonce (committed before the request is served); False if it was seen within
        ``window`` seconds of ``now``. Older nonces are forgotten: their timestamps fail the window anyway."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute("DELETE FROM nonces WHERE seen < ?", (now - 2 * window,))
                fresh = self._conn.execute("INSERT OR IGNORE INTO nonces VALUES (?, ?)", (nonce, now)).rowcount == 1
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            return fresh

    # sessions -----------------------------------------------------------------
    def create_session(self, session: str, spec: dict, created_by: str, now: float) -> None:
        """Store a new session and open its round 0."""
        self._write([
            ("INSERT INTO sessions VALUES (?, ?, ?, ?)", (session, json.dumps(spec, sort_keys=True), created_by, now)),
            ("INSERT INTO rounds (session, number, opened_at) VALUES (?, 0, ?)", (session, now)),
        ])

    def sessions(self) -> list[tuple[str, dict, str, float]]:
        """Every session as (id, spec, created_by, created_at), oldest first."""
        rows = self._read("SELECT id, spec, created_by, created_at FROM sessions ORDER BY created_at, id")
        return [(sid, json.loads(spec), by, at) for sid, spec, by, at in rows]

    def end_session(self, session: str, party: str, kind: str, at: float) -> None:
        """Record that ``party`` finished its training in ``session`` (``kind`` "finished") or abandoned it for a
        fresh run ("abandoned"); the first word of a party stands."""
        self._write([("INSERT OR IGNORE INTO session_ends VALUES (?, ?, ?, ?)", (session, party, kind, at))])

    def add_witness(self, session: str, witness: Witness) -> None:
        """Record a member's signed witness of a span of rounds (its first for a last round stands)."""
        self._write([("INSERT OR IGNORE INTO witness_spans VALUES (?, ?, ?, ?, ?, ?)",
                      (session, witness.party, witness.first, witness.last, ",".join(witness.digests),
                       witness.signature))])

    def witnesses(self, session: str, first: int, last: int) -> list[Witness]:
        """Every witness whose span overlaps rounds ``first`` … ``last``, by party and span."""
        rows = self._read("SELECT party, first, digests, signature FROM witness_spans WHERE session = ? AND "
                          "last >= ? AND first <= ? ORDER BY party, first", (session, first, last))
        return [Witness(party, f, tuple(digests.split(",")), signature) for party, f, digests, signature in rows]

    def aggregate_digests(self, session: str, first: int, last: int) -> dict[int, str]:
        """round → sha256 of the aggregate of every round from ``first`` to ``last`` that has one."""
        rows = self._read("SELECT number, sha256 FROM aggregates WHERE session = ? AND number BETWEEN ? AND ? "
                          "AND sha256 != ''", (session, first, last))
        return dict(rows)

    def session_ends(self, session: str) -> dict[str, tuple[str, float]]:
        """party → (kind, at) of every party that finished or abandoned ``session``."""
        rows = self._read("SELECT party, kind, at FROM session_ends WHERE session = ?", (session,))
        return {party: (kind, at) for party, kind, at in rows}

    def last_updates(self, session: str, parties: Iterable[str]) -> dict[str, tuple[int, float]]:
        """party → (its latest round with an update, when that update arrived) in ``session``, for those of
        ``parties`` with one."""
        with self._lock:
            rows = {party: self._conn.execute(_LAST_UPDATE, (session, party)).fetchone() for party in parties}
        return {party: (int(row[0]), float(row[1])) for party, row in rows.items() if row is not None}

    def last_update(self, session: str, party: str) -> tuple[int, float] | None:
        """(``party``'s latest round with an update, when it arrived) in ``session``; None before its first."""
        return self.last_updates(session, (party,)).get(party)

    # rounds and updates ----------------------------------------------------------
    def round(self, session: str, number: int) -> RoundRow | None:
        """One round, or None if it was never opened."""
        rows = self._read("SELECT opened_at, first_update_at, closed_at, close_reason FROM rounds "
                          "WHERE session = ? AND number = ?", (session, number))
        if not rows:
            return None
        parties = self._read("SELECT party FROM updates WHERE session = ? AND number = ? "
                             "ORDER BY received_at, rowid", (session, number))
        opened, first, closed, reason = rows[0]
        return RoundRow(number, opened, first, closed, reason, tuple(p for (p,) in parties))

    def open_round(self, session: str) -> RoundRow:
        """The session's open round (there is always exactly one)."""
        (number,), = self._read("SELECT MAX(number) FROM rounds WHERE session = ?", (session,))
        row = self.round(session, number)
        assert row is not None and row.closed_at is None, f"session {session}: round {number} should be open"
        return row

    def add_update(self, session: str, number: int, party: str, sha256: str, payload: bytes, now: float) -> None:
        """Store an accepted update (and the round's first-update time) in one commit (a large one's file first)."""
        inline = len(payload) <= INLINE_MAX
        if not inline:
            self.blobs.put(update_blob(session, number, party, sha256), payload)
        self._write([
            ("INSERT INTO updates VALUES (?, ?, ?, ?, ?, ?, ?)",
             (session, number, party, sha256, len(payload), payload if inline else None, now)),
            ("UPDATE rounds SET first_update_at = COALESCE(first_update_at, ?) WHERE session = ? AND number = ?",
             (now, session, number)),
        ])
        if not inline:
            self._open_payloads[(session, number, party)] = payload

    def update_sha256(self, session: str, number: int, party: str) -> str | None:
        """Hash of ``party``'s accepted update for the round, or None."""
        rows = self._read("SELECT sha256 FROM updates WHERE session = ? AND number = ? AND party = ?",
                          (session, number, party))
        return rows[0][0] if rows else None

    def payloads(self, session: str, number: int) -> list[tuple[str, bytes]]:
        """(party, payload) of the round's accepted updates in acceptance order."""
        rows = self._read("SELECT party, sha256, size, payload FROM updates WHERE session = ? AND number = ? "
                          "ORDER BY rowid", (session, number))
        out = []
        for party, sha, size, payload in rows:
            if payload is None:
                payload = self._open_payloads.get((session, number, party))
            if payload is None:  # after a restart
                payload = self.blobs.get(update_blob(session, number, party, sha))
                if payload is None or len(payload) != size:
                    raise NetworkError(f"the stored update of {party!r} for round {number} of {session!r} is "
                                       f"missing or damaged in {self.blobs.root}")
            out.append((party, payload))
        return out

    def close_round(self, session: str, number: int, now: float, reason: str, aggregate: bytes, sha256: str,
                    contributors: tuple[str, ...], missing: tuple[str, ...],
                    held: Sequence[HeldUpdate] = ()) -> None:
        """Commit the aggregate, close the round, open the next, drop the round's payloads and old aggregates;
        record the rows of the ``held`` updates in the same commit."""
        inline = len(aggregate) <= INLINE_MAX
        if not inline:
            self.blobs.put(aggregate_blob(session, number, sha256), aggregate)
        pruned = self._read("SELECT number, sha256 FROM aggregates WHERE session = ? AND number = ? "
                            "AND payload IS NULL AND sha256 != ''", (session, number - KEEP_AGGREGATES))
        self._end_round(session, number, [
            *_held_rows(session, number, held),
            ("INSERT INTO aggregates VALUES (?, ?, ?, ?, ?, ?)",
             (session, number, aggregate if inline else None, sha256, json.dumps(contributors),
              json.dumps(missing))),
            ("UPDATE rounds SET closed_at = ?, close_reason = ? WHERE session = ? AND number = ?",
             (now, reason, session, number)),
            ("INSERT INTO rounds (session, number, opened_at) VALUES (?, ?, ?)", (session, number + 1, now)),
            ("UPDATE updates SET payload = NULL WHERE session = ? AND number = ?", (session, number)),
            ("UPDATE recoveries SET payload = NULL WHERE session = ? AND number = ?", (session, number)),
            ("UPDATE aggregates SET payload = NULL WHERE session = ? AND number = ?",  # every close drops one:
             (session, number - KEEP_AGGREGATES)),  # `<=` rewrote every older row, O(rounds) per close
        ], [aggregate_blob(session, n, sha) for n, sha in pruned])

    def fail_round(self, session: str, number: int, now: float, contributors: tuple[str, ...],
                   missing: tuple[str, ...], held: Sequence[HeldUpdate] = ()) -> None:
        """Close a round that cannot be combined (no aggregate) and open the next (``held`` as ``close_round``)."""
        self._end_round(session, number, [
            *_held_rows(session, number, held),
            ("INSERT INTO aggregates VALUES (?, ?, NULL, '', ?, ?)",
             (session, number, json.dumps(contributors), json.dumps(missing))),
            ("UPDATE rounds SET closed_at = ?, close_reason = 'failed' WHERE session = ? AND number = ?",
             (now, session, number)),
            ("INSERT INTO rounds (session, number, opened_at) VALUES (?, ?, ?)", (session, number + 1, now)),
            ("UPDATE updates SET payload = NULL WHERE session = ? AND number = ?", (session, number)),
            ("UPDATE recoveries SET payload = NULL WHERE session = ? AND number = ?", (session, number)),
        ])

    # masked rounds that lost parties ---------------------------------------------------
    def request_recovery(self, session: str, number: int, dropped: tuple[str, ...], survivors: tuple[str, ...],
                         now: float) -> None:
        """Record that the round needs recovery messages from ``survivors`` for ``dropped``."""
        self._write([("INSERT OR IGNORE INTO recovery_requests VALUES (?, ?, ?, ?, ?)",
                      (session, number, json.dumps(dropped), json.dumps(survivors), now))])

    def recovery_request(self, session: str, number: int) -> tuple[tuple[str, ...], tuple[str, ...], float] | None:
        """(dropped, survivors, requested_at) of the round, or None if it needs no recovery."""
        rows = self._read("SELECT dropped, survivors, requested_at FROM recovery_requests "
                          "WHERE session = ? AND number = ?", (session, number))
        if not rows:
            return None
        dropped, survivors, at = rows[0]
        return tuple(json.loads(dropped)), tuple(json.loads(survivors)), at

    def add_recovery(self, session: str, number: int, party: str, sha256: str, payload: bytes) -> None:
        """Store a survivor's recovery message."""
        self._write([("INSERT INTO recoveries VALUES (?, ?, ?, ?, ?)", (session, number, party, sha256, payload))])

    def recoveries(self, session: str, number: int) -> list[tuple[str, str, bytes | None]]:
        """(party, sha256, payload) of the round's recovery messages in arrival order."""
        return self._read("SELECT party, sha256, payload FROM recoveries WHERE session = ? AND number = ? "
                          "ORDER BY rowid", (session, number))

    def aggregate(self, session: str, number: int) -> AggregateRow | None:
        """A closed round's aggregate, or None if the round is not closed."""
        rows = self._read("SELECT a.payload, a.sha256, a.contributors, a.missing, r.close_reason FROM aggregates a "
                          "JOIN rounds r ON r.session = a.session AND r.number = a.number "
                          "WHERE a.session = ? AND a.number = ?", (session, number))
        if not rows:
            return None
        payload, sha, contributors, missing, reason = rows[0]
        if payload is None and sha:  # kept in a file, or pruned (then the file is gone too)
            payload = self.blobs.get(aggregate_blob(session, number, sha))
        return AggregateRow(payload, sha, tuple(json.loads(contributors)), tuple(json.loads(missing)), reason)

    def straggler_events(self, session: str) -> list[tuple[int, float, tuple[str, ...]]]:
        """(round, closed_at, missing parties) of every round the deadline closed."""
        rows = self._read("SELECT r.number, r.closed_at, a.missing FROM rounds r JOIN aggregates a "
                          "ON a.session = r.session AND a.number = r.number "
                          "WHERE r.session = ? AND r.close_reason IN ('deadline', 'failed') ORDER BY r.number", (session,))
        return [(n, at, tuple(json.loads(m))) for n, at, m in rows]

    # vocabulary alignment ---------------------------------------------------------
    def put_vocabulary(self, session: str, party: str, words: list[str], sha256: str,
                       counts: dict | None = None) -> None:
        """Store a party's vocabulary (and its counts, in the same JSON column)."""
        blob = json.dumps(words if counts is None else {"words": words, "counts": counts})
        self._write([("INSERT INTO vocabularies VALUES (?, ?, ?, ?)", (session, party, blob, sha256))])

    def vocabulary_hashes(self, session: str) -> dict[str, str]:
        """party -> sha256 of the vocabulary it posted."""
        return dict(self._read("SELECT party, sha256 FROM vocabularies WHERE session = ?", (session,)))

    def vocabularies(self, session: str) -> list[tuple[list[str], dict | None]]:
        """Every posted vocabulary of the session, with its counts or None."""
        out = []
        for (blob,) in self._read("SELECT words FROM vocabularies WHERE session = ?", (session,)):
            doc = json.loads(blob)
            out.append((doc, None) if isinstance(doc, list) else (doc["words"], doc["counts"]))
        return out
