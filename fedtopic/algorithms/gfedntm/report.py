"""gFedNTM's run folders: the federated model scored like the centralised one (``simulate``), or one node's
view of it (``node run``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.base import Fitted
from fedtopic.algorithms.federated import ConsortiumRun, PartyRun, history_totals
from fedtopic.algorithms.model import TopicModel
from fedtopic.errors import TrainingError
from fedtopic.eval.coherence import npmi_coherence, top_word_ids
from fedtopic.eval.diversity import topic_diversity
from fedtopic.eval.topic_table import topic_table
from fedtopic.runs.folder import (
    TopicModelFile,
    save_theta,
    save_topic_model,
    write_summary,
    write_topics,
)


def _model(node: Any, vocab: Any, tokenizer: Any, algorithm: str) -> TopicModel:
    from fedtopic.neural.ntm_model import network_arrays
    from fedtopic.neural.prodlda import topics

    ntm = node.model()
    return TopicModel(topics(ntm.flat, ntm.shapes), 0.0, 0.0, vocab, dict(tokenizer), algorithm=algorithm,
                      network=network_arrays(ntm))


def write_gfedntm_simulation(out: Path, run: ConsortiumRun, algorithm: str) -> dict[str, Any]:
    """Evaluate the nodes' common model; write ``out``; the summary."""
    from fedtopic.algorithms.ntm.run_folder import write_ntm_run

    nodes = [p.node for p in run.parties]
    if any(not np.array_equal(node.flat, nodes[0].flat) for node in nodes[1:]):
        raise TrainingError("nodes ended with different weights")
    data = run.data
    model = _model(nodes[0], data.train.vocab, data.tokenizer, algorithm)
    ntm = nodes[0].model()
    theta_train = np.vstack([ntm.theta(node.counts, node.ctx) for node in nodes])
    first = run.histories[0]
    steps = max(nodes[0].step, 1)
    extra = {"protection": run.protection, "epochs": len(first), "rounds": len(first), "steps": nodes[0].step,
             "train_wall_seconds": run.wall_seconds,
             "bytes_sent": int(sum(r["bytes_up"] for rows in run.histories for r in rows)),
             "bytes_per_node_step": int(sum(r["bytes_up"] for r in first) / steps),
             "seconds_per_step": run.wall_seconds / steps,
             "relative_change": [r["extra"]["relative_change"] for r in first],
             nodes[0].quality_name: [r["quality"] for r in first], "best_epoch": nodes[0].best_epoch,
             "epoch_seconds": [r["compute_s"] + r["exchange_s"] + r["wait_s"] for r in first],
             "epoch_train_seconds": [r["extra"].get("train_seconds", float("nan")) for r in first]}  # steps only
    spent = {p.party_id: p.privacy() for p in run.parties}
    if any(v is not None for v in spent.values()):
        extra["privacy"] = spent
    return write_ntm_run(out, data, algorithm, run.spec, Fitted(model, theta_train), wall_seconds=run.wall_seconds,
                         extra=extra)


def write_gfedntm_party(out: Path, run: PartyRun, algorithm: str) -> dict[str, Any]:
    """The federated model, θ of the node's documents and NPMI / diversity on them; write ``out``."""
    node, spec = run.party.node, run.spec
    out.mkdir(parents=True, exist_ok=True)
    model = _model(node, run.train.vocab, run.tokenizer, algorithm)
    phi = model.phi
    theta = node.model().theta(node.counts, node.ctx)
    save_theta(out, theta, run.train.doc_names, run.test.doc_names)
    write_topics(out, topic_table(phi, run.train.vocab, run.train, theta=theta))
    save_topic_model(out, TopicModelFile(phi=phi, alpha=0.0, beta=0.0, vocab=run.train.vocab,
                                         tokenizer=dict(run.tokenizer), algorithm=algorithm, network=model.network))
    top = min(10, phi.shape[1])
    totals = history_totals(run.history)
    summary = {"algorithm": algorithm, "dataset": run.dataset, "parties": run.n_parties, "party": run.party.party_id,
               "topics": spec.topics, "seed": spec.seed, "iterations": spec.iterations, "epochs": node.epoch,
               "steps": node.step, "protection": run.protection, "perplexity": float("nan"),
               "npmi": float(npmi_coherence(top_word_ids(phi, top), run.train, top).mean()),
               "topic_diversity": topic_diversity(phi, min(25, phi.shape[1])), **totals,
               "relative_change": [h["relative_change"] for h in node.history],
               node.quality_name: [h.get(node.quality_name) for h in node.history],
               "best_epoch": node.best_epoch}
    spent = run.party.privacy()
    if spent is not None:
        summary["privacy"] = {run.party.party_id: spent}
    write_summary(out, summary)
    return summary | {"run": str(out)}
