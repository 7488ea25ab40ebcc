"""A party's client for the aggregator: signed requests over ``network.http``, bounded retries.

Retries: connection failures, timeouts and 5xx/503 answers are retried with
exponential back-off (``backoff`` * 2^i seconds, capped at 10 s) for as long
as ``patience`` seconds (default 10 minutes: an aggregator restart, whose cold
start alone takes seconds, must not end a training). The first failure is
logged once as a warning saying what the client waits for and how long it will
keep trying; the recovery is logged once; the retries between are at DEBUG.
4xx answers are not retried (except 408: the body arrived too slowly, a
client starved of CPU): they raise ``AggregatorRejected`` with the server's
code and reason. A submit whose answer was lost and whose retry meets
``duplicate_update`` with the same payload hash counts as accepted.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from fedtopic.crypto.witness import Witness, sign_witness, witness_signed_by
from fedtopic.errors import (
    AggregatorMisbehaved,
    NetworkError,
    SessionMismatch,
    TrainingError,
)
from fedtopic.links import AggregatorAt, Answer, TransportFailure, get_link
from fedtopic.network.errors import (
    AggregateTimeout,
    AggregatorRejected,
    AggregatorUnavailable,
    RecoveryRequested,
)
from fedtopic.network.schemas import (
    RecoveryReceipt,
    RoundOut,
    SessionOut,
    SessionProgress,
    SessionStatus,
    StatusOut,
    UpdateReceipt,
    VocabularyOut,
    WitnessesOut,
)
from fedtopic.network.stopping import STOPPING
from fedtopic.network.wire import (
    H_CLOSE_REASON,
    H_CONTRIBUTORS,
    H_MISSING,
    PAYLOAD_MEDIA_TYPE,
    SigningKeys,
    request_headers,
    sha256_hex,
    update_headers,
)

log = logging.getLogger("fedtopic.network.client")
_MAX_BACKOFF = 10.0
DEFAULT_PATIENCE = 600.0


@dataclass(frozen=True)
class AggregateResult:
    """A closed round's aggregate and who is in it (``missing`` non-empty when the straggler deadline closed it)."""

    round: int
    payload: bytes
    contributors: tuple[str, ...]
    missing: tuple[str, ...]
    close_reason: str


WAIT_REPORT_SECONDS = 10.0
"""How often a party waiting for a round's aggregate is told who is missing (``fetch_aggregate(on_wait=)``)."""


def _aggregate_result(round: int, resp: Answer) -> AggregateResult:
    return AggregateResult(round, resp.body, _split(resp.headers.get(H_CONTRIBUTORS)),
                           _split(resp.headers.get(H_MISSING)), resp.headers.get(H_CLOSE_REASON, ""))


def _split(header: str | None) -> tuple[str, ...]:
    return tuple(p for p in (header or "").split(",") if p)


class AggregatorClient:
    """One party's connection to one session on the aggregator at ``url``."""

    def __init__(self, url: str, keys: SigningKeys, session: str, *, timeout: float = 30.0,
                 patience: float = DEFAULT_PATIENCE, backoff: float = 0.5, link: str = "http",
                 roster: Mapping[str, str] | None = None) -> None:
        """``link``: the registered synchronous link the requests go through (``fedtopic.links``: ``http`` to ``url``,
        ``in-process``, a plugin's). ``roster``: every member's address (party → address, from this party's
        consortium.toml): with it, every aggregate ``exchange`` returns is witnessed and checked against the other
        members' witnesses (``crypto.witness``)."""
        self.url = url.rstrip("/")
        self.keys = keys
        self.session = session
        self.timeout = timeout
        self.patience = patience
        self.backoff = backoff
        self._wire = get_link(link, "sync").connect(AggregatorAt(self.url, timeout))
        self.roster = None if roster is None else dict(roster)
        # witness the aggregates received in spans ending at each round r with (r + 1) % witness_every == 0, before
        # a gap and at the end: a request a round for a sparse session, one per k steps for a dense one
        self.witness_every = 1
        self._span: list[tuple[int, str, tuple[str, ...]]] = []  # received, not witnessed: (round, sha256, who)
        self._posted: tuple[Witness, tuple[str, ...]] | None = None  # last witness, its last round's contributors

    def close(self) -> None:
        """Close the connection pool."""
        self._wire.close()

    def __enter__(self) -> AggregatorClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # transport -------------------------------------------------------------------
    def _send(self, method: str, path: str, *, body: bytes = b"", update_round: int | None = None,
              params: Mapping[str, Any] | None = None, timeout: float | None = None,
              content_type: str = "application/json") -> Answer:
        """One request with fresh signed headers per attempt; retries transport failures and 5xx for up to
        ``patience`` seconds."""
        last, attempt, started = "", 0, time.monotonic()
        query = urlencode(params) if params else ""  # exactly what the connection sends, and so what is signed
        while True:
            if update_round is None:
                headers = request_headers(self.keys, method, path + ("?" + query if query else ""), body)
                if body:
                    headers["Content-Type"] = content_type
            else:
                headers = update_headers(self.keys, self.session, update_round, body, query)
            try:
                resp = self._wire.exchange(method, path, body=body, headers=headers, params=params, timeout=timeout)
            except TransportFailure as exc:
                if exc.certificate:  # not transient: a wrong server, or a wrong pin
                    raise NetworkError(f"the aggregator at {self.url} presented a certificate the consortium does "
                                       "not pin (aggregator.tls_cert): refusing to send anything to it") from None
                last = str(exc)
            else:
                if resp.status < 500 and resp.status != 408:  # 408: our body came too slowly; again
                    if attempt:
                        log.warning("aggregator %s answers again after %.0f s", self.url, time.monotonic() - started)
                    return resp
                last = f"HTTP {resp.status}"
            waited = time.monotonic() - started
            if STOPPING.is_set():
                raise AggregatorUnavailable(f"aggregator {self.url} {method} {path}: the run is stopping")
            if waited >= self.patience:
                raise AggregatorUnavailable(f"aggregator {self.url} {method} {path} failed for {waited:.0f} s "
                                            f"({attempt + 1} attempts): {last}")
            pause = min(_MAX_BACKOFF, self.backoff * 2**attempt, max(self.patience - waited, 0.0))
            if attempt == 0:
                log.warning("waiting for the aggregator at %s (%s %s: %s); retrying for up to %.0f s",
                            self.url, method, path, last, self.patience)
            else:
                log.debug("aggregator %s %s %s failed (%s); retry %d in %.1f s", self.url, method, path, last,
                          attempt + 1, pause)
            attempt += 1
            STOPPING.wait(pause)

    @staticmethod
    def _rejected(resp: Answer) -> AggregatorRejected:
        try:
            body = resp.json()
        except ValueError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        detail = body.get("detail", resp.text[:200])
        return AggregatorRejected(resp.status, str(body.get("code", f"http_{resp.status}")),
                                  detail if isinstance(detail, str) else json.dumps(detail), body)

    def _json(self, method: str, path: str, payload: Any = None, ok: Sequence[int] = (200,)) -> Any:
        body = b"" if payload is None else json.dumps(payload).encode()
        resp = self._send(method, path, body=body)
        if resp.status not in ok:
            raise self._rejected(resp)
        return resp.json()

    # initializer -------------------------------------------------------------------
    def open_session(self, parties: Sequence[str], *, combiner: str | None = None,
                     meta: Mapping[str, Any] | None = None, params: Mapping[str, Any] | None = None,
                     straggler_deadline_seconds: float | None = None) -> SessionOut:
        """Open this client's session, or join it if the same spec exists (409 ``session_conflict`` otherwise)."""
        spec = {"session_id": self.session, "parties": list(parties), "combiner": combiner, "meta": dict(meta or {}),
                "params": dict(params or {}), "straggler_deadline_seconds": straggler_deadline_seconds}
        return SessionOut.model_validate(self._json("POST", "/v1/sessions", spec, ok=(200, 201)))

    def session_info(self) -> SessionOut:
        """The session's spec and open round."""
        return SessionOut.model_validate(self._json("GET", f"/v1/sessions/{self.session}"))

    def post_vocabulary(self, words: Sequence[str], counts: Mapping[str, Any] | None = None) -> VocabularyOut:
        """Post this party's vocabulary for alignment, with ``counts`` ({documents, document_frequency,
        term_frequency}) for a frequency-weighted consensus."""
        return VocabularyOut.model_validate(self._json("POST", f"/v1/sessions/{self.session}/vocabulary",
                                                       {"words": list(words), **dict(counts or {})}))

    def wait_vocabulary(self, timeout: float, poll: float = 0.2) -> tuple[str, ...]:
        """The aligned (union) vocabulary once every party has posted; AggregateTimeout after ``timeout`` s."""
        return tuple(self.aligned_vocabulary(timeout, poll).words or ())

    def aligned_vocabulary(self, timeout: float, poll: float = 0.2) -> VocabularyOut:
        """The complete alignment state (union, and pooled counts if everyone posted some)."""
        until = time.monotonic() + timeout
        while True:
            out = VocabularyOut.model_validate(self._json("GET", f"/v1/sessions/{self.session}/vocabulary"))
            if out.complete and out.words is not None:
                return out
            if time.monotonic() >= until:
                raise AggregateTimeout(f"vocabulary of session {self.session!r} incomplete after {timeout:.0f} s; "
                                       f"waiting for {', '.join(out.missing)}")
            time.sleep(poll)

    # rounds -------------------------------------------------------------------------
    def submit(self, round: int, payload: bytes) -> UpdateReceipt:
        """Send this party's update for ``round``; the receipt comes after the aggregator has committed it."""
        out = self.submit_and_fetch(round, payload, 0.0)
        assert isinstance(out, UpdateReceipt)
        return out

    def submit_and_fetch(self, round: int, payload: bytes, wait: float) -> UpdateReceipt | AggregateResult:
        """Send this party's update and, with ``wait`` > 0, stay on the line up to ``wait`` s for the round's
        aggregate (one request where a synchronous round otherwise takes two): the aggregate if the round
        closed in time, else the receipt (then ``fetch_aggregate`` as usual; it also handles recovery)."""
        path = f"/v1/sessions/{self.session}/rounds/{round}/updates"
        wait = max(0.0, min(wait, 25.0))
        resp = self._send("POST", path, body=payload, update_round=round,
                          params={"wait": f"{wait:.3f}"} if wait else None, timeout=wait + self.timeout)
        if resp.status == 200 and wait:
            return _aggregate_result(round, resp)
        if resp.status == 202:
            return UpdateReceipt.model_validate(resp.json())
        err = self._rejected(resp)
        if err.code == "duplicate_update" and err.body.get("sha256") == sha256_hex(payload):
            # our own update, already committed (e.g. its 202 was lost and the transport retried): idempotent
            info = self.round(round)
            return UpdateReceipt(session_id=self.session, round=round, party=self.keys.party_id,
                                 sha256=sha256_hex(payload), bytes=len(payload), received=info.received,
                                 missing=info.missing, round_closed=info.state == "closed")
        raise err

    def post_recovery(self, round: int, blob: bytes) -> RecoveryReceipt:
        """Send this party's mask recovery message for ``round`` (idempotent for the same bytes)."""
        resp = self._send("POST", f"/v1/sessions/{self.session}/rounds/{round}/recoveries", body=blob,
                          content_type=PAYLOAD_MEDIA_TYPE)
        if resp.status != 200:
            raise self._rejected(resp)
        return RecoveryReceipt.model_validate(resp.json())

    def round(self, round: int) -> RoundOut:
        """One round's clock state."""
        return RoundOut.model_validate(self._json("GET", f"/v1/sessions/{self.session}/rounds/{round}"))

    def fetch_aggregate(self, round: int, timeout: float,
                        on_wait: Callable[[int, list[str], float], None] | None = None) -> AggregateResult:
        """Long-poll until ``round`` closes and return its aggregate; AggregateTimeout after ``timeout`` s.

        RecoveryRequested if the round lost parties and waits for this party's mask recovery message;
        SessionMismatch if a member the round waits for was refused for other session params.
        ``on_wait(round, missing, seconds)``: called every ``WAIT_REPORT_SECONDS`` while the round is open, with
        the parties whose updates it still lacks (so a waiting node can say for whom it waits)."""
        path = f"/v1/sessions/{self.session}/rounds/{round}/aggregate"
        started = time.monotonic()
        until = started + timeout
        chunk = WAIT_REPORT_SECONDS if on_wait is not None else 25.0
        while True:
            wait = max(0.0, min(until - time.monotonic(), chunk))
            resp = self._send("GET", path, params={"wait": f"{wait:.3f}"}, timeout=wait + self.timeout)
            if resp.status == 200:
                return _aggregate_result(round, resp)
            if resp.status != 425:
                raise self._rejected(resp)
            problem = resp.json() if resp.headers.get("content-type", "").startswith("application/json") else {}
            if problem.get("code") == "recovery_needed":
                raise RecoveryRequested(round, list(problem.get("dropped", [])), list(problem.get("survivors", [])))
            info = self.round(round)
            if info.abandoned_by is not None:
                raise TrainingError(f"{self.keys.party_id}: {info.abandoned_by} left session {self.session!r} for a "
                                    "fresh run (`node run --fresh`); restart this node with --fresh to join the new "
                                    "run")
            if info.refused:  # a member was refused for other params: the round can never complete
                who, why = next(iter(info.refused.items()))
                raise SessionMismatch(f"{self.keys.party_id} and {who} disagree on what their updates mean: the "
                                      f"aggregator refused {who}'s session ({why} differ); every party must run the "
                                      "same algorithm, K, options and vocabulary file")
            if time.monotonic() >= until:
                raise AggregateTimeout(f"round {round} of session {self.session!r} still open after {timeout:.1f} s")
            if on_wait is not None:
                on_wait(round, list(info.missing), time.monotonic() - started)

    def exchange(self, round: int, payload: bytes, timeout: float, *,
                 recovery: Callable[[list[str]], bytes] | None = None,
                 on_wait: Callable[[int, list[str], float], None] | None = None,
                 read_if_closed: bool = False) -> AggregateResult:
        """Submit this party's update for ``round`` and return the round's aggregate: one request when the round
        closes within the first wait (``WAIT_REPORT_SECONDS`` with ``on_wait``, else up to 25 s), long-polls after.

        ``recovery(dropped)``: the mask recovery message to post whenever the round lost parties (without it,
        RecoveryRequested is raised); ``read_if_closed``: a round that closed without this party (a straggler
        deadline) still gives this party its aggregate; ``on_wait`` as in ``fetch_aggregate``. A round that closed
        with fewer updates than its combiner releases (a masked sum of one) is a TrainingError: a stop, not a redo."""
        try:
            result = self._exchange(round, payload, timeout, recovery, on_wait, read_if_closed)
        except AggregatorRejected as exc:
            if exc.body.get("too_few_contributors"):
                raise TrainingError(f"{self.keys.party_id}: {exc.reason}") from None
            if exc.code == "aggregate_gone":  # a party resuming from further back than its last round
                raise TrainingError(
                    f"{self.keys.party_id}: round {round} of session {self.session!r} is over and the aggregator no "
                    "longer keeps its aggregate, which this party needs to resume from there: its checkpoint is "
                    "missing or older than its last round. Put the state folder back as it was, or start a new run "
                    "at every party with `node run --fresh`") from None
            raise
        if self.roster is not None:
            self._received(result)
        return result

    def _received(self, result: AggregateResult) -> None:
        """Note ``result``'s digest in this party's open span; witness the span when it ends (``witness_every``)."""
        if self._span and result.round != self._span[-1][0] + 1:
            self._witness()  # a round this party did not receive: the span ends before it
        self._span.append((result.round, sha256_hex(result.payload), tuple(result.contributors)))
        if (result.round + 1) % self.witness_every == 0:
            self._witness()

    def _witness(self) -> None:
        """Post this party's witness of its open span (before its next update); the answer holds every member's
        witness overlapping its previous span, checked here: every member in the round after it and in its last
        round must have posted one, with this party's digests. AggregatorMisbehaved in one line naming the round."""
        me, span = self.keys.party_id, self._span
        first, digests = span[0][0], tuple(d for _, d, _ in span)
        mine = Witness(me, first, digests, sign_witness(self.keys.eth_private_key, self.session, first, digests))
        before, self._posted, self._span = self._posted, (mine, span[-1][2]), []
        check = None if before is None else [before[0].first, before[0].last]
        try:
            answer = WitnessesOut.model_validate(self._json(
                "POST", f"/v1/sessions/{self.session}/rounds/{mine.last}/witness",
                {"first": first, "digests": list(digests), "signature": mine.signature, "check": check}))
        except AggregatorRejected as exc:
            raise AggregatorMisbehaved(
                f"{me}: {_rounds(mine)} of session {self.session!r}: the aggregator refuses this party's witness of "
                f"the aggregates it served ({exc.code}: {exc.reason}); it served other aggregates than it holds"
                ) from None
        if before is None:
            return
        if [answer.first, answer.last] != check:
            raise AggregatorMisbehaved(f"{me}: {_rounds(mine)} of session {self.session!r}: the aggregator answered "
                                       f"with the witnesses of rounds {answer.first}-{answer.last}, not "
                                       f"{check[0]}-{check[1]}")
        contiguous = before[0].last + 1 == first
        aligned = contiguous and first % self.witness_every == 0  # the others' spans end where this party's did
        required = [p for p in span[0][2] if p in before[1] and p != me] if aligned else []
        check_witnesses(self.session, me, before[0], _witnesses_of(answer), self.roster or {}, required=required)

    def _witnesses(self, first: int, last: int) -> list[Witness]:
        resp = self._send("GET", f"/v1/sessions/{self.session}/witnesses", params={"first": first, "last": last})
        if resp.status != 200:
            raise self._rejected(resp)
        return _witnesses_of(WitnessesOut.model_validate(resp.json()))

    def _exchange(self, round: int, payload: bytes, timeout: float,
                  recovery: Callable[[list[str]], bytes] | None,
                  on_wait: Callable[[int, list[str], float], None] | None, read_if_closed: bool) -> AggregateResult:
        try:
            out = self.submit_and_fetch(round, payload, timeout if on_wait is None else
                                        min(timeout, WAIT_REPORT_SECONDS))
            if isinstance(out, AggregateResult):
                return out
        except AggregatorRejected as exc:
            if not (read_if_closed and exc.code == "round_closed"):
                raise
        until = time.monotonic() + timeout
        while True:
            try:
                return self.fetch_aggregate(round, max(1.0, until - time.monotonic()), on_wait)
            except RecoveryRequested as req:  # a masked round lost parties: cancel our masks with them
                if recovery is None:
                    raise
                self.post_recovery(round, recovery(req.dropped))

    def wait_aggregate(self, round: int, timeout: float) -> bytes:
        """The aggregate payload of ``round`` (see ``fetch_aggregate``)."""
        return self.fetch_aggregate(round, timeout).payload

    def finished(self) -> SessionProgress:
        """Tell the aggregator this party finished its training in this session; first witness what it received
        since its last witness and check the witnesses of that span that are in by now (no next round checks it)."""
        if self.roster is not None:
            if self._span:
                self._witness()
            if self._posted is not None:
                mine = self._posted[0]
                check_witnesses(self.session, self.keys.party_id, mine, self._witnesses(mine.first, mine.last),
                                self.roster, required=())
        return SessionProgress.model_validate(self._json("POST", f"/v1/sessions/{self.session}/finished"))

    def abandon(self) -> SessionProgress:
        """Leave this session for a fresh run: the parties waiting in it stop instead of waiting forever."""
        return SessionProgress.model_validate(self._json("POST", f"/v1/sessions/{self.session}/abandoned"))

    def progress(self) -> SessionProgress | None:
        """This session's state and this party's progress in it (None if the session does not exist)."""
        resp = self._send("GET", f"/v1/sessions/{self.session}/progress")
        if resp.status == 404 and self._rejected(resp).code == "unknown_session":
            return None
        if resp.status != 200:
            raise self._rejected(resp)
        return SessionProgress.model_validate(resp.json())

    def session_status(self) -> SessionStatus | None:
        """This session's state, who it waits for and each member's last update (None if it does not exist)."""
        return next((s for s in self.status().sessions if s.session_id == self.session), None)

    def status(self) -> StatusOut:
        """The aggregator's public status."""
        resp = self._send("GET", "/status")
        if resp.status != 200:
            raise self._rejected(resp)
        return StatusOut.model_validate(resp.json())


def _rounds(w: Witness) -> str:
    return f"round {w.first}" if w.first == w.last else f"rounds {w.first}-{w.last}"


def _witnesses_of(answer: WitnessesOut) -> list[Witness]:
    return [Witness(w.party, w.first, tuple(w.digests), w.signature) for w in answer.witnesses]


def check_witnesses(session: str, me: str, mine: Witness, witnesses: Sequence[Witness], roster: Mapping[str, str],
                    required: Sequence[str]) -> None:
    """AggregatorMisbehaved unless every witness is its member's signature and states, for every round it shares
    with ``mine`` (this party's own), this party's digest; and every ``required`` member (in the round after
    ``mine`` and its last one) has a witness of ``mine``'s last round."""
    for w in witnesses:
        address = roster.get(w.party)
        if address is None or not witness_signed_by(address, session, w):
            raise AggregatorMisbehaved(f"{me}: {_rounds(mine)} of session {session!r}: the aggregator shows a "
                                       f"witness for {w.party!r} that {w.party!r} did not sign")
        for rnd in range(max(w.first, mine.first), min(w.last, mine.last) + 1):
            ours, theirs = mine.digest(rnd), w.digest(rnd)
            if theirs != ours:
                raise AggregatorMisbehaved(
                    f"{me}: round {rnd} of session {session!r}: the aggregate this party received (sha256 "
                    f"{str(ours)[:12]}…) differs from the one {w.party} received ({str(theirs)[:12]}…): the "
                    "aggregator gave parties different aggregates, or changed one")
    withheld = [p for p in required if not any(w.party == p and w.digest(mine.last) for w in witnesses)]
    if withheld:
        raise AggregatorMisbehaved(f"{me}: round {mine.last} of session {session!r}: the aggregator shows no witness "
                                   f"of its aggregate for {', '.join(withheld)}, which contributed to it and to the "
                                   "next: it withholds what they received")
