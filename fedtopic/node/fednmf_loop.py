"""One FedNMF(+MI) client's protocol over the aggregator (paper Alg. 1): local epochs up, the sum down.

The aggregator only sums u_i = [N_i·(x_i − x), N_i] in a dense session (``dense_session``: in the clear under
protection ``none``, masked fixed point under ``mask``); every party then applies the server rule to the same
sum (``FedNMFParty.apply``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fedtopic.algorithms.fednmf_party import FedNMFParty
from fedtopic.crypto.keys import PartyKeys
from fedtopic.errors import ConfigError, TrainingError
from fedtopic.network.client import AggregatorClient
from fedtopic.node.dense_session import PROTECTIONS, DenseSession, open_dense_session
from fedtopic.node.state_file import (
    read_arrays,
    records_array,
    records_from,
    write_arrays,
)


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


def _open(party: FedNMFParty, client: AggregatorClient, ids: Sequence[str], keys: PartyKeys,
          publics: Sequence[bytes], protection: str, timeout: float) -> DenseSession:
    """Open or join the training session (its params name everything every client must agree on)."""
    spec = party.spec
    params = {"algorithm": "fednmf", "topics": spec.topics, "iterations": spec.iterations, "seed": spec.seed,
              "vocabulary": party.corpus.n_words, **{f"opt_{k}": v for k, v in spec.options.items() if v is not None}}
    if protection not in PROTECTIONS:
        raise ConfigError(f"fednmf takes protection none or mask, got {protection!r}")
    return open_dense_session(client, ids, keys, publics, protection=protection, n=party.size + 1, params=params,
                              timeout=timeout)


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
        result = codec.fetch(r, round_timeout)
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
    write_arrays(state_dir / CHECKPOINT, party.state() | {"records": records_array(records)})


def load_fednmf_checkpoint(state_dir: Path, party: FedNMFParty) -> list[FedNMFRecord]:
    """Restore ``party``; its records so far. TrainingError if the checkpoint does not fit."""
    try:
        arrays = read_arrays(state_dir / CHECKPOINT)
        party.restore(arrays)
        return records_from(arrays["records"], FedNMFRecord)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TrainingError(f"FedNMF checkpoint in {state_dir} is unusable ({exc}); move it away to start over") \
            from None
