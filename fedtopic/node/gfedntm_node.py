"""One gFedNTM node as its own process (``fedtopic node run`` with algorithm gfedntm-prodlda), through the
aggregator: its documents, Sync-Opt to the end, then ``state/<party>/model`` with the federated model (every
node holds the same), θ of its own documents (theta.npy, which stays with it) and a summary. A killed node
resumes from ``state/<party>/gfedntm-checkpoint.npz`` (``gfedntm_loop``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.model import TopicModel
from fedtopic.consortium.config import ConsortiumConfig
from fedtopic.eval.coherence import npmi_coherence, top_word_ids
from fedtopic.eval.diversity import topic_diversity
from fedtopic.eval.topics import top_words
from fedtopic.node.csfed_node import default_session
from fedtopic.node.gfedntm_loop import EpochRecord, run_gfedntm_node
from fedtopic.node.party_setup import prepare_party
from fedtopic.runs.folder import (
    TopicModelFile,
    save_topic_model,
    write_summary,
    write_topics,
)


def run_gfedntm_process(cfg: ConsortiumConfig, config_path: Path, party_id: str, *, key_file: Path | None = None,
                        corpus: Path | None = None, vocab: Path | None = None, url: str | None = None,
                        state_dir: Path | None = None, session: str | None = None, round_timeout: float = 3600.0,
                        patience: float = 600.0, say: Callable[[str], None] = print,
                        on_epoch: Callable[[EpochRecord], None] | None = None) -> dict[str, Any]:
    """Train node ``party_id`` to the end; returns (and writes to ``state_dir/model``) its summary."""
    from fedtopic.neural.ntm_model import network_arrays
    from fedtopic.neural.prodlda import topics

    prepared = prepare_party(cfg, config_path, party_id, key_file=key_file, corpus=corpus, vocab=vocab,
                             state_dir=state_dir)
    node, data = prepared.party, prepared.data
    spec = cfg.algorithm.spec()
    protection = cfg.aggregator.protection
    sid = session or f"{default_session(cfg)[:36]}-gfedntm"
    say(f"node {party_id}: {data.train.n_docs:,} documents, K = {spec.topics}, protection {protection}; "
        f"aggregator {url or cfg.aggregator.url}, sessions {sid}-*")
    params = {"algorithm": cfg.algorithm.name, "topics": spec.topics, "seed": spec.seed,
              "vocabulary": data.train.n_words, **{f"opt_{k}": v for k, v in spec.options.items()}}
    records = run_gfedntm_node(node, url or cfg.aggregator.url, prepared.keys, cfg.party_ids,
                               [p.x25519_public_bytes for p in cfg.parties], session=sid, protection=protection,
                               params=params, patience=patience, round_timeout=round_timeout,
                               state_dir=prepared.state_dir, on_epoch=on_epoch, say=say)
    out = prepared.state_dir / "model"
    out.mkdir(parents=True, exist_ok=True)
    ntm = node.model()
    phi = topics(ntm.flat, ntm.shapes)
    model = TopicModel(phi, 0.0, 0.0, data.train.vocab, dict(data.tokenizer), algorithm=cfg.algorithm.name,
                       network=network_arrays(ntm))
    np.save(out / "theta.npy", ntm.theta(node.counts, node.ctx))
    write_topics(out, top_words(phi, data.train.vocab, 10))
    save_topic_model(out, TopicModelFile(phi=phi, alpha=0.0, beta=0.0, vocab=data.train.vocab,
                                         tokenizer=data.tokenizer, algorithm=cfg.algorithm.name,
                                         network=model.network))
    top = min(10, phi.shape[1])
    summary = {"algorithm": cfg.algorithm.name, "dataset": cfg.data.dataset or "own corpus",
               "parties": len(cfg.parties), "party": party_id, "topics": spec.topics, "seed": spec.seed,
               "iterations": spec.iterations,
               "epochs": len(records), "steps": node.step, "protection": protection, "perplexity": float("nan"),
               "npmi": float(npmi_coherence(top_word_ids(phi, top), data.train, top).mean()),
               "topic_diversity": topic_diversity(phi, min(25, phi.shape[1])), "wall_seconds": 0.0,
               "bytes_sent": int(sum(r.bytes_sent for r in records)),
               "relative_change": [r.relative_change for r in records]}
    write_summary(out, summary)
    return summary | {"run": str(out)}
