"""iFTM's run folders: the global model M* and every party alone (``simulate``), or one party's view (``node run``).

"Each party alone" is the same private MH with the same settings on that party's documents and no master: the
paper's Fig. 5 baseline. Held-out figures are document-completion perplexity and its log-likelihood per scored
token (−log perplexity), with α = 50/K of the model evaluated unless ``alpha`` is given (simulate) or always
(node: a party's summary, as before the runtime move).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.base import TrainSpec
from fedtopic.algorithms.federated import ConsortiumRun, PartyRun, history_totals
from fedtopic.algorithms.iftm.options import party_topic_counts, tau_of
from fedtopic.corpus.types import Corpus
from fedtopic.eval.perplexity import completion_perplexity
from fedtopic.eval.topic_table import topic_table
from fedtopic.models.foldin import fold_in
from fedtopic.runs.folder import (
    TopicModelFile,
    save_theta,
    save_topic_model,
    write_summary,
    write_topics,
)


def heldout(phi: np.ndarray, test: Corpus, spec: TrainSpec, *, alpha: float | None = None) -> dict[str, float]:
    """Document-completion perplexity of ``phi`` float64[K,V] on ``test``, its log-likelihood per token and K."""
    a = 50.0 / phi.shape[0] if alpha is None else alpha
    ppl = completion_perplexity(phi, test, a, iterations=50, seed=spec.seed)
    return {"perplexity": ppl, "heldout_loglik_per_token": -math.log(ppl), "topics": int(phi.shape[0])}


def write_iftm_simulation(out: Path, run: ConsortiumRun, algorithm: Any) -> dict[str, Any]:
    """M* and each party alone evaluated on the held-out documents; the run folder ``out``."""
    data, spec, parties = run.data, run.spec, run.parties
    ks = party_topic_counts(spec.options, spec.topics, len(parties))
    global_model = parties[0].global_model
    if global_model is None:
        raise ValueError("the parties hold no global model")
    alpha = spec.options.get("alpha")
    a = None if alpha is None else float(alpha)  # type: ignore[arg-type]
    summary_global = heldout(global_model.topics, data.test, spec, alpha=a)
    alone = []
    for i, corpus in enumerate(data.parties):
        solo = algorithm.party(f"p{i + 1}-alone", i, corpus, spec)
        while solo.sweeps < spec.iterations:
            solo.local_round(spec.iterations)
        alone.append(heldout(solo.model.phi(), data.test, spec, alpha=a))
    # each topic's share of the training tokens under M* (fold-in), not the data amounts M* weighs topics by
    # (equal parties would show every topic at 1/K*)
    alpha_star = 50.0 / global_model.topics.shape[0]  # M*'s α, as its model file records it
    theta = fold_in(global_model.topics, data.train.words, data.train.doc_ptr, alpha_star, seed=spec.seed)
    write_topics(out, topic_table(global_model.topics, data.train.vocab, data.train, theta=theta))
    save_topic_model(out, TopicModelFile(phi=global_model.topics, alpha=alpha_star,
                                         beta=float(spec.options["beta"]), vocab=data.train.vocab,  # type: ignore[arg-type]
                                         tokenizer=data.tokenizer, algorithm=algorithm.name))
    first = run.histories[0]
    summary: dict[str, Any] = {
        "algorithm": algorithm.name, "dataset": data.name, "parties": len(parties), "topics": spec.topics,
        "iterations": spec.iterations, "seed": spec.seed, "perplexity": summary_global["perplexity"],
        "vocabulary": data.train.n_words, "npmi": float("nan"), "topic_diversity": float("nan"),
        "wall_seconds": run.wall_seconds,
        "bytes_sent": int(sum(r["bytes_up"] for rows in run.histories for r in rows)),
        "global_model": summary_global, "party_topics": ks,
        "each_party_alone": {p.party_id: s for p, s in zip(parties, alone)},
        "rounds": len(first), "global_topics_per_round": [r["extra"]["global_topics"] for r in first],
        "epsilon": float(spec.options["epsilon"]), "tau": tau_of(spec.options, data.train.n_words),  # type: ignore[arg-type]
        "xi": float(spec.options["xi"]), "data_amounts": [p.amount for p in parties],  # type: ignore[arg-type]
    }
    write_summary(out, summary)
    return summary


def write_iftm_party(out: Path, run: PartyRun, algorithm: str) -> dict[str, Any]:
    """M* (model.npz, topics.json), the party's own θ (theta.npy, which never leaves it) and the held-out
    log-likelihood of M* and of its own local model on its held-out documents."""
    party, spec = run.party, run.spec
    if party.global_model is None:
        raise ValueError("the party holds no global model")
    out.mkdir(parents=True, exist_ok=True)
    glob = party.global_model.topics
    save_theta(out, party.model.theta(), run.train.doc_names, run.test.doc_names)
    write_topics(out, topic_table(glob, run.train.vocab, run.train, prevalence=party.topic_distribution()[1]))
    save_topic_model(out, TopicModelFile(phi=glob, alpha=50.0 / glob.shape[0], beta=float(spec.options["beta"]),  # type: ignore[arg-type]
                                         vocab=run.train.vocab, tokenizer=dict(run.tokenizer), algorithm=algorithm))
    of_global, of_own = heldout(glob, run.test, spec), heldout(party.model.phi(), run.test, spec)
    summary = {"algorithm": algorithm, "dataset": run.dataset, "parties": run.n_parties, "party": party.party_id,
               "topics": party.topics, "global_topics": int(glob.shape[0]), "iterations": spec.iterations,
               "seed": spec.seed, "sweeps": party.sweeps, **history_totals(run.history),
               "perplexity": of_global["perplexity"], "vocabulary": run.train.n_words,
               "global_heldout_loglik_per_token": of_global["heldout_loglik_per_token"],
               "own_model_heldout_loglik_per_token": of_own["heldout_loglik_per_token"],
               "npmi": float("nan"), "topic_diversity": float("nan"),
               "epsilon": float(spec.options["epsilon"]), "tau": tau_of(spec.options, run.train.n_words),  # type: ignore[arg-type]
               "xi": float(spec.options["xi"])}  # type: ignore[arg-type]
    write_summary(out, summary)
    return summary | {"run": str(out)}
