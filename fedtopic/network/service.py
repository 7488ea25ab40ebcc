"""The aggregator's modules behind the HTTP layer (paper Fig. 3): initializer, data receiver,
synchronous clock controller, data aggregator, data transmitter.

``Aggregator`` is thread-safe (one lock around decisions, the ``Store`` commits
before a method returns) and knows nothing of HTTP: it raises ``Rejection``
with the status and code the routes pass on. Round decisions come from the pure
``rounds`` functions, vocabulary alignment from ``alignment``, aggregation
from the session's ``Combiner``.

Masked rounds that lose parties (the combiner raises ``RecoveryNeeded``) stay
open in a *recovering* state: no more updates are taken, the round's status
and the aggregate long-poll tell every surviving contributor which parties
dropped, survivors post recovery messages, and the round closes (reason
``deadline``) once all are in. If they are not in within another straggler
deadline the round closes ``failed`` without an aggregate; parties redo its
work under the next round number (fresh masks).

An update whose sender stays on the line for the aggregate (``submit(durable=False)``) is held in memory, not
written: if the aggregator dies first, the sender's connection breaks and it sends the update again. Its row is
written with the round's end; it is written at once whenever its sender is to hear that it is in without the
aggregate (the wait ends, a resent copy meets it as a duplicate) or the round must outlive this process (it
waits for recovery messages). A gFedNTM step sends 30 updates, 4 MB of gradient per party, so one file write,
fsync and commit each cost more than the round's combine.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from fedtopic.crypto.protect import RecoveryNeeded
from fedtopic.crypto.witness import Witness
from fedtopic.errors import ConfigError
from fedtopic.network.alignment import (
    alignment_state,
    normalized_counts,
    record_vocabulary,
)
from fedtopic.network.combiners import (
    Combiner,
    RoundContext,
    combiners_allowed,
    fold_update,
    registered_combiners,
)
from fedtopic.network.errors import InvalidPayload, Rejection
from fedtopic.network.rounds import (
    RoundState,
    admission_rejection,
    admit,
    close_reason,
    next_round,
)
from fedtopic.network.schemas import (
    PartySeen,
    RecoveryReceipt,
    RoundOut,
    SessionCreate,
    SessionOut,
    SessionProgress,
    SessionStatus,
    StatusOut,
    StragglerEvent,
    UpdateReceipt,
    VocabularyOut,
)
from fedtopic.network.session_spec import checked_spec, min_contributors
from fedtopic.network.store import AggregateRow, HeldUpdate, Store
from fedtopic.network.wire import sha256_hex
from fedtopic.network.witness_book import WitnessBook
from fedtopic.protections import protection_names
from fedtopic.text import some_names

log = logging.getLogger("fedtopic.aggregator")


@dataclass(frozen=True)
class _Recovery:
    """The open round lost ``dropped``; every one of ``survivors`` (the contributors that shared masks with a
    dropped party: all of them under a complete mask graph) must send a recovery message."""

    dropped: tuple[str, ...]
    survivors: tuple[str, ...]
    requested_at: float


@dataclass
class _Session:
    out: SessionOut  # current_round is refreshed on read
    combiner: Combiner
    state: RoundState
    recovery: _Recovery | None = None
    running: Any = None  # the open round's running combine (``fold_update``), if the combiner keeps one
    refused: dict[str, str] = field(default_factory=dict)  # member → what differed when its open was refused
    refused_updates: dict[str, str] = field(default_factory=dict)  # member → why its last update was refused
    last: tuple[int, AggregateRow] | None = None  # the latest closed round's aggregate: every member reads it
    held: dict[str, tuple[HeldUpdate, bytes]] = field(default_factory=dict)  # the open round's unwritten updates
    max_update: int = 0  # the combiner's bound on one update for the session's meta (fixed once opened)
    ended: str | None = None  # "finished" (every member said so) or "abandoned" (one left it): it takes nothing more


class Aggregator:
    """Sessions, rounds and aggregates of one consortium; state lives in ``store``."""

    def __init__(self, store: Store, parties: Mapping[str, str], *, protection: str, default_deadline: float,
                 combiners: Mapping[str, Combiner] | None = None, clock: Callable[[], float] = time.time,
                 memory_budget: int = 2 * 2**30) -> None:
        self.store = store
        self.memory_budget = memory_budget
        self.parties = dict(parties)
        self.witness_book = WitnessBook(store, parties)
        self.protection = protection
        self.default_deadline = default_deadline
        self._combiners = registered_combiners() if combiners is None else combiners
        self._allowed = combiners_allowed(protection) if protection in protection_names() else None
        self._clock = clock
        self._lock = threading.RLock()
        self._sessions: dict[str, _Session] = {}
        self._seen: dict[str, float] = {}  # party → its last authenticated request (in memory: liveness only)
        self.on_change: Callable[[], None] = lambda: None  # called when a round closes, fails or wants recovery
        self._ends = 0  # finished/abandoned messages so far (part of ``status``'s cache key)
        self._refusals = 0  # updates refused so far (the same)
        self._status_cache: tuple[tuple, float, StatusOut] | None = None
        for sid, spec, by, at in store.sessions():  # resume: every session's open round from disk
            self._sessions[sid] = self._load(sid, spec, by, at)

    def _load(self, sid: str, spec: dict, by: str, at: float) -> _Session:
        row = self.store.open_round(sid)
        state = RoundState(sid, row.number, tuple(spec["parties"]), spec["straggler_deadline_seconds"],
                           row.received, row.first_update_at)
        out = SessionOut(session_id=sid, created_by=by, created_at=at, current_round=row.number, **spec)
        combiner = self._combiners.get(spec["combiner"])
        if combiner is None:
            raise ConfigError(f"stored session {sid!r} uses combiner {spec['combiner']!r}, which this aggregator "
                              f"does not have (registered: {', '.join(sorted(self._combiners))})")
        request = self.store.recovery_request(sid, row.number)
        ended = _session_state(self.store.session_ends(sid), state.expected)
        return _Session(out, combiner, state, None if request is None else _Recovery(*request),
                        max_update=combiner.max_update_bytes(spec["meta"]),
                        ended=None if ended == "running" else ended)

    def _session(self, sid: str) -> _Session:
        try:
            return self._sessions[sid]
        except KeyError:
            raise Rejection(404, "unknown_session", f"no session {sid!r} on this aggregator") from None

    def _member(self, sess: _Session, party: str) -> None:
        if party not in sess.state.expected:
            raise Rejection(403, "not_in_session", f"party {party!r} is not a member of session {sess.out.session_id!r}")

    # initializer --------------------------------------------------------------------
    def open_session(self, req: SessionCreate, by: str) -> tuple[SessionOut, bool]:
        """Create the session, or return it unchanged if it exists with the same spec; (session, created)."""
        combiner, spec = checked_spec(req, by, combiners=self._combiners, allowed=self._allowed,
                                      protection=self.protection, members=self.parties,
                                      memory_budget=self.memory_budget, default_deadline=self.default_deadline)
        combiner_name = spec["combiner"]
        with self._lock:
            existing = self._sessions.get(req.session_id)
            if existing is not None:
                have = existing.out.model_dump(exclude={"session_id", "created_by", "created_at", "current_round"})
                if have != spec:
                    differs = _differences(have, spec)
                    if by in existing.state.expected:
                        existing.refused[by] = differs
                        self.on_change()
                    log.info("session %s: %s refused (%s)", req.session_id, by, differs)
                    raise Rejection(409, "session_conflict",
                                    f"session {req.session_id!r} exists with a different spec ({differs})")
                existing.refused.pop(by, None)
                return self._session_out(existing), False
            now = self._clock()
            self.store.create_session(req.session_id, spec, by, now)
            sess = self._load(req.session_id, spec, by, now)
            self._sessions[req.session_id] = sess
            warm = getattr(combiner, "warm_up", None)  # compiled code loads while the parties set up, not in round 0
            if warm is not None:
                warm(req.meta)  # starts the loading in the background, once per process, and returns
            log.info("session %s opened by %s: %d parties, combiner %s", req.session_id, by, len(req.parties),
                     combiner_name)
            return self._session_out(sess), True

    # Reads without the lock (update_bound, session, aggregate, is_closed): a session's spec never changes once
    # opened and its state is replaced, never mutated, so a reader sees one consistent state. Holding the lock
    # for them made 1,000 parties queue behind every commit (each commit gives up the GIL, and taking it back
    # waits behind every runnable thread).
    def update_bound(self, sid: str, party: str) -> int:
        """The largest update (or recovery) body ``party`` may send to session ``sid``: 404/403 if none."""
        sess = self._session(sid)
        self._member(sess, party)
        return sess.max_update  # every update asks: parsing the meta each time cost 2 % of the aggregator

    def session(self, sid: str, party: str) -> SessionOut:
        """The session's spec, for one of its members."""
        sess = self._session(sid)
        self._member(sess, party)
        return self._session_out(sess)

    def _session_out(self, sess: _Session) -> SessionOut:
        return sess.out.model_copy(update={"current_round": sess.state.number})

    def check_open(self, sid: str, party: str) -> None:
        """Refuse (404, 403, 409 ``session_ended``) a member's request to a session that is not open to it, before
        its body is parsed."""
        with self._lock:
            sess = self._session(sid)
            self._member(sess, party)
            self._refuse_ended(sess)

    def post_vocabulary(self, sid: str, party: str, words: list[str], documents: int | None = None,
                        document_frequency: list[int] | None = None,
                        term_frequency: list[int] | None = None) -> VocabularyOut:
        """Record a party's vocabulary, maybe with counts (idempotent); the union (and pooled counts) once every
        member has posted."""
        local, counts = normalized_counts(words, documents, document_frequency, term_frequency)
        with self._lock:
            sess = self._session(sid)
            self._member(sess, party)
            self._refuse_ended(sess)
            record_vocabulary(self.store, sid, party, local, counts)
            return alignment_state(self.store, sid, sess.state.expected)

    def vocabulary(self, sid: str, party: str) -> VocabularyOut:
        """Alignment state; ``words`` is the union in code-point order once complete."""
        with self._lock:
            sess = self._session(sid)
            self._member(sess, party)
            return alignment_state(self.store, sid, sess.state.expected)

    # data receiver + clock controller -------------------------------------------------
    def _refuse_ended(self, sess: _Session) -> None:
        """409 ``session_ended`` for anything sent to a session that is over, before its body is looked at."""
        if sess.ended is not None:
            raise Rejection(409, "session_ended", f"session {sess.out.session_id!r} is {sess.ended}: it takes "
                            "nothing more (a new run opens new sessions: `node run --fresh`)")

    def _admission(self, sess: _Session, round: int, party: str) -> None:
        rejection = admission_rejection(sess.state, round, party)
        if rejection is None and sess.recovery is not None:
            raise Rejection(409, "round_closed", f"round {round} takes no more updates: it is being recovered "
                            f"without {', '.join(sess.recovery.dropped)}")
        if rejection is None:
            self._refuse_ended(sess)  # a new update to a session that is over
            return
        if rejection.code in ("round_closed", "duplicate_update"):
            if rejection.code == "duplicate_update":
                self._write_held(sess, party)  # the answer tells the party its update is in
            sha = self.store.update_sha256(sess.out.session_id, round, party)
            if sha is not None:  # its own update sent again (a restarted party): it reads the round's aggregate
                raise Rejection(409, "duplicate_update",
                                f"party {party!r} already submitted its update for round {round}", sha256=sha)
        self._refuse_ended(sess)
        raise rejection

    def submit(self, sid: str, round: int, party: str, payload: bytes, sha: str | None = None, *,
               durable: bool = True) -> UpdateReceipt:
        """Accept ``party``'s update for ``round`` and close the round if complete.

        ``sha``: the payload's SHA-256 if the caller already checked it (the route: AuthGate hashed the body);
        ``durable``: committed before returning, else held in memory (the module docstring) until the round ends
        or ``write_held``."""
        with self._lock:
            self._close_due(self._clock())
            sess = self._session(sid)
            self._admission(sess, round, party)
        try:  # validation may be slow (decoding); it runs outside the lock
            checked = sess.combiner.validate(payload, sess.out.meta, round=round, session=sid,
                                             sender=sess.state.expected.index(party))
        except InvalidPayload as exc:
            with self._lock:  # nothing stored; /status names the member until its next update is taken
                sess.refused_updates[party] = f"its update for round {round} was refused: {str(exc)[:200]}"
                self._refusals += 1
            raise Rejection(422, "invalid_payload", f"update of {party!r} for round {round}: {exc}") from None
        sha = sha256_hex(payload) if sha is None else sha
        with self._lock:
            now = self._clock()
            self._close_due(now)
            self._admission(sess, round, party)  # again: the round may have moved while we validated
            if durable:
                self.store.add_update(sid, round, party, sha, payload, now)
            else:
                sess.held[party] = (HeldUpdate(party, sha, len(payload), now), payload)
            sess.running = fold_update(sess.running, sess.combiner, sess.out.meta, session=sid, round=round,
                                       index=sess.state.expected.index(party), payload=payload, checked=checked)
            sess.state = admit(sess.state, party, now)
            sess.refused_updates.pop(party, None)
            state = sess.state
            closed = close_reason(state, now) == "complete"
            if closed:
                self._close(sess, "complete", now)
        log.debug("session %s round %d: update from %s (%d bytes), %d/%d", sid, round, party, len(payload),
                 len(state.received), len(state.expected))
        return UpdateReceipt(session_id=sid, round=round, party=party, sha256=sha, bytes=len(payload),
                             received=list(state.received), missing=list(state.missing), round_closed=closed)

    def write_held(self, sid: str, round: int, party: str) -> None:
        """Commit ``party``'s held update of ``round`` unless the round has ended (its end recorded it): before
        the party hears that its update is in without getting the aggregate."""
        with self._lock:
            sess = self._sessions.get(sid)
            if sess is not None and sess.state.number == round:
                self._write_held(sess, party)

    def _write_held(self, sess: _Session, party: str) -> None:
        held = sess.held.pop(party, None)
        if held is not None:
            row, payload = held
            self.store.add_update(sess.state.session, sess.state.number, party, row.sha256, payload, row.received_at)

    def tick(self) -> None:
        """Close every round that is due: deadline passed, or complete but not yet closed (after a crash)."""
        with self._lock:
            self._close_due(self._clock())

    def _close_due(self, now: float) -> None:
        # "complete" here too: a crash between the last update's commit and the aggregate's leaves a full open round
        for sess in self._sessions.values():
            if sess.recovery is not None:
                if _recovery_late(sess, now):
                    self._fail(sess, now, "the survivors' recovery messages did not arrive in time")
                continue
            reason = close_reason(sess.state, now)
            if reason is not None:
                self._close(sess, reason, now)

    # data aggregator ---------------------------------------------------------------
    def _close(self, sess: _Session, reason: str, now: float) -> None:
        try:
            self._close_round(sess, reason, now)
        finally:
            self.on_change()  # wake the long-polls: closed, failed or waiting for recovery

    def _close_round(self, sess: _Session, reason: str, now: float) -> None:
        state = sess.state
        sid = state.session
        order = {p: i for i, p in enumerate(state.expected)}  # session order, not arrival: float sums reproducible
        rows = sorted([*self.store.payloads(sid, state.number), *((p, b) for p, (_, b) in sess.held.items())],
                      key=lambda row: order[row[0]])
        contributors = tuple(p for p, _ in rows)
        least = min_contributors(sess.combiner, sess.out.meta)
        if len(contributors) < least:  # a deadline (or the recovery's) left too few: never release such a "sum"
            sess.running = None
            self._fail(sess, now, f"{len(contributors)} contributor(s), {sess.combiner.name} releases sums of "
                       f"{least} or more")
            return
        ctx = RoundContext(sid, state.number, sess.out.meta, contributors, state.expected)
        extra = {} if sess.recovery is None else {
            "recoveries": [bytes(b) for _, _, b in self.store.recoveries(sid, state.number)]}
        running, sess.running = sess.running, None
        try:  # the running combine folded every update in as it arrived; else combine the stored ones
            aggregate = None if running is None or sess.recovery is not None else running.result(ctx)
            if aggregate is None:
                aggregate = sess.combiner.combine([bytes(b) for _, b in rows], ctx, **extra)
        except RecoveryNeeded as need:
            if sess.recovery is None:
                for party in list(sess.held):  # the round now waits on other parties: it must survive a restart
                    self._write_held(sess, party)
                dropped = tuple(state.expected[i] for i in need.dropped)
                survivors = tuple(state.expected[i] for i in need.survivors)
                self.store.request_recovery(sid, state.number, dropped, survivors, now)
                sess.recovery = _Recovery(dropped, survivors, now)
                log.warning("session %s round %d lost %s: waiting for recovery messages from %s", sid,
                            state.number, some_names(dropped), some_names(survivors))
            return
        except InvalidPayload as exc:
            self._fail(sess, now, str(exc))
            return
        sess.recovery = None
        sha = sha256_hex(aggregate)
        self.store.close_round(sid, state.number, now, reason, aggregate, sha, contributors, state.missing,
                               [row for row, _ in sess.held.values()])
        sess.held = {}
        sess.last = (state.number, AggregateRow(aggregate, sha, contributors, state.missing, reason))
        sess.state = next_round(state)
        if reason == "deadline":
            log.warning("session %s round %d closed by the straggler deadline without %s", sid, state.number,
                        ", ".join(state.missing))
        else:
            log.info("session %s round %d complete (%d bytes aggregate)", sid, state.number, len(aggregate))

    def _fail(self, sess: _Session, now: float, why: str) -> None:
        state = sess.state
        contributors = tuple(p for p in state.expected if p in set(state.received))
        self.store.fail_round(state.session, state.number, now, contributors, state.missing,
                              [row for row, _ in sess.held.values()])
        sess.held = {}
        log.error("session %s round %d failed (%s); the next round redoes it", state.session, state.number, why)
        sess.state, sess.recovery = next_round(state), None

    def post_recovery(self, sid: str, round: int, party: str, blob: bytes) -> RecoveryReceipt:
        """Accept a survivor's recovery message for the recovering ``round``; combine once all are in."""
        sha = sha256_hex(blob)

        def check() -> tuple[_Session, _Recovery, bool]:
            sess = self._session(sid)
            self._member(sess, party)
            rec = sess.recovery
            if rec is None or round != sess.state.number:
                raise Rejection(409, "no_recovery", f"round {round} of session {sid!r} is not waiting for recovery")
            if party not in rec.survivors:
                raise Rejection(403, "not_a_survivor", f"party {party!r} did not contribute to round {round}")
            have = {p: h for p, h, _ in self.store.recoveries(sid, round)}
            if party in have and have[party] != sha:
                raise Rejection(409, "duplicate_recovery", f"party {party!r} already sent another recovery message")
            return sess, rec, party in have

        with self._lock:
            sess, rec, seen = check()
        if not seen:
            order = {p: i for i, p in enumerate(sess.state.expected)}
            try:
                sess.combiner.validate_recovery(blob, sess.out.meta, round=round, session=sid,  # type: ignore[attr-defined]
                                                sender=order[party], dropped=[order[d] for d in rec.dropped])
            except InvalidPayload as exc:
                raise Rejection(422, "invalid_recovery", f"recovery of {party!r} for round {round}: {exc}") from None
            with self._lock:
                sess, rec, seen = check()
                if not seen:
                    self.store.add_recovery(sid, round, party, sha, blob)
                got = {p for p, _, _ in self.store.recoveries(sid, round)}
                awaiting = [p for p in rec.survivors if p not in got]
                if not awaiting:
                    self._close(sess, "deadline", self._clock())
        with self._lock:
            got = {p for p, _, _ in self.store.recoveries(sid, round)}
        return RecoveryReceipt(session_id=sid, round=round, party=party, sha256=sha,
                               awaiting=[p for p in rec.survivors if p not in got])

    def recovery_wanted(self, sid: str, round: int, party: str) -> tuple[list[str], list[str]] | None:
        """(dropped, survivors) if ``round`` is recovering and still needs ``party``'s message, else None."""
        with self._lock:
            sess = self._sessions.get(sid)
            rec = None if sess is None or sess.state.number != round else sess.recovery
            if rec is None or party not in rec.survivors:
                return None
            if party in {p for p, _, _ in self.store.recoveries(sid, round)}:
                return None
            return list(rec.dropped), list(rec.survivors)

    # data transmitter --------------------------------------------------------------
    def aggregate(self, sid: str, round: int, party: str) -> AggregateRow | None:
        """The round's aggregate; None while the round is open; Rejection if it is not opened or pruned."""
        sess = self._session(sid)
        self._member(sess, party)
        if _due(sess, self._clock()):
            with self._lock:
                self._close_due(self._clock())
        number, last = sess.state.number, sess.last
        if round > number:
            raise Rejection(409, "round_not_open", f"round {round} is not open yet; the open round is {number}")
        if round == number:
            return None
        row = last[1] if last is not None and last[0] == round else self.store.aggregate(sid, round)
        if row is not None and row.close_reason == "failed":
            least = min_contributors(sess.combiner, sess.out.meta)
            if len(row.contributors) < least:
                raise Rejection(409, "round_failed", f"round {round} closed with {len(row.contributors)} update(s) "
                                f"({', '.join(row.contributors) or 'none'}) while {', '.join(row.missing)} did not "
                                f"send theirs: this session never releases a sum of fewer than {least} "
                                "(a masked sum of one is that update; distributed DP plans on its minimum), so the "
                                "run cannot go on without them",
                                too_few_contributors=True)
            raise Rejection(409, "round_failed", f"round {round} failed without an aggregate; redo it in round "
                            f"{round + 1}")
        if row is None or row.payload is None:
            raise Rejection(410, "aggregate_gone", f"the aggregate of round {round} is no longer kept")
        return row

    def post_witness(self, sid: str, witness: Witness) -> None:
        """A member's signed witness of a span of rounds' aggregates (``network.witness_book``)."""
        sess = self._session(sid)
        self._member(sess, witness.party)
        self.witness_book.post(sid, sess.state.number, witness)

    def witnesses(self, sid: str, first: int, last: int, party: str) -> list[Witness]:
        """Every member's witness overlapping rounds ``first`` … ``last``."""
        sess = self._session(sid)
        self._member(sess, party)
        return self.witness_book.overlapping(sid, first, last)

    def recent_aggregate(self, sid: str, round: int, party: str) -> AggregateRow | None:
        """Lock-free, for the long-polls on the event loop: the aggregate of ``round`` if it is the round that
        closed last, with an aggregate, and ``party`` is a member; else None (then ``aggregate`` in a worker
        thread, which may read the store and says why there is none)."""
        sess = self._sessions.get(sid)
        last = None if sess is None else sess.last  # one read: the service replaces the tuple, never edits it
        if last is None or last[0] != round or party not in sess.state.expected:  # type: ignore[union-attr]
            return None
        row = last[1]
        return row if row.close_reason != "failed" and row.payload is not None else None

    def is_closed(self, sid: str, round: int) -> bool:
        """Lock-free check for long-polls: has ``round`` closed? (False for unknown sessions.)"""
        sess = self._sessions.get(sid)
        return sess is not None and sess.state.number > round

    def is_recovering(self, sid: str, round: int) -> bool:
        """Lock-free check for long-polls: is ``round`` the open round and waiting for recovery messages?"""
        sess = self._sessions.get(sid)
        return sess is not None and sess.state.number == round and sess.recovery is not None

    def round_info(self, sid: str, round: int) -> RoundOut:
        """One round's clock state."""
        with self._lock:
            self._close_due(self._clock())
            sess = self._session(sid)
            row = self.store.round(sid, round)
            if row is None:
                raise Rejection(404, "unknown_round", f"session {sid!r} has no round {round} yet "
                                f"(the open round is {sess.state.number})")
            if round == sess.state.number:  # the open round: memory has its held updates too
                row = replace(row, received=sess.state.received, first_update_at=sess.state.first_update_at)
            got = set(row.received)
            missing = [p for p in sess.state.expected if p not in got]
            deadline = None if row.first_update_at is None else row.first_update_at + sess.state.deadline_seconds
            request = self.store.recovery_request(sid, round)
            dropped, awaiting, state = [], [], "open" if row.closed_at is None else "closed"
            if request is not None:
                dropped = list(request[0])
                got = {p for p, _, _ in self.store.recoveries(sid, round)}
                awaiting = [p for p in request[1] if p not in got] if row.closed_at is None else []
                state = "recovering" if row.closed_at is None else state
            refused = {p: why for p, why in sess.refused.items() if p in missing}
            bad_updates = {p: why for p, why in sess.refused_updates.items() if p in missing}
            abandoned = [p for p, (kind, _) in self.store.session_ends(sid).items() if kind == "abandoned"]
            return RoundOut(session_id=sid, round=round, state=state, dropped=dropped, awaiting_recovery=awaiting,
                            refused=refused, refused_updates=bad_updates, abandoned_by=abandoned[0] if abandoned else None,
                            received=list(row.received), missing=missing, opened_at=row.opened_at,
                            first_update_at=row.first_update_at, deadline_at=deadline, closed_at=row.closed_at,
                            close_reason=row.close_reason)

    def saw(self, party: str) -> None:
        """``party`` made an authenticated request now (``/status`` says when each member was last seen)."""
        self._seen[party] = self._clock()

    def end_session(self, sid: str, party: str, kind: str) -> SessionProgress:
        """``party`` finished its training in ``sid`` ("finished") or abandoned it for a fresh run ("abandoned"):
        recorded once; an abandon wakes the waiting parties (its round never completes). The answer is the
        party's own view (a whole ``SessionStatus`` per finishing party made the end of a run O(P²))."""
        with self._lock:
            sess = self._session(sid)
            self._member(sess, party)
            self.store.end_session(sid, party, kind, self._clock())
            self._ends += 1
            ended = _session_state(self.store.session_ends(sid), sess.state.expected)
            sess.ended = None if ended == "running" else ended
            log.info("session %s: %s %s", sid, party, kind)
            if kind == "abandoned":
                self.on_change()
            return self.progress(sid, party)

    def progress(self, sid: str, party: str) -> SessionProgress:
        """The session's state and ``party``'s own progress in it (a member's question, answered in O(1) rows
        of the session's members)."""
        with self._lock:
            sess = self._session(sid)
            self._member(sess, party)
            ends = self.store.session_ends(sid)
            held = sess.held.get(party)
            last = self.store.last_update(sid, party) if held is None else (sess.state.number, held[0].received_at)
            return SessionProgress(session_id=sid, state=_session_state(ends, sess.state.expected),
                                   current_round=sess.state.number,
                                   you=PartySeen(party=party, last_round=None if last is None else last[0],
                                                 last_update_at=None if last is None else last[1],
                                                 last_seen_at=self._seen.get(party),
                                                 ended=ends[party][0] if party in ends else None))  # type: ignore[arg-type]

    def _status_of(self, sid: str, sess: _Session) -> SessionStatus:
        ends = self.store.session_ends(sid)
        last = self.store.last_updates(sid, sess.state.expected) | {
            p: (sess.state.number, h.received_at) for p, (h, _) in sess.held.items()}
        expected = list(sess.state.expected)
        state = _session_state(ends, expected)
        shown = sess.state.number
        if state != "running" and shown > 0 and not sess.state.received:  # ended: its last round, not the empty
            shown -= 1                                                      # one the clock opened after it
        current = self.round_info(sid, shown)
        seen = [PartySeen(party=p, last_round=last[p][0] if p in last else None,
                          last_update_at=last[p][1] if p in last else None,
                          last_seen_at=self._seen.get(p),
                          ended=ends[p][0] if p in ends else None) for p in expected]  # type: ignore[arg-type]
        return SessionStatus(session_id=sid, combiner=sess.out.combiner, parties=expected, state=state,
                             missing=current.missing if state == "running" else [], seen=seen,
                             current_round=current,
                             straggler_events=[StragglerEvent(round=n, closed_at=at, missing=list(m))
                                               for n, at, m in self.store.straggler_events(sid)])

    def status(self, max_age: float = 0.0) -> StatusOut:
        """Every session's state, who it waits for, each member's last update, and straggler events.

        ``max_age``: the last answer again if nothing has changed since and it is younger than that (only the
        members' last-seen times may then be older): ``/status`` needs no signature and costs O(sessions ×
        members), so a flood of it costs one computation per change or per ``max_age``, not per request."""
        key = self._status_key()
        cached = self._status_cache
        if cached is not None and cached[0] == key and time.monotonic() - cached[1] < max_age:
            return cached[2]
        with self._lock:
            self._close_due(self._clock())
            sessions = [self._status_of(sid, sess) for sid, sess in self._sessions.items()]
        out = StatusOut(protection=self.protection, parties=list(self.parties), sessions=sessions)
        self._status_cache = (key, time.monotonic(), out)
        return out

    def _status_key(self) -> tuple:
        """What ``status`` shows changes only with this (sessions, rounds, updates, recoveries, refusals, ends),
        or with time (deadlines: ``_due``)."""
        now = self._clock()
        return (self._ends, self._refusals, tuple((sid, s.state.number, len(s.state.received), s.recovery is not None,
                                   len(s.refused), _due(s, now)) for sid, s in list(self._sessions.items())))


def _recovery_late(sess: _Session, now: float) -> bool:
    """Whether the survivors' recovery messages of ``sess``'s open round are overdue (it has a recovery)."""
    assert sess.recovery is not None
    return now >= sess.recovery.requested_at + sess.state.deadline_seconds


def _due(sess: _Session, now: float) -> bool:
    """Whether ``_close_due`` would act on ``sess`` at ``now`` (complete, deadline passed, recovery late): then a
    reader closes it under the lock; otherwise the ticker would find nothing either."""
    return _recovery_late(sess, now) if sess.recovery is not None else close_reason(sess.state, now) is not None


def _session_state(ends: Mapping[str, tuple[str, float]], expected: Sequence[str]) -> str:
    """abandoned if a member abandoned the session, finished once every member finished, else running."""
    if any(kind == "abandoned" for kind, _ in ends.values()):
        return "abandoned"
    if all(ends.get(p, ("", 0.0))[0] == "finished" for p in expected):
        return "finished"
    return "running"


def _differences(have: Mapping[str, Any], asked: Mapping[str, Any]) -> str:
    """What an open asked for that differs from the stored spec, by name (params one by one)."""
    names = [f"params.{k}" for k in sorted(set(have["params"]) | set(asked["params"]))
             if have["params"].get(k) != asked["params"].get(k)]
    names += [k for k in sorted(set(have) | set(asked)) if k != "params" and have.get(k) != asked.get(k)]
    return ", ".join(names) or "spec"
