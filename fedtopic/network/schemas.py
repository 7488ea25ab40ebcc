"""Request and response bodies of the aggregator's JSON endpoints (separate models per direction).

Update payloads and aggregates are raw bytes (``application/octet-stream``),
not JSON; their format belongs to the session's combiner.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from fedtopic.crypto.witness import MAX_SPAN
from fedtopic.network.wire import ID_PATTERN

Id = Annotated[str, StringConstraints(pattern=ID_PATTERN)]
JsonScalar = int | float | str | bool | None
MetaValue = JsonScalar | list[JsonScalar]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SessionCreate(_In):
    """Open (or re-join) a training run. Posting the same spec again is a no-op; a different one is a 409."""

    session_id: Id
    parties: list[Id] = Field(min_length=1, max_length=1000, description="expected parties, each once")
    combiner: str | None = Field(None, description="aggregation rule; default: the consortium's protection")
    meta: dict[str, MetaValue] = Field(default_factory=dict, description="payload metadata, checked by the combiner")
    params: dict[str, MetaValue] = Field(default_factory=dict, description="hyper-parameters shared as-is")
    straggler_deadline_seconds: float | None = Field(None, gt=0, le=7 * 86400, allow_inf_nan=False)


class SessionOut(BaseModel):
    """A session as stored: the spec every party trains with."""

    session_id: str
    parties: list[str]
    combiner: str
    meta: dict[str, Any]
    params: dict[str, Any]
    straggler_deadline_seconds: float
    created_by: str
    created_at: float
    current_round: int


class VocabularyIn(_In):
    """A party's local vocabulary (paper §6.1 step 2: vocabulary alignment), optionally with its counts
    (gFedNTM Alg. 1 stage 1: the consensus weighs words by their pooled frequencies)."""

    words: list[Annotated[str, StringConstraints(min_length=1, max_length=256)]] = Field(max_length=5_000_000)
    documents: int | None = Field(None, ge=0, le=2**40)
    document_frequency: list[Annotated[int, Field(ge=0, le=2**40)]] | None = Field(None, max_length=5_000_000)
    term_frequency: list[Annotated[int, Field(ge=0, le=2**48)]] | None = Field(None, max_length=5_000_000)


class WitnessIn(_In):
    """A party's signed witness of the aggregates of rounds ``first`` … (``crypto.witness``): sha256 of the bytes
    it received, one a round; ``check``: the span ``[first, last]`` whose witnesses the answer holds."""

    first: int = Field(ge=0, le=2**31)
    digests: list[Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]] = Field(min_length=1, max_length=MAX_SPAN)
    signature: str = Field(pattern=r"^0x[0-9a-f]{130}$")
    check: tuple[Annotated[int, Field(ge=0, le=2**31)], Annotated[int, Field(ge=0, le=2**31)]] | None = None


class WitnessOut(BaseModel):
    """One member's witness, as it signed it."""

    party: str
    first: int
    digests: list[str]
    signature: str


class WitnessesOut(BaseModel):
    """Every member's witness overlapping rounds ``first`` … ``last``: each party checks them against its own."""

    session_id: str
    first: int
    last: int
    witnesses: list[WitnessOut]


class VocabularyOut(BaseModel):
    """Alignment state; ``words`` (the union in code-point order) once every party has posted."""

    session_id: str
    posted: list[str]
    missing: list[str]
    complete: bool
    size: int | None = None
    sha256: str | None = Field(None, description="sha256 of the union joined by newlines, UTF-8")
    words: list[str] | None = None
    documents: int | None = Field(None, description="pooled document count, when every party posted counts")
    document_frequency: list[int] | None = Field(None, description="pooled per word of ``words``, likewise")
    term_frequency: list[int] | None = None


class UpdateReceipt(BaseModel):
    """An accepted update; it is on disk before this is sent."""

    session_id: str
    round: int
    party: str
    sha256: str
    bytes: int
    received: list[str]
    missing: list[str]
    round_closed: bool


class RoundOut(BaseModel):
    """One round as the clock controller sees it."""

    session_id: str
    round: int
    state: Literal["open", "recovering", "closed"]
    received: list[str]
    missing: list[str]
    opened_at: float
    first_update_at: float | None
    deadline_at: float | None
    closed_at: float | None
    close_reason: Literal["complete", "deadline", "failed"] | None
    dropped: list[str] = Field(default_factory=list, description="parties a masked round went on without")
    abandoned_by: str | None = Field(None, description="the member that abandoned this session for a fresh run: the "
                                     "round will never complete")
    refused: dict[str, str] = Field(default_factory=dict, description="members whose open of this session was "
                                    "refused (other params), with what differs: the round cannot complete "
                                    "without them")
    refused_updates: dict[str, str] = Field(default_factory=dict, description="members the round still waits for "
                                            "whose last update was refused at submission, and why: the round goes "
                                            "on without them at its straggler deadline")
    awaiting_recovery: list[str] = Field(default_factory=list, description="survivors whose recovery is still due")


class RecoveryReceipt(BaseModel):
    """A survivor's accepted recovery message (masked rounds that lost parties)."""

    session_id: str
    round: int
    party: str
    sha256: str
    awaiting: list[str]


class StragglerEvent(BaseModel):
    """A round the straggler deadline closed, and who it went on without."""

    round: int
    closed_at: float
    missing: list[str]


class PartySeen(BaseModel):
    """One member's last sign of life in a session."""

    party: str
    last_round: int | None = Field(None, description="its latest round with an update (None: none yet)")
    last_update_at: float | None = None
    last_seen_at: float | None = Field(None, description="its last authenticated request (a node asks every few "
                                       "seconds while it runs; kept in memory, None after a restart)")
    ended: Literal["finished", "abandoned"] | None = Field(None, description="it said it finished, or abandoned "
                                                           "the session for a fresh run")


class SessionStatus(BaseModel):
    """Per-session summary for ``/status``."""

    session_id: str
    combiner: str
    parties: list[str]
    state: Literal["running", "finished", "abandoned"] = Field(
        description="finished: every member said it finished; abandoned: a member started a fresh run")
    missing: list[str] = Field(description="members the open round still waits for (empty once the session ended)")
    seen: list[PartySeen]
    current_round: RoundOut = Field(description="running: the open round; once the session ended, its last round "
                                                "(the closed one every member took), not the empty one after it")
    straggler_events: list[StragglerEvent]


class SessionProgress(BaseModel):
    """One member's view of a session, its size independent of the session's (how a starting node picks the run
    it joins: 1,000 nodes asking for a 1,000-member ``SessionStatus`` each is a million rows)."""

    session_id: str
    state: Literal["running", "finished", "abandoned"]
    current_round: int
    you: PartySeen


class StatusOut(BaseModel):
    """Everything an operator needs to see at a glance."""

    protection: str
    parties: list[str]
    sessions: list[SessionStatus]


class Health(BaseModel):
    """Liveness."""

    status: Literal["ok"] = "ok"


class Problem(BaseModel):
    """Every 4xx answer: a stable machine code and one human line."""

    code: str
    detail: str
