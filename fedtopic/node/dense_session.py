"""A party's side of a summing session for real-valued vectors: open or join it, encode, sum round trips.

Protection ``none``: a ``dense-sum`` session of float64[n] vectors (the aggregator sees every vector), each sent
as NPY or, when that is smaller, as a bitmap and its nonzeros (``network.sparse``; gFedNTM's first-layer
gradient). A session of dtype float32 carries 4 bytes a value: the party rounds its vector to float32, the
aggregator sums in float64 in the parties' order and rounds the sum to float32 (gFedNTM's ``wire=float32``).
Protection ``mask``: the vector in fixed point (``fedtopic.crypto.fixedpoint``: 2^−60 resolution, bound
±2^20, two cells per value) carried by the ``mask`` scheme as a 2n × 1 matrix, so the aggregator sees uniform
residues and learns neither a vector nor the sum (masked residues are dense: no bitmap form there); the first
party of ``ids`` seals a fresh consortium mask secret for every party in the session params (the aggregator
stores only ciphertexts), the others open it and check the session's meta and params are the ones they derive.
Used by FedNMF (one session) and gFedNTM (one per message kind).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from fedtopic.crypto.fixedpoint import FixedPoint
from fedtopic.crypto.keys import PartyKeys
from fedtopic.crypto.protect import ProtectionContext
from fedtopic.errors import ConfigError
from fedtopic.network.client import (
    AggregateResult,
    AggregatorClient,
)
from fedtopic.network.sparse import decode_array, encode_array, warm_up_soon
from fedtopic.node.protection import PartyProtection, sealed_session

PROTECTIONS = ("none", "mask")
WaitReport = Callable[[int, list[str], float], None]
"""``(round, missing parties, seconds waited)``: what a party waiting for an aggregate is told."""
FIXED_POINT = FixedPoint()


class DenseSession:
    """One opened session: ``encode`` a vector, ``decode`` a round's sum, ``exchange`` both ways."""

    def __init__(self, client: AggregatorClient, ids: Sequence[str], n: int, prot: PartyProtection | None,
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
                       protection: str, n: int, params: Mapping[str, Any], timeout: float,
                       dtype: str = "float64") -> DenseSession:
    """Open or join ``client``'s session for vectors of ``n`` values under ``protection`` (``dtype``: what
    ``none`` carries, float64 or float32; ``mask`` carries fixed point whatever it is)."""
    if dtype not in ("float64", "float32"):
        raise ConfigError(f"dense updates are float64 or float32, got {dtype!r}")
    if protection == "none":
        client.open_session(ids, combiner="dense-sum", meta={"shape": [n], "dtype": dtype}, params=dict(params))
        return DenseSession(client, ids, n, None, dtype)
    if protection not in PROTECTIONS:
        raise ConfigError(f"dense updates take protection {' or '.join(PROTECTIONS)}, got {protection!r}")
    index = list(ids).index(keys.party_id)

    def context(secret: bytes | None) -> ProtectionContext:
        return ProtectionContext(session=client.session, round=0, shape=(FIXED_POINT.cells(n), 1), n_parties=len(ids),
                                 party_index=index, max_value=FIXED_POINT.max_value,
                                 x25519_private=keys.x25519_private_key, party_publics=tuple(publics),
                                 mask_secret=secret)

    secrets = sealed_session(client, ids, keys, publics, protection="mask", key_bits=0, params=params,
                             timeout=timeout,
                             spec=lambda sec: ("mask", PartyProtection("mask", context(sec.mask_secret)).meta))
    return DenseSession(client, ids, n, PartyProtection("mask", context(secrets.mask_secret)))
