"""One iFTM party as its own process (``fedtopic node run`` with iftm-lda or iftm-sentencelda), through the aggregator.

The party checks its key file, loads its documents, runs Alg. 5's rounds over the aggregator's ``topic-merge``
session and writes ``state/<party>/model``: the global model M* (model.npz, topics.json), its own θ (theta.npy,
which never leaves it) and a summary with the held-out log-likelihood of M* and of its own local model. A
killed node resumes from ``state/<party>/iftm-checkpoint.npz`` at its round and resends exactly the update it
had computed, so no round gets two different updates.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.iftm_options import party_topic_counts
from fedtopic.consortium.config import ConsortiumConfig
from fedtopic.eval.perplexity import completion_perplexity
from fedtopic.eval.topics import top_words
from fedtopic.network.client import AggregatorClient
from fedtopic.node.csfed_node import default_session
from fedtopic.node.iftm_loop import IFTMRecord, run_iftm_party
from fedtopic.node.party_setup import prepare_party
from fedtopic.runs.folder import (
    TopicModelFile,
    save_topic_model,
    write_summary,
    write_topics,
)


def run_iftm_node(cfg: ConsortiumConfig, config_path: Path, party_id: str, *, key_file: Path | None = None,
                  corpus: Path | None = None, vocab: Path | None = None, url: str | None = None,
                  state_dir: Path | None = None, session: str | None = None, round_timeout: float = 3600.0,
                  patience: float = 600.0, say: Callable[[str], None] = print,
                  on_round: Callable[[IFTMRecord], None] | None = None) -> dict[str, Any]:
    """Train party ``party_id`` to the end; returns (and writes to ``state_dir/model``) its summary."""
    prepared = prepare_party(cfg, config_path, party_id, key_file=key_file, corpus=corpus, vocab=vocab,
                             state_dir=state_dir)
    party, data = prepared.party, prepared.data
    spec = cfg.algorithm.spec()
    ks = party_topic_counts(spec.options, spec.topics, len(cfg.parties))
    sid = session or f"{default_session(cfg)[:40]}-iftm"
    say(f"party {party_id}: {data.train.n_docs:,} documents, K = {party.topics}; aggregator "
        f"{url or cfg.aggregator.url}, session {sid}")
    with AggregatorClient(url or cfg.aggregator.url, prepared.keys, sid, patience=patience) as client:
        records = run_iftm_party(party, client, cfg.party_ids, max_topics=max(ks), round_timeout=round_timeout,
                                 state_dir=prepared.state_dir, on_round=on_round, say=say)
    assert party.global_model is not None
    out = prepared.state_dir / "model"
    out.mkdir(parents=True, exist_ok=True)
    glob = party.global_model.topics

    def heldout(phi: np.ndarray) -> float:
        return -math.log(completion_perplexity(phi, data.test, 50.0 / phi.shape[0], iterations=50,
                                               seed=spec.seed))

    np.save(out / "theta.npy", party.model.theta())
    write_topics(out, top_words(glob, data.train.vocab, 10))
    save_topic_model(out, TopicModelFile(phi=glob, alpha=50.0 / glob.shape[0], beta=float(spec.options["beta"]),  # type: ignore[arg-type]
                                         vocab=data.train.vocab, tokenizer=data.tokenizer, algorithm=party.algorithm))
    summary = {"algorithm": party.algorithm, "dataset": cfg.data.dataset or "own corpus", "parties": len(cfg.parties),
               "party": party_id, "topics": party.topics, "global_topics": int(glob.shape[0]),
               "iterations": spec.iterations, "seed": spec.seed, "sweeps": party.sweeps, "rounds": len(records),
               "perplexity": float(math.exp(-heldout(glob))), "global_heldout_loglik_per_token": heldout(glob),
               "own_model_heldout_loglik_per_token": heldout(party.model.phi()),
               "bytes_sent": int(sum(r.bytes_sent for r in records)),
               "bytes_received": int(sum(r.bytes_received for r in records)),
               "npmi": float("nan"), "topic_diversity": float("nan"), "wall_seconds": 0.0,
               "epsilon": float(spec.options["epsilon"]), "tau": float(spec.options["tau"])}  # type: ignore[arg-type]
    write_summary(out, summary)
    return summary | {"run": str(out)}
