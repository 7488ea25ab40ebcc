"""How a party's counts travel: the transport interface and the in-memory board for simulations.

The training loop only sees ``ChannelTransport``; the chain channel client and
the in-memory board both implement it, so the same loop runs in a one-process
simulation and across machines.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Protocol

import numpy as np

from fedtopic.algorithms.asynchronous import ChannelSnapshot
from fedtopic.crypto.codec import decode_counts, encode_counts


class ChannelTransport(Protocol):
    """One party's view of the channels: write its own, read those CP allows."""

    party_id: str

    def publish(self, round: int, n_wk: np.ndarray) -> int:
        """Publish N_p for ``round``; returns the bytes sent."""
        ...

    def read_latest(self) -> list[ChannelSnapshot]:
        """Latest snapshot of every readable channel other than our own that has published."""
        ...

    def bytes_received(self) -> int:
        """Bytes read from channels so far."""
        ...

    def latest_round(self, owner: str) -> int | None:
        """The latest round ``owner`` has published (None if none yet)."""
        ...


class InMemoryBoard:
    """A thread-safe stand-in for the chain in single-process simulations.

    Payloads are stored encoded (the real sparse codec), so byte counts are the
    ones the chain would carry before encryption overhead.
    """

    def __init__(self, readers: Mapping[str, Iterable[str]]) -> None:
        self._readers = {owner: frozenset(r) for owner, r in readers.items()}
        self._latest: dict[str, tuple[int, bytes]] = {}
        self._lock = threading.Lock()

    def channel(self, party_id: str, shape: tuple[int, int]) -> "InMemoryChannel":
        return InMemoryChannel(self, party_id, shape)

    def _put(self, owner: str, round: int, payload: bytes) -> None:
        with self._lock:
            previous = self._latest.get(owner)
            if previous is not None and round <= previous[0]:
                raise ValueError(f"channel {owner}: round {round} published after round {previous[0]}")
            self._latest[owner] = (round, payload)

    def _round_of(self, owner: str) -> int | None:
        with self._lock:
            latest = self._latest.get(owner)
            return None if latest is None else latest[0]

    def _readable(self, reader: str) -> list[tuple[str, int, bytes]]:
        with self._lock:
            return [
                (owner, rnd, payload)
                for owner, (rnd, payload) in self._latest.items()
                if owner != reader and reader in self._readers.get(owner, ())
            ]


class InMemoryChannel:
    """``ChannelTransport`` over an ``InMemoryBoard``."""

    def __init__(self, board: InMemoryBoard, party_id: str, shape: tuple[int, int]) -> None:
        self.party_id = party_id
        self._board = board
        self._shape = shape
        self._received = 0
        self._cache: dict[str, ChannelSnapshot] = {}

    def publish(self, round: int, n_wk: np.ndarray) -> int:
        payload = encode_counts(n_wk)
        self._board._put(self.party_id, round, payload)
        return len(payload)

    def read_latest(self) -> list[ChannelSnapshot]:
        for owner, rnd, payload in self._board._readable(self.party_id):
            cached = self._cache.get(owner)
            if cached is None or cached.round != rnd:
                self._received += len(payload)
                self._cache[owner] = ChannelSnapshot(owner, rnd, decode_counts(payload, expected_shape=self._shape))
        return list(self._cache.values())

    def bytes_received(self) -> int:
        return self._received

    def latest_round(self, owner: str) -> int | None:
        return self._board._round_of(owner)
