"""One iFTM party's protocol over the aggregator (Alg. 5): local rounds, the normalised model up, M* down.

The session (combiner ``topic-merge``) is opened by whichever party comes first
with the spec every party derives alike, so the others join it. Each round the
party trains ``local_iterations`` sweeps, submits its M̂_p and n_p, waits for
the round's aggregate M*, and (unless it was the last) restarts from the model
Alg. 4 composes for it. What the aggregator learns: every M̂_p and n_p.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fedtopic.algorithms.iftm_master import GlobalModel
from fedtopic.algorithms.iftm_options import global_rounds
from fedtopic.algorithms.iftm_party import IFTMParty
from fedtopic.errors import ModelError, TrainingError
from fedtopic.network.client import AggregatorClient
from fedtopic.network.topic_merge import decode_global, encode_update
from fedtopic.node.state_file import (
    read_arrays,
    records_array,
    records_from,
    write_arrays,
)


@dataclass
class IFTMRecord:
    """One round as the party saw it."""

    round: int
    bytes_sent: int = 0
    bytes_received: int = 0
    global_topics: int = 0
    contributors: list[str] = field(default_factory=list)


def session_meta(vocabulary: int, xi: float, top: int, max_topics: int) -> dict:
    """The ``topic-merge`` session meta every party derives alike."""
    return {"vocabulary": vocabulary, "xi": xi, "top_words": top, "max_topics": max_topics}


def run_iftm_party(party: IFTMParty, client: AggregatorClient, parties: Sequence[str], *, max_topics: int,
                   round_timeout: float = 3600.0, state_dir: Path | None = None,
                   on_round: Callable[[IFTMRecord], None] | None = None,
                   say: Callable[[str], None] = lambda _: None) -> list[IFTMRecord]:
    """Alg. 5 for one party; returns its per-round records (the last global model is in ``party.global_model``).

    With ``state_dir`` the party checkpoints before every submission (its state and the update it is about to
    send) and after every adoption, so a killed party resumes at its round and resends the same bytes (the
    aggregator takes a repeated identical update as already accepted)."""
    spec = party.spec
    meta = session_meta(party.corpus.n_words, party.xi, party.top, max_topics)
    client.open_session(parties, combiner="topic-merge", meta=meta,
                        params={"algorithm": party.algorithm, "iterations": spec.iterations, "seed": spec.seed})
    rounds = global_rounds(spec)
    records: list[IFTMRecord] = []
    start, pending = 0, None
    if state_dir is not None and (state_dir / CHECKPOINT).exists():
        start, pending, records = load_iftm_checkpoint(state_dir, party)
        say(f"{party.party_id}: resumed at round {start} ({party.sweeps} sweeps)")
    for r in range(start, rounds):
        payload = pending if pending is not None else encode_update(party.local_round(spec.iterations), party.amount)
        pending = None
        if state_dir is not None:
            save_iftm_checkpoint(state_dir, party, r, payload, records)
        client.submit(r, payload)
        result = client.fetch_aggregate(r, round_timeout)
        model: GlobalModel = decode_global(result.payload, party.corpus.n_words)
        party.adopt(model, last=r == rounds - 1)
        rec = IFTMRecord(r, len(payload), len(result.payload), model.topics.shape[0], list(result.contributors))
        records.append(rec)
        if state_dir is not None:
            save_iftm_checkpoint(state_dir, party, r + 1, None, records)
        if on_round is not None:
            on_round(rec)
    return records


CHECKPOINT = "iftm-checkpoint.npz"


def save_iftm_checkpoint(state_dir: Path, party: IFTMParty, round: int, pending: bytes | None,
                         records: Sequence[IFTMRecord]) -> None:
    """Atomically: the model state, the round to do next, the update already computed for it (if any)."""
    arrays = party.model.state() | {
        "round": np.array(round), "sweeps": np.array(party.sweeps),
        "pending": np.frombuffer(pending or b"", dtype=np.uint8), "has_pending": np.array(pending is not None),
        "records": records_array(records)}
    if party.global_model is not None:
        arrays |= {"global_topics": party.global_model.topics, "global_weights": party.global_model.weights}
    write_arrays(state_dir / CHECKPOINT, arrays)


def load_iftm_checkpoint(state_dir: Path, party: IFTMParty) -> tuple[int, bytes | None, list[IFTMRecord]]:
    """(round to do next, the update to resend or None, the records so far); TrainingError if unreadable."""
    try:
        arrays = read_arrays(state_dir / CHECKPOINT)
        party.model.restore(arrays)
    except (OSError, ValueError, KeyError, ModelError) as exc:
        raise TrainingError(f"iFTM checkpoint in {state_dir} is unusable ({exc}); move it away to start over") \
            from None
    party.sweeps = int(arrays["sweeps"])
    if "global_topics" in arrays:
        party.global_model = GlobalModel(arrays["global_topics"], arrays["global_weights"])
    pending = arrays["pending"].tobytes() if bool(arrays["has_pending"]) else None
    records = records_from(arrays["records"], IFTMRecord)
    return int(arrays["round"]), pending, records
