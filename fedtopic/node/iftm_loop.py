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

from fedtopic.algorithms.iftm_master import GlobalModel
from fedtopic.algorithms.iftm_options import global_rounds
from fedtopic.algorithms.iftm_party import IFTMParty
from fedtopic.network.client import AggregatorClient
from fedtopic.network.topic_merge import decode_global, encode_update


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
                   round_timeout: float = 3600.0,
                   on_round: Callable[[IFTMRecord], None] | None = None) -> list[IFTMRecord]:
    """Alg. 5 for one party; returns its per-round records (the last global model is in ``party.global_model``)."""
    spec = party.spec
    meta = session_meta(party.corpus.n_words, party.xi, party.top, max_topics)
    client.open_session(parties, combiner="topic-merge", meta=meta,
                        params={"algorithm": "iftm-lda", "iterations": spec.iterations, "seed": spec.seed})
    rounds = global_rounds(spec)
    records = []
    for r in range(rounds):
        payload = encode_update(party.local_round(spec.iterations), party.amount)
        client.submit(r, payload)
        result = client.fetch_aggregate(r, round_timeout)
        model: GlobalModel = decode_global(result.payload, party.corpus.n_words)
        party.adopt(model, last=r == rounds - 1)
        rec = IFTMRecord(r, len(payload), len(result.payload), model.topics.shape[0], list(result.contributors))
        records.append(rec)
        if on_round is not None:
            on_round(rec)
    return records
