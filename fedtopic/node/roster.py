"""The parties of a one-process run: who reads whom, each party's seed, each party's delay stream.

Shared by the threaded, virtual-clock and lock-step simulations (and the
node process for its delays), so that the same seed gives every party the same
sampler stream and the same random delays whichever way the run is driven.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def readable_channels(party_ids: Sequence[str], cp: Mapping[str, Sequence[str]] | None) -> dict[str, list[str]]:
    """The *other* channels each party may read, in party order.

    ``cp`` maps a channel owner to the parties that may read it (consortium.toml's
    [cp]; the owner may or may not be listed); None means everyone reads everyone.
    """
    return {pid: [o for o in party_ids if o != pid and (cp is None or pid in cp.get(o, ()))] for pid in party_ids}


def delay_rng(seed: int, index: int) -> np.random.Generator:
    """The random-delay stream of party ``index`` (kept apart from its sampler stream)."""
    return np.random.default_rng(seed + 10_007 * (index + 1))
