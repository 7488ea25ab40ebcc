"""One FedNMF(+MI) client as its own process (``fedtopic node run`` with algorithm fednmf), through the aggregator.

The client checks its key file, loads its documents, runs Alg. 1's rounds (``fednmf_loop``) with the
consortium's protection (none or mask) and writes ``state/<party>/model``: the global model (model.npz with W,
topics.json), its own topic weights H_i (theta.npy, which never leaves it) and a summary with the paper's
scores on its own documents. A killed client resumes from ``state/<party>/fednmf-checkpoint.npz``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.nmf_model import nmf_topic_model
from fedtopic.consortium.config import ConsortiumConfig
from fedtopic.eval.nmf_report import evaluate_nmf
from fedtopic.eval.topics import top_words
from fedtopic.network.client import AggregatorClient
from fedtopic.node.csfed_node import default_session
from fedtopic.node.fednmf_loop import FedNMFRecord, run_fednmf_party
from fedtopic.node.party_setup import prepare_party
from fedtopic.runs.folder import (
    TopicModelFile,
    save_topic_model,
    write_summary,
    write_topics,
)


def run_fednmf_node(cfg: ConsortiumConfig, config_path: Path, party_id: str, *, key_file: Path | None = None,
                    corpus: Path | None = None, vocab: Path | None = None, url: str | None = None,
                    state_dir: Path | None = None, session: str | None = None, round_timeout: float = 3600.0,
                    patience: float = 600.0, say: Callable[[str], None] = print,
                    on_round: Callable[[FedNMFRecord], None] | None = None) -> dict[str, Any]:
    """Train client ``party_id`` to the end; returns (and writes to ``state_dir/model``) its summary."""
    prepared = prepare_party(cfg, config_path, party_id, key_file=key_file, corpus=corpus, vocab=vocab,
                             state_dir=state_dir)
    party, data = prepared.party, prepared.data
    spec = cfg.algorithm.spec()
    protection = cfg.aggregator.protection
    sid = session or f"{default_session(cfg)[:40]}-fednmf"
    say(f"client {party_id}: {data.train.n_docs:,} documents, k = {spec.topics}, rule "
        f"{spec.options['server_rule']}, protection {protection}; aggregator {url or cfg.aggregator.url}, session {sid}")
    publics = [p.x25519_public_bytes for p in cfg.parties]
    with AggregatorClient(url or cfg.aggregator.url, prepared.keys, sid, patience=patience) as client:
        records = run_fednmf_party(party, client, cfg.party_ids, prepared.keys, publics, protection=protection,
                                   round_timeout=round_timeout, state_dir=prepared.state_dir, on_round=on_round,
                                   say=say)
    out = prepared.state_dir / "model"
    out.mkdir(parents=True, exist_ok=True)
    model = nmf_topic_model(party.w, data.train.vocab, "fednmf", data.tokenizer)
    np.save(out / "theta.npy", party.topic_weights())
    write_topics(out, top_words(model.phi, data.train.vocab, 10))
    save_topic_model(out, TopicModelFile(phi=model.phi, alpha=0.0, beta=0.0, vocab=data.train.vocab,
                                         tokenizer=data.tokenizer, algorithm="fednmf", factors=model.factors))
    scores = evaluate_nmf(model.phi, party.topic_weights(), data.train, seed=spec.seed)
    summary = {"algorithm": "fednmf", "dataset": cfg.data.dataset or "own corpus", "parties": len(cfg.parties),
               "party": party_id, "topics": spec.topics, "iterations": spec.iterations, "seed": spec.seed,
               "rounds": len(records), "rounds_selected": sum(r.selected for r in records),
               "protection": protection, "perplexity": float("nan"), "wall_seconds": 0.0,
               "bytes_sent": int(sum(r.bytes_sent for r in records)),
               "bytes_received": int(sum(r.bytes_received for r in records)), **scores,
               "scores_on": "this client's own documents (H_i); WE coherence and NPMI of the global topics"}
    write_summary(out, summary)
    return summary | {"run": str(out)}
