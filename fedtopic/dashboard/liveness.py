"""Whether a party is alive, behind, stopped or finished, from the signs of life a dashboard can see.

A party is
* ``finished`` when its run says so (the run folder's summary.json, the aggregator's session state, the node's
  own model);
* ``stopped`` when its process is known dead (a run folder whose process ended without a summary), or, where
  its process cannot be checked (another machine), when it has given no sign of life (a history line, an
  aggregator request, a publication) for longer than ``stop_after``: ``HEARTBEAT_STOP_SECONDS`` (three missed
  heartbeats) where the signs are a node's heartbeats, which come every ``node.heartbeat.HEARTBEAT_SECONDS``
  whatever it computes; else ``STOP_FACTOR`` times its usual round interval, at least ``STOP_MIN_SECONDS``;
* ``behind`` when it is more than ``behind_rounds`` rounds behind the party furthest ahead (``Leaders``: a
  round is only compared with rounds of the same source, read no later than itself);
* ``unknown`` while nothing at all has been seen of it (no history here, no answer from a service yet);
* ``alive`` otherwise.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from fedtopic.node.heartbeat import HEARTBEAT_SECONDS

STOP_MIN_SECONDS = 6.0
STOP_FACTOR = 4.0
HEARTBEAT_STOP_SECONDS = 3 * HEARTBEAT_SECONDS
BEHIND_ROUNDS = 10


@dataclass(frozen=True)
class Verdict:
    """A party's status and, for anything but alive, why (one short phrase)."""

    status: str
    why: str = ""


@dataclass(frozen=True)
class Leaders:
    """The furthest round a party's own round is compared with, by where that round was read: rounds are only
    compared with rounds of the same source.

    ``own``: for a round from a party's history (read now): the furthest round of the histories here and, when
    the remote service is a chain (whose rounds are each party's publications, the runtime's rounds), of its
    answer too, since an older reading can only be lower than the truth. Not an aggregator's rounds: they count
    its sessions' rounds, which need not be the runtime's (a gFedNTM session counts mini-batch steps, its
    runtime epochs: its party's page showed the viewer hundreds of rounds behind), and even where they are, a
    party's last update is one round ahead of its last finished round (every viewer read "1 behind").
    ``told``: for a round the aggregator or chain reported at its last poll: the furthest round of that same
    answer. Against the histories it would lag by as many rounds as the consortium runs in a poll interval (a
    consortium at 40 rounds a second put every party but the viewer "behind")."""

    own: int | None
    told: int | None


def usual_interval(times: Sequence[float]) -> float | None:
    """The median gap between consecutive history times (None with fewer than two)."""
    gaps = [b - a for a, b in zip(times, times[1:]) if b >= a]
    return statistics.median(gaps) if gaps else None


def stop_after(interval: float | None, *, heartbeat: bool) -> float:
    """Seconds of silence after which a party counts as stopped (module docstring)."""
    if heartbeat:
        return HEARTBEAT_STOP_SECONDS
    return max(STOP_MIN_SECONDS, STOP_FACTOR * (interval or 0.0))


def judge(*, now: float, last_sign: float | None, interval: float | None, round: int | None, leader: int | None,
          finished: bool, process_alive: bool | None, heartbeat: bool,
          behind_rounds: int = BEHIND_ROUNDS) -> Verdict:
    """The status of one party (module docstring); ``process_alive``: None where it cannot be checked."""
    if finished:
        return Verdict("finished")
    if process_alive is False:
        return Verdict("stopped", "its process ended before the run finished")
    if process_alive is None:
        if last_sign is None:
            return Verdict("unknown", "no sign of it yet")
        silent = now - last_sign
        if silent > stop_after(interval, heartbeat=heartbeat):
            return Verdict("stopped", f"no sign of life for {silent:.0f} s")
    if round is not None and leader is not None and leader - round > behind_rounds:
        return Verdict("behind", f"{leader - round} rounds behind")
    return Verdict("alive")
