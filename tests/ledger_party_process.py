"""One party as its own OS process (run by tests/test_ledger_mcacs.py against `fedtopic chain up`).

argv: URL REGISTRY SEED PARTY_ID ROUNDS V K. Publishes its counts for rounds 1..ROUNDS (the counts of
round r are a deterministic function of party and r), reading the latest of the others after each
publish; prints one JSON line: {party: {round: sum}} of everything it read last.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from fedtopic.crypto.keys import generate_party_keys
from fedtopic.ledger.channel import ChainChannel
from fedtopic.ledger.rpc import configure_retries, connect


def counts_for(party_id: str, round: int, shape: tuple[int, int]) -> np.ndarray:
    """Deterministic sparse int32 counts for (party, round)."""
    rng = np.random.default_rng([sum(party_id.encode()), round])
    n = np.zeros(shape, dtype=np.int32)
    idx = rng.integers(0, shape[0] * shape[1], size=200)
    np.add.at(n.reshape(-1), idx, 1)
    return n


def main() -> None:
    url, registry, seed, party_id, rounds, v, k = sys.argv[1:8]
    shape = (int(v), int(k))
    configure_retries(60.0)  # as `node run` does (its --patience): a busy chain up on a loaded machine yields
    channel = ChainChannel(connect(url), registry, generate_party_keys(party_id, seed=seed.encode()), shape=shape)
    seen: dict[str, dict[str, int]] = {}
    for r in range(1, int(rounds) + 1):
        channel.publish(r, counts_for(party_id, r, shape))
        for snap in channel.read_latest():
            seen[snap.party] = {"round": snap.round, "sum": int(snap.n_wk.sum()),
                                "ok": bool(np.array_equal(snap.n_wk, counts_for(snap.party, snap.round, shape)))}
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
