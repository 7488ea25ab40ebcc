"""The synchronous clock controller (paper Fig. 3, Alg. 1 lines 4-9) as a pure state machine.

A session's rounds are numbered 0, 1, 2, ...; exactly one is open at a time
and round r+1 opens the moment round r closes. Every expected party submits
exactly one update per round. The open round closes

* ``complete``: when every expected party's update has been accepted, or
* ``deadline``: ``deadline_seconds`` after its *first* accepted update, with the
  updates that arrived; the others are reported as stragglers.

The deadline is counted from the first update rather than from the opening so
that a session opened long before the parties finish their initial sweep does
not expire an empty round. A round never closes empty. Functions here take the
time as an argument and do no I/O; ``service`` persists what they decide.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from fedtopic.network.errors import Rejection

CloseReason = Literal["complete", "deadline"]


@dataclass(frozen=True)
class RoundState:
    """The open round of one session: who is expected, who has been accepted, since when."""

    session: str
    number: int
    expected: tuple[str, ...]
    deadline_seconds: float
    received: tuple[str, ...] = ()
    first_update_at: float | None = None

    @property
    def missing(self) -> tuple[str, ...]:
        """Expected parties whose update has not arrived, in session order."""
        got = set(self.received)
        return tuple(p for p in self.expected if p not in got)

    @property
    def deadline_at(self) -> float | None:
        """Unix time at which the straggler deadline closes the round; None before the first update."""
        return None if self.first_update_at is None else self.first_update_at + self.deadline_seconds


def admission_rejection(state: RoundState, round: int, party: str) -> Rejection | None:
    """Why ``party`` may not submit to ``round`` while ``state`` is the open round; None if it may.

    Rounds before ``state.number`` are closed; the caller looks those up in its
    store to tell a duplicate from a late update.
    """
    if party not in state.expected:
        return Rejection(403, "not_in_session", f"party {party!r} is not a member of session {state.session!r}")
    if round > state.number:
        return Rejection(409, "wrong_round", f"round {round} is not open yet; the open round is {state.number}")
    if round < state.number:
        return Rejection(409, "round_closed", f"round {round} is closed; the open round is {state.number}")
    if party in state.received:
        return Rejection(409, "duplicate_update", f"party {party!r} already submitted its update for round {round}")
    return None


def admit(state: RoundState, party: str, now: float) -> RoundState:
    """The round after accepting ``party``'s update at time ``now`` (admission already checked)."""
    first = state.first_update_at if state.first_update_at is not None else now
    return replace(state, received=state.received + (party,), first_update_at=first)


def close_reason(state: RoundState, now: float) -> CloseReason | None:
    """Why the round should close at ``now``, or None to keep waiting."""
    if len(state.received) >= len(state.expected):  # received ⊆ expected (admission): O(1), not ``missing``'s O(P)
        return "complete"
    deadline = state.deadline_at
    if deadline is not None and now >= deadline:
        return "deadline"
    return None


def next_round(state: RoundState) -> RoundState:
    """The round that opens when ``state`` closes."""
    return RoundState(state.session, state.number + 1, state.expected, state.deadline_seconds)
