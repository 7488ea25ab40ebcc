"""One federated LDA party's run folder (``node run`` of csfed-lda and dafed-lda): Φ_Σ, θ_p and the scores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fedtopic.algorithms.lda.party import LDAParty, privacy_summary
from fedtopic.corpus.types import Corpus
from fedtopic.eval.report import evaluate_model
from fedtopic.eval.topic_table import topic_table
from fedtopic.runs.folder import (
    TopicModelFile,
    save_theta,
    save_topic_model,
    write_summary,
    write_topics,
)


def write_party_model(out: Path, party: LDAParty, test: Corpus, tokenizer: dict[str, Any], summary: dict[str, Any],
                      *, fold_in_iterations: int = 50) -> dict[str, Any]:
    """Evaluate the party's Φ_Σ and θ_p, write the run folder ``out`` (θ_p as theta.npy); return the summary.

    ``summary`` carries what only the caller knows (algorithm, dataset, parties,
    wall_seconds, bytes_sent and the algorithm's own keys); the metrics and the
    hyper-parameters are added here.
    """
    out.mkdir(parents=True, exist_ok=True)
    hyper = party.hyper
    phi, theta = party.phi(), party.theta()
    metrics = evaluate_model(phi, party.alpha, party.corpus, test, theta_train=theta,
                             fold_in_iterations=fold_in_iterations, seed=hyper.seed)
    save_theta(out, theta, party.corpus.doc_names, test.doc_names)
    write_topics(out, topic_table(phi, party.corpus.vocab, party.corpus, prevalence=party.topic_distribution()[1]))
    save_topic_model(out, TopicModelFile(phi=phi, alpha=party.alpha, beta=party.beta,
                                         vocab=party.corpus.vocab, tokenizer=tokenizer,
                                         algorithm=str(summary.get("algorithm", "lda"))))
    full = {"topics": hyper.n_topics, "iterations": hyper.iterations, "seed": hyper.seed, "party": party.party_id,
            "sweeps": party.sweeps, "steps": party.steps} | summary | metrics
    report = party.privacy()
    if report is not None:
        full["privacy"] = privacy_summary([party])["privacy"][party.party_id]
    write_summary(out, full)
    return full | {"run": str(out)}
