"""How a party's counts travel: the channel interface the asynchronous loop sees.

The training loop only sees ``ChannelTransport``; the chain channel client (``ledger.channel``), the asynchronous
links' boards (``fedtopic.links``: ``memory``, ``chain``, a plugin's) and the virtual clock's board all implement
it, so the same loop runs in a one-process simulation, on a virtual clock and across machines.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from fedtopic.algorithms.asynchronous import ChannelSnapshot


class Clock(Protocol):
    """A virtual harness's clock, which a channel on it carries (``ChannelTransport.clock``): the runtime's pause
    after a round is virtual seconds, and the party says when its loop is over."""

    def pause(self, seconds: float) -> None: ...
    def leave(self) -> None: ...


class ChannelTransport(Protocol):
    """One party's view of the channels: write its own, read those CP allows."""

    party_id: str
    clock: Clock | None
    """The virtual clock this channel runs on (None: real time)."""

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

    def publication(self) -> Mapping[str, Any]:
        """What the last publication cost beyond its bytes, for its history line's ``extra`` (a chain's
        ``{"ledger": {blocks, gas, chunks}}``); {} where there is nothing more."""
        ...
