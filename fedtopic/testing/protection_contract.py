"""A protection's contract (``fedtopic.protections.base``), for the integer matrices every built-in carries: it
describes itself; its parties agree on a session meta the aggregator's combiner accepts and bounds; an update fits
that bound and passes the combiner's check for its sender; a torn or foreign update is refused as an invalid
payload (a 422, never a 500); the combined aggregate decodes at every party to the exact sum of the updates."""

from __future__ import annotations

import json

import numpy as np

from fedtopic.crypto.keys import generate_party_keys
from fedtopic.network.combiners import RoundContext, get_combiner
from fedtopic.network.errors import InvalidPayload
from fedtopic.protections.base import KINDS
from fedtopic.protections.registry import get_protection
from fedtopic.testing.contract import Clauses, expect_raises

SESSION = "conformance"


def check_protection(name: str, *, parties: int = 3, shape: tuple[int, int] = (12, 3), seed: int = 0,
                     key_bits: int = 1024) -> list[str]:
    """The clauses protection ``name`` passed; ``key_bits``: a Paillier scheme's key (1024, the smallest allowed,
    keeps the check quick). Parties' keys are seeded (test keys, not secret)."""
    protection = get_protection(name)
    clauses = Clauses("protection", name)

    def describes() -> None:
        info = protection.describe()
        json.dumps(info)
        assert info["name"] == name and info["summary"], info
        assert protection.kinds and set(protection.kinds) <= set(KINDS), f"kinds {set(protection.kinds)}"
        assert isinstance(protection.min_contributors, int) and protection.min_contributors >= 1

    clauses.check("describes itself", describes)
    if not protection.carries("counts"):
        return clauses.passed

    rng = np.random.default_rng(seed)
    ids = tuple(f"p{i + 1}" for i in range(parties))
    keys = [generate_party_keys(pid, seed=b"fedtopic-conformance") for pid in ids]
    publics = tuple(k.x25519_public for k in keys)
    max_value = 50
    matrices = [rng.integers(0, max_value + 1, size=shape).astype(np.int64) for _ in ids]
    ranking = np.argsort(-sum(matrices).sum(axis=1), kind="stable").astype(np.int64)
    secrets = clauses.check("makes the consortium's secrets", lambda: protection.new_secrets(key_bits))
    codecs: list = []

    def make_codecs() -> None:  # filled in place, so that those made before a failure are closed
        for i in range(parties):
            codecs.append(protection.counts(protection.context(
                secrets, session=SESSION, round=1, shape=shape, n_parties=parties, party_index=i,
                max_value=max_value, delta=0.25, word_ranking=ranking, x25519_private=keys[i].x25519_private_key,
                party_publics=publics)))

    try:
        clauses.check("makes a codec for every party", make_codecs)
        meta = codecs[0].meta
        combiner = clauses.check("its counts combiner is registered on the aggregator",
                                 lambda: get_combiner(protection.combiner("counts")))

        def agreed_meta() -> None:
            assert all(c.meta == meta for c in codecs), "the parties' session metas differ"
            json.dumps(meta)
            combiner.check_meta(meta)
            bound = combiner.max_update_bytes(meta)
            assert isinstance(bound, int) and bound > 0, f"max_update_bytes gave {bound!r}"

        clauses.check("its parties agree on a meta its combiner accepts and bounds", agreed_meta)
        payloads = clauses.check("an update fits the bound and passes the check for its sender", lambda: _updates(
            codecs, matrices, combiner, meta))
        clauses.check("a torn update is an invalid payload", lambda: expect_raises(
            InvalidPayload, lambda: combiner.validate(payloads[0][: len(payloads[0]) // 2], meta, round=1,
                                                      session=SESSION, sender=0), "half an update"))
        clauses.check("garbage is an invalid payload", lambda: expect_raises(
            InvalidPayload, lambda: combiner.validate(bytes(rng.integers(0, 256, 64, dtype=np.uint8)), meta, round=1,
                                                      session=SESSION, sender=0), "64 random bytes"))
        view = RoundContext(session=SESSION, round=1, meta=meta, contributors=ids, expected=ids)
        aggregate = clauses.check("combines a full round", lambda: combiner.combine(payloads, view))

        def decodes_the_sum() -> None:
            total = np.sum(matrices, axis=0)
            for i, codec in enumerate(codecs):
                got = np.asarray(codec.decode(aggregate, 1))
                assert got.shape == shape and np.array_equal(got, total), \
                    f"party {ids[i]} decoded another matrix than the sum (largest error {np.abs(got - total).max()})"

        clauses.check("every party decodes the exact sum", decodes_the_sum)
    finally:
        for codec in codecs:
            codec.close()
    return clauses.passed


def _updates(codecs, matrices, combiner, meta) -> list[bytes]:
    """Every party's encoded update, each within the bound and accepted from its sender."""
    bound = combiner.max_update_bytes(meta)
    out = []
    for i, (codec, matrix) in enumerate(zip(codecs, matrices)):
        payload = codec.encode(matrix, 1)
        assert isinstance(payload, bytes) and 0 < len(payload) <= bound, \
            f"party {i}'s update is {len(payload)} bytes, its session allows {bound}"
        combiner.validate(payload, meta, round=1, session=SESSION, sender=i)
        out.append(payload)
    return out
