"""One FedNMF(+MI) client's protocol over the aggregator (paper Alg. 1): local epochs up, the sum down.

The aggregator only sums. Protection ``none``: a ``dense-sum`` session of float64[n + 1] vectors (the aggregator
sees every u_i = [N_i·(x_i − x), N_i]). Protection ``mask``: u_i in fixed point (``fedtopic.crypto.fixedpoint``,
2^−32 resolution, bound ±2^20) carried by the ``mask`` scheme as an (n + 1) × 1 matrix, so the aggregator sees
uniform residues and learns neither any u_i nor their sum; the first party seals the consortium mask secret for
every party in the session params (the aggregator stores only ciphertexts), the others open it. Every party
then applies the server rule to the same sum (``FedNMFParty.apply``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from fedtopic.algorithms.fednmf_party import FedNMFParty
from fedtopic.crypto.fixedpoint import FixedPoint
from fedtopic.crypto.keys import PartyKeys
from fedtopic.crypto.protect import ProtectionContext
from fedtopic.errors import ConfigError, TrainingError
from fedtopic.network.client import AggregatorClient
from fedtopic.network.dense import decode_dense, encode_dense
from fedtopic.network.errors import AggregatorRejected, RecoveryRequested
from fedtopic.node.csfed_protection import (
    PartyProtection,
    new_secrets,
    open_secrets,
    sealed_params,
)

PROTECTIONS = ("none", "mask")
FIXED_POINT = FixedPoint()


@dataclass
class FedNMFRecord:
    """One round as the party saw it."""

    round: int
    selected: bool
    train_seconds: float = 0.0
    wait_seconds: float = 0.0
    bytes_sent: int = 0
    bytes_received: int = 0
    contributors: list[str] = field(default_factory=list)


class _Codec:
    """Encode u_i and decode the round's sum for one protection."""

    def __init__(self, protection: str, n: int, prot: PartyProtection | None) -> None:
        self.protection, self.n, self.prot = protection, n, prot

    def encode(self, u: np.ndarray, round: int) -> bytes:
        if self.prot is None:
            return encode_dense(u)
        return self.prot.encode(FIXED_POINT.encode(u).reshape(-1, 1), round)

    def decode(self, blob: bytes, round: int, contributors: int) -> np.ndarray:
        if self.prot is None:
            return decode_dense(blob, (self.n,), "float64").astype(np.float64)
        return FIXED_POINT.decode_sum(self.prot.decode(blob, round).reshape(-1), contributors)


def _open(party: FedNMFParty, client: AggregatorClient, ids: Sequence[str], keys: PartyKeys,
          publics: Sequence[bytes], protection: str, timeout: float) -> _Codec:
    """Open or join the training session; the codec its protection needs."""
    spec, n = party.spec, party.size + 1
    params = {"algorithm": "fednmf", "topics": spec.topics, "iterations": spec.iterations, "seed": spec.seed,
              "vocabulary": party.corpus.n_words, **{f"opt_{k}": v for k, v in spec.options.items() if v is not None}}
    if protection == "none":
        client.open_session(ids, combiner="dense-sum", meta={"shape": [n], "dtype": "float64"}, params=params)
        return _Codec(protection, n, None)
    if protection != "mask":
        raise ConfigError(f"fednmf takes protection none or mask, got {protection!r}")
    index = list(ids).index(keys.party_id)

    def context(secret: bytes | None) -> ProtectionContext:
        return ProtectionContext(session=client.session, round=0, shape=(n, 1), n_parties=len(ids),
                                 party_index=index, max_value=FIXED_POINT.max_value,
                                 x25519_private=keys.x25519_private_key, party_publics=tuple(publics),
                                 mask_secret=secret)

    until = time.monotonic() + timeout
    while True:
        try:
            info = client.session_info()
            break
        except AggregatorRejected as exc:
            if exc.code != "unknown_session":
                raise
        if index == 0:  # the launcher: a fresh mask secret, sealed for every party
            secrets = new_secrets("mask", 0)
            prot = PartyProtection("mask", context(secrets.mask_secret))
            client.open_session(ids, combiner="mask", meta=prot.meta,
                                params=params | sealed_params(secrets, dict(zip(ids, publics)), client.session))
            return _Codec(protection, n, prot)
        if time.monotonic() > until:
            raise TrainingError(f"session {client.session!r} was not opened by {ids[0]} within {timeout:.0f} s")
        time.sleep(0.2)
    secrets = open_secrets("mask", info.meta, info.params, keys.party_id, keys.x25519_private_key,
                           client.session, 0)
    prot = PartyProtection("mask", context(secrets.mask_secret))
    if prot.meta != info.meta or any(info.params.get(k) != v for k, v in params.items()):
        raise ConfigError(f"session {client.session!r} was opened with other settings than this party's "
                          "(another consortium, vocabulary or options)")
    return _Codec(protection, n, prot)


def run_fednmf_party(party: FedNMFParty, client: AggregatorClient, ids: Sequence[str], keys: PartyKeys,
                     publics: Sequence[bytes], *, protection: str = "none", round_timeout: float = 3600.0,
                     state_dir: Path | None = None, on_round: Callable[[FedNMFRecord], None] | None = None,
                     say: Callable[[str], None] = lambda _: None) -> list[FedNMFRecord]:
    """Alg. 1 for one client over ``spec.iterations`` rounds; the final global model is in ``party.w``.

    With ``state_dir`` the client checkpoints after every round it applied; a killed client resumes there and,
    since its update is a deterministic function of that state (seeded batches, keyed masks), resends exactly
    the bytes it sent before, which the aggregator takes as the update it already holds."""
    if list(ids).index(keys.party_id) != party.index:
        raise ConfigError(f"{keys.party_id} is client {list(ids).index(keys.party_id)} of the session, not {party.index}")
    party.n_clients = len(ids)
    records: list[FedNMFRecord] = []
    if state_dir is not None and (state_dir / CHECKPOINT).exists():
        records = load_fednmf_checkpoint(state_dir, party)
        say(f"{party.party_id}: resumed at round {party.round}")
    codec = _open(party, client, ids, keys, publics, protection, round_timeout)
    for r in range(party.round, party.spec.iterations):
        rec = FedNMFRecord(r, party.selected(r))
        t0 = time.perf_counter()
        payload = codec.encode(party.local_update(), r)
        rec.train_seconds = time.perf_counter() - t0
        rec.bytes_sent = len(payload)
        client.submit(r, payload)
        t1 = time.perf_counter()
        until = time.monotonic() + round_timeout
        while True:
            try:
                result = client.fetch_aggregate(r, max(1.0, until - time.monotonic()))
                break
            except RecoveryRequested as req:  # a masked round lost parties: cancel our masks with them
                assert codec.prot is not None
                client.post_recovery(r, codec.prot.recovery([list(ids).index(p) for p in req.dropped], r))
        rec.wait_seconds = time.perf_counter() - t1
        rec.bytes_received, rec.contributors = len(result.payload), list(result.contributors)
        total = codec.decode(result.payload, r, len(result.contributors))
        if total[-1] <= 0:
            raise TrainingError(f"round {r}: no selected client contributed (the sum of N_i is {total[-1]:g})")
        party.apply(total)
        records.append(rec)
        if state_dir is not None:
            save_fednmf_checkpoint(state_dir, party, records)
        if on_round is not None:
            on_round(rec)
    return records


CHECKPOINT = "fednmf-checkpoint.npz"


def save_fednmf_checkpoint(state_dir: Path, party: FedNMFParty, records: Sequence[FedNMFRecord]) -> None:
    """Atomically: the client's state after its last applied round, and its records."""
    state_dir.mkdir(parents=True, exist_ok=True)
    tmp = state_dir / (CHECKPOINT + ".tmp")
    with open(tmp, "wb") as fh:
        np.savez(fh, **party.state(), records=np.array(json.dumps([asdict(r) for r in records])))
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(state_dir / CHECKPOINT)


def load_fednmf_checkpoint(state_dir: Path, party: FedNMFParty) -> list[FedNMFRecord]:
    """Restore ``party``; its records so far. TrainingError if the checkpoint does not fit."""
    try:
        with np.load(state_dir / CHECKPOINT, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
        party.restore(arrays)
        return [FedNMFRecord(**row) for row in json.loads(str(arrays["records"]))]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TrainingError(f"FedNMF checkpoint in {state_dir} is unusable ({exc}); move it away to start over") \
            from None
