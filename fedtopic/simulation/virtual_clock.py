"""Channels on a virtual clock: the one asynchronous runtime (``node.async_loop.run_party``) made deterministic.

Threads make staleness real but not reproducible (the OS schedules them). On a ``VirtualBoard`` every party still
runs the runtime's own loop in its own thread, but the board takes turns for them as a discrete-event simulation:

- a party's round *starts* at its virtual time t when it first reads the channels after publishing (or at start),
  and only when no round is running and (t, party index) is the smallest among the parties still training; it
  reads, of every channel it may read, the latest publication made at a virtual time ≤ t;
- a round takes ``round_seconds`` of the party plus whatever it pauses (the paper's random delay, §8.1), all in
  virtual seconds: its publication is stamped start + ``round_seconds`` + pause, which is also when its next round
  may start, and publishing ends its turn;
- the genesis (round 0) is stamped 0; a party leaves when its loop ends (``VirtualChannel.leave``); once every
  party has left, a read sees every channel's last publication (for ``absorb``).

So the order of rounds, what each reads and hence the model depend only on the seed. With ``round_seconds`` the
tokens' cost, larger parties are slower, as on real machines (``virtual_async``); with one virtual second per round
for every party, every round reads everyone's previous round: CSFed-LDA's lock-step (``lockstep``).
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from fedtopic.algorithms.asynchronous import ChannelSnapshot
from fedtopic.crypto.codec import encode_counts
from fedtopic.errors import TrainingError

TURN_POLL = 0.5
"""Seconds between looks at the stop event while a party waits for its turn."""


@dataclass(frozen=True)
class _Publication:
    at: float  # virtual seconds
    round: int
    n_wk: np.ndarray
    size: int  # bytes of its encoding (what a real channel would carry before encryption; 0 when not counted)


class VirtualBoard:
    """The channels of ``party_ids`` and the turn-taking of their rounds on one virtual clock.

    ``readable[p]``: the other channels party p reads (``node.roster.readable_channels``); ``round_seconds[i]``: the
    virtual length of party i's round before its pause; ``stop``: set when a party failed (a party waiting for its
    turn then stops too); ``count_bytes``: encode every publication to count what a channel would carry (about 4 ms
    for bbc-news's [10,720, 10] counts: the lock-step harness, which has no channels to measure, skips it)."""

    def __init__(self, party_ids: Sequence[str], readable: Mapping[str, Sequence[str]],
                 round_seconds: Sequence[float], stop: threading.Event, *, count_bytes: bool = True) -> None:
        if len(round_seconds) != len(party_ids) or min(round_seconds, default=0.0) < 0:
            raise ValueError(f"{len(party_ids)} parties need as many round lengths ≥ 0, got {list(round_seconds)}")
        self._ids = list(party_ids)
        self._readable = {p: list(readable[p]) for p in self._ids}
        self._round_seconds = [float(s) for s in round_seconds]
        self._stop, self._count_bytes = stop, count_bytes
        self._turn = threading.Lock()
        self._wake = [threading.Condition(self._turn) for _ in self._ids]  # each party waits on its own
        self._start = [0.0] * len(self._ids)  # when each party's next round starts
        self._paused = [0.0] * len(self._ids)  # virtual pause of the running round
        self._left = [False] * len(self._ids)
        self._running: int | None = None
        self._published: dict[str, list[_Publication]] = {p: [] for p in self._ids}
        self._stamps: dict[str, list[float]] = {p: [] for p in self._ids}  # each publication's ``at``, in order

    def channel(self, index: int) -> VirtualChannel:
        return VirtualChannel(self, index)

    def clock(self, index: int) -> float:
        """Party ``index``'s virtual time: the end of its last published round."""
        with self._turn:
            return self._start[index]

    def _publish(self, index: int, round: int, n_wk: np.ndarray) -> int:
        size = len(encode_counts(n_wk)) if self._count_bytes else 0
        with self._turn:
            if self._running == index:  # a trained round: stamped at its end, which ends the turn
                at = self._start[index] + self._round_seconds[index] + self._paused[index]
                self._start[index], self._paused[index], self._running = at, 0.0, None
                self._wake_next()
            elif round == 0:
                at = 0.0
            else:
                raise TrainingError(f"{self._ids[index]} published round {round} outside its turn")
            self._published[self._ids[index]].append(_Publication(at, round, n_wk, size))
            self._stamps[self._ids[index]].append(at)
        return size

    def _read(self, index: int) -> tuple[list[_Publication], list[str]]:
        """The latest publication of every channel ``index`` reads that exists at its round's start."""
        with self._turn:
            over = all(self._left)  # training is over: the last publications, for ``absorb``
            if not over and self._running != index:
                while not self._my_turn(index):
                    if self._stop.is_set():
                        raise TrainingError(f"{self._ids[index]}: the simulation stopped (another party failed)")
                    self._wake[index].wait(TURN_POLL)
                self._running = index
            now = float("inf") if over else self._start[index]
            latest = [(o, self._at_or_before(o, now)) for o in self._readable[self._ids[index]]]
            return [h for _, h in latest if h is not None], [o for o, h in latest if h is not None]

    def _at_or_before(self, owner: str, now: float) -> _Publication | None:
        """``owner``'s latest publication stamped ≤ ``now``; among equal stamps the earliest (a heap's first
        maximum). A channel's stamps never decrease, so a bisection finds it."""
        stamps = self._stamps[owner]
        last = bisect.bisect_right(stamps, now) - 1
        if last < 0:
            return None
        return self._published[owner][bisect.bisect_left(stamps, stamps[last])]

    def _next(self) -> int | None:
        """The party whose round starts next: the smallest (start, index) among those still training."""
        waiting = [(self._start[j], j) for j in range(len(self._ids)) if not self._left[j]]
        return min(waiting)[1] if waiting else None

    def _my_turn(self, index: int) -> bool:
        return self._running is None and self._next() == index

    def _wake_next(self) -> None:
        """Wake the party whose turn it is now (the others sleep on)."""
        following = self._next()
        if self._running is None and following is not None:
            self._wake[following].notify()

    def _pause(self, index: int, seconds: float) -> None:
        if seconds < 0:  # a channel's stamps must not go back
            raise ValueError(f"a pause of {seconds} virtual seconds")
        with self._turn:
            self._paused[index] += seconds

    def _leave(self, index: int) -> None:
        with self._turn:
            self._left[index] = True
            if self._running == index:
                self._running = None
            self._wake_next()

    def _latest_round(self, owner: str) -> int | None:
        with self._turn:
            published = self._published.get(owner)
            return published[-1].round if published else None


class VirtualChannel:
    """Party ``index``'s ``ChannelTransport`` on a ``VirtualBoard``, and its clock (``pause`` and ``leave`` for its
    runtime)."""

    def __init__(self, board: VirtualBoard, index: int) -> None:
        self._board, self._index = board, index
        self.clock = self
        self.party_id = board._ids[index]
        self._received = 0
        self._last_read: dict[str, int] = {}

    def publish(self, round: int, n_wk: np.ndarray) -> int:
        return self._board._publish(self._index, round, n_wk)

    def read_latest(self) -> list[ChannelSnapshot]:
        latest, owners = self._board._read(self._index)
        for owner, h in zip(owners, latest):
            if self._last_read.get(owner) != h.round:  # a real reader downloads each round once
                self._received += h.size
                self._last_read[owner] = h.round
        return [ChannelSnapshot(owner, h.round, h.n_wk) for owner, h in zip(owners, latest)]

    def bytes_received(self) -> int:
        return self._received

    def latest_round(self, owner: str) -> int | None:
        return self._board._latest_round(owner)

    def publication(self) -> dict[str, object]:
        return {}

    def pause(self, seconds: float) -> None:
        """The runtime's pause after a round: virtual seconds added to the round, no real waiting."""
        self._board._pause(self._index, seconds)

    def leave(self) -> None:
        """The party's loop is over: its turn (if any) passes, and it no longer holds back others' rounds."""
        self._board._leave(self._index)
