"""Shared setup for the protection tests: P parties with real keys (small Paillier key, seeded X25519 keys)."""

from __future__ import annotations

import numpy as np

from fedtopic.crypto.keys import generate_party_keys
from fedtopic.crypto.paillier import generate_paillier_keys
from fedtopic.crypto.protect import ProtectionContext, RoundInfo

PAILLIER = generate_paillier_keys(1024)  # the smallest allowed size keeps the tests fast
PARTY_KEYS = [generate_party_keys(f"p{i}", seed=b"protect-tests") for i in range(4)]  # more made on demand
MASK_SECRET = bytes(range(32))
SESSION = "sess-1"


def contexts(shape: tuple[int, int], *, parties: int = 3, round: int = 1, delta: float = 0.25,
             ranking: np.ndarray | None = None, max_value: int = 1000, session: str = SESSION,
             private: bool = True, mask_degree: int | None = None) -> list[ProtectionContext]:  # fmt: skip
    """One context per party, consortium order."""
    PARTY_KEYS.extend(generate_party_keys(f"p{i}", seed=b"protect-tests") for i in range(len(PARTY_KEYS), parties))
    publics = tuple(k.x25519_public for k in PARTY_KEYS[:parties])
    order = np.arange(shape[0]) if ranking is None else ranking
    return [ProtectionContext(session=session, round=round, shape=shape, n_parties=parties, party_index=i,
                              max_value=max_value, delta=delta, paillier_public=PAILLIER.public,
                              paillier_private=PAILLIER.private if private else None, word_ranking=order,
                              x25519_private=PARTY_KEYS[i].x25519_private_key, party_publics=publics,
                              mask_secret=MASK_SECRET, mask_degree=mask_degree)
            for i in range(parties)]  # fmt: skip


def view(meta: dict, contributors: list[int], *, parties: int = 3, round: int = 1, session: str = SESSION) -> RoundInfo:
    ids = tuple(f"p{i}" for i in range(parties))
    return RoundInfo(session, round, meta, tuple(ids[i] for i in contributors), ids)


def run_round(scheme, matrices: list[np.ndarray], ctxs: list[ProtectionContext]) -> tuple[dict, list[bytes], bytes]:
    """encode -> validate -> combine for every party; returns (meta, payloads, aggregate)."""
    meta = scheme.session_meta(ctxs[0])
    scheme.check_meta(meta)
    payloads = [scheme.encode_update(m, c) for m, c in zip(matrices, ctxs)]
    for p in payloads:
        scheme.validate(p, meta, round=ctxs[0].round, session=ctxs[0].session)
    aggregate = scheme.combine(payloads, view(meta, list(range(len(ctxs))), parties=len(ctxs), round=ctxs[0].round))
    return meta, payloads, aggregate


def random_counts(rng: np.random.Generator, shape: tuple[int, int], tokens: int) -> np.ndarray:
    out = np.zeros(shape, dtype=np.int32)
    np.add.at(out, (rng.integers(0, shape[0], tokens), rng.integers(0, shape[1], tokens)), 1)
    return out
