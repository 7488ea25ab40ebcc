"""The ``memory`` link: an asynchronous consortium's channels in this process's memory (simulations, tests).

Payloads are stored encoded (the real sparse codec), so byte counts are the ones the chain would carry before its
envelope; what it leaves out is the chain's encryption, contracts and blocks (the ``chain`` link has them).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from fedtopic.algorithms.asynchronous import ChannelSnapshot
from fedtopic.crypto.codec import decode_counts, encode_counts
from fedtopic.links.base import Channels


class InMemoryBoard:
    """A thread-safe stand-in for the chain in single-process simulations, and the ``memory`` link's board
    (``readers``: CP, owner → readers; ``shape``: a publication's, unless a channel is given its own)."""

    def __init__(self, readers: Mapping[str, Iterable[str]], shape: tuple[int, int] | None = None) -> None:
        self._readers = {owner: frozenset(r) for owner, r in readers.items()}
        self._shape = shape
        self._latest: dict[str, tuple[int, bytes]] = {}
        self._lock = threading.Lock()

    def channel(self, party_id: str, shape: tuple[int, int] | None = None) -> "InMemoryChannel":
        chosen = shape or self._shape
        if chosen is None:
            raise ValueError("a channel of a board without a shape needs its own")
        return InMemoryChannel(self, party_id, chosen)

    def publication(self) -> Mapping[str, Any]:
        return {}

    def close(self) -> None:
        """Nothing to release: the board is this process's memory."""

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

    clock = None

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

    def publication(self) -> Mapping[str, Any]:
        return {}


class MemoryLink:
    """The ``memory`` link (asynchronous)."""

    name = "memory"
    mode = "async"
    summary = "channels in this process's memory, payloads in the real codec (no chain, no encryption)"

    def connect(self, where: Channels) -> InMemoryBoard:
        return InMemoryBoard(where.readers, where.shape)


MEMORY = MemoryLink()
