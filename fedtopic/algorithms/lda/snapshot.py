"""The unit that travels between DAFed-LDA parties: one channel's counts at one round.

Kept apart from the algorithm (and its numba kernels) so transports — the
chain client, the in-memory board — can build snapshots cheaply.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ChannelSnapshot:
    """The latest word-topic counts published on one channel: N_q as int32[V,K] at ``round``."""

    party: str
    round: int
    n_wk: np.ndarray
