"""A party's side of a summing session for real-valued vectors: open or join it, encode, sum round trips.

A protection whose ``floats_in_clear`` (``none``): a ``dense-sum`` session of float64[n] vectors (the aggregator sees
every vector), each sent as NPY or, when that is smaller, as a bitmap and its nonzeros (``network.sparse``;
gFedNTM's first-layer gradient). A session of dtype float32 carries 4 bytes a value: the party rounds its vector to
float32, the aggregator sums in float64 in the parties' order and rounds the sum to float32 (gFedNTM's
``wire=float32``).
Any other protection that carries ``dense`` (``mask``): the vector in fixed point (``fedtopic.crypto.fixedpoint``:
2^−60 resolution, bound ±2^20, two cells per value) carried by the protection's counts codec as a 2n × 1 matrix,
so under ``mask`` the aggregator sees uniform residues and learns neither a vector nor the sum (masked residues are
dense: no bitmap form there); the first party of ``ids`` seals the protection's fresh secrets for every party in the
session params (the aggregator stores only ciphertexts), the others open them and check the session's meta and
params are the ones they derive.
Used by FedNMF (one session) and gFedNTM (one per message kind).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from fedtopic.crypto.fixedpoint import FixedPoint
from fedtopic.crypto.keys import PartyKeys
from fedtopic.errors import ConfigError
from fedtopic.network.client import (
    AggregateResult,
    AggregatorClient,
)
from fedtopic.network.sparse import decode_array, encode_array, warm_up_soon
from fedtopic.node.protection import sealed_session
from fedtopic.protections import PartyCodec, Protection, Secrets, require_carries

WaitReport = Callable[[int, list[str], float], None]
"""``(round, missing parties, seconds waited)``: what a party waiting for an aggregate is told."""
FIXED_POINT = FixedPoint()
WITNESS_EVERY = 32
"""A dense session's aggregates are witnessed 32 steps at a time (``crypto.witness``): one request a step doubled
gFedNTM's wall time (docs/results/chain.md, "What the witnesses cost")."""


class DenseSession:
    """One opened session: ``encode`` a vector, ``decode`` a round's sum, ``exchange`` both ways."""

    def __init__(self, client: AggregatorClient, ids: Sequence[str], n: int, prot: PartyCodec | None,
                 dtype: str = "float64") -> None:
        self.client, self.ids, self.n, self.prot, self.dtype = client, list(ids), n, prot, dtype
        if prot is None:  # the codec's compiled code loads while the parties set up, not in the first round
            warm_up_soon(dtype)

    def encode(self, u: np.ndarray, round: int) -> bytes:
        if u.shape != (self.n,):
            raise ValueError(f"vector of shape {u.shape} for a session of {self.n} values")
        if self.prot is None:
            return encode_array(np.ascontiguousarray(u, dtype=self.dtype))
        return self.prot.encode(FIXED_POINT.encode(u).reshape(-1, 1), round)

    def decode(self, blob: bytes, round: int, contributors: int) -> np.ndarray:
        if self.prot is None:  # a float32 session's sum stays float32: exact values, widened where computed with
            return decode_array(blob, (self.n,), self.dtype)
        return FIXED_POINT.decode_sum(self.prot.decode(blob, round).reshape(-1), contributors)

    def send(self, payload: bytes, round: int, timeout: float, on_wait: WaitReport | None = None) -> AggregateResult:
        """Submit an encoded update for ``round``; the round's aggregate, sending mask recovery messages whenever
        the aggregator asks for them. ``on_wait``: told every ``WAIT_REPORT_SECONDS`` who is still missing."""
        prot = self.prot
        recovery = None if prot is None else (lambda dropped: prot.recovery([self.ids.index(p) for p in dropped],
                                                                           round))
        return self.client.exchange(round, payload, timeout, recovery=recovery, on_wait=on_wait)


def open_dense_session(client: AggregatorClient, ids: Sequence[str], keys: PartyKeys, publics: Sequence[bytes], *,
                       launcher: str, protection: Protection, n: int, params: Mapping[str, Any], timeout: float,
                       dtype: str = "float64", key_bits: int = 2048) -> DenseSession:
    """Open or join ``client``'s session for vectors of ``n`` values under ``protection`` (``dtype``: what a
    protection with floats in the clear carries, float64 or float32; the others carry fixed point whatever it is;
    ``key_bits``: the size of a key the protection's secrets may hold)."""
    if dtype not in ("float64", "float32"):
        raise ConfigError(f"dense updates are float64 or float32, got {dtype!r}")
    require_carries(protection, "dense", f"channel {client.session!r}")
    client.witness_every = WITNESS_EVERY
    if protection.floats_in_clear:
        client.open_session(ids, combiner=protection.combiner("dense"), meta={"shape": [n], "dtype": dtype},
                            params=dict(params))
        return DenseSession(client, ids, n, None, dtype)
    index = list(ids).index(keys.party_id)

    def codec(secrets: Secrets) -> PartyCodec:
        return protection.counts(protection.context(
            secrets, session=client.session, round=0, shape=(FIXED_POINT.cells(n), 1), n_parties=len(ids),
            party_index=index, max_value=FIXED_POINT.max_value, x25519_private=keys.x25519_private_key,
            party_publics=tuple(publics)))

    combiner = protection.combiner("dense")
    if not protection.has_secret:
        prot = codec(Secrets())
        client.open_session(ids, combiner=combiner, meta=prot.meta, params=dict(params))
        return DenseSession(client, ids, n, prot)
    secrets = sealed_session(client, ids, keys, publics, launcher=launcher, protection=protection, key_bits=key_bits,
                             params=params,
                             timeout=timeout, spec=lambda sec: (combiner, codec(sec).meta))
    return DenseSession(client, ids, n, codec(secrets))
