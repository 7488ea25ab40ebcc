"""CSFed-LDA's run folders: the consortium's Φ_Σ (``simulate``) or one party's view of it (``node run``), with the
round details the history holds (contributors, aggregate size, recoveries, rounds closed without the party)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.federated import ConsortiumRun, PartyRun, history_totals
from fedtopic.algorithms.lda.party import privacy_summary
from fedtopic.algorithms.lda.run_folder import write_party_model
from fedtopic.eval.perplexity import completion_perplexity
from fedtopic.eval.report import evaluate_model
from fedtopic.eval.topic_table import topic_table
from fedtopic.models.prior import alpha_json
from fedtopic.runs.folder import (
    TopicModelFile,
    save_topic_model,
    stable_summary,
    write_summary,
    write_topics,
)

GENESIS = 1
"""History rounds before CSFed's first training round: the genesis counts (``runs.round_count``)."""


def round_details(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What a CSFed summary says of a party's rounds, from its history rows."""
    return {
        "rounds_detail": [{"round": r["round"], "contributors": r["contributors"],
                           "aggregate_tokens": r["extra"].get("aggregate_tokens"), "recovery_sent": r["recoveries"] > 0,
                           "accepted": r["extra"].get("accepted", True)} for r in rows],
        "recoveries_sent": int(sum(r["recoveries"] for r in rows)),
        "rounds_without_this_party": [r["round"] for r in rows if not r["extra"].get("accepted", True)],
    }


def write_csfed_simulation(out: Path, run: ConsortiumRun, *, fold_in_iterations: int = 50) -> dict[str, Any]:
    """Evaluate the consortium's Φ_Σ (every party holds the same), write ``out``, return the summary."""
    from fedtopic.algorithms.registry import get_algorithm

    data, spec = run.data, run.spec
    parties = [p.party for p in run.parties]
    first = parties[0]
    hyper = first.hyper
    phi = first.phi()
    same = all(np.array_equal(p.phi(), phi) for p in parties[1:])
    metrics = evaluate_model(phi, first.alpha, data.train, data.test, fold_in_iterations=fold_in_iterations,
                             seed=hyper.seed)
    write_topics(out, topic_table(phi, data.train.vocab, data.train, prevalence=first.topic_distribution()[1]))
    save_topic_model(out, TopicModelFile(phi=phi, alpha=first.alpha, beta=first.beta,
                                         vocab=data.train.vocab, tokenizer=data.tokenizer, algorithm="csfed-lda"))
    totals = [history_totals(rows, GENESIS) for rows in run.histories]
    summary: dict[str, Any] = stable_summary(
        algorithm="csfed-lda", dataset=data.name, parties=len(parties), topics=hyper.n_topics,
        iterations=hyper.iterations, seed=hyper.seed, metrics=metrics, wall_seconds=run.wall_seconds,
        bytes_sent=int(sum(t["bytes_sent"] for t in totals))) | {
        "perplexity_eq16": metrics["perplexity_eq16"],
        "alpha": alpha_json(first.alpha), "beta": first.beta,
        "protection": run.protection, "steps": first.steps, "rounds": max(len(run.histories[0]) - GENESIS, 0), "setup_exchanges": GENESIS,
        "bytes_received": int(sum(t["bytes_received"] for t in totals)), "parties_hold_same_phi": same,
        "recoveries_sent": int(sum(r["recoveries"] for rows in run.histories for r in rows)),
        "seconds_per_party": {k: float(np.mean([t[k] for t in totals]))
                              for k in ("compute_seconds", "exchange_seconds", "wait_seconds")},
    } | privacy_summary(parties)
    if run.harness.get("compare_centralized"):
        t0 = time.perf_counter()
        central_algo = get_algorithm("centralized-lda")
        shared = {o.name for o in central_algo.options}
        central_spec = central_algo.spec(spec.topics, spec.iterations, spec.seed,
                                         {k: v for k, v in spec.options.items() if k in shared and v is not None})
        central = central_algo.fit(data.parties, central_spec)[0].model
        ref = completion_perplexity(central.phi, data.test, central.alpha, iterations=fold_in_iterations,
                                    seed=hyper.seed)
        summary |= {"centralized_perplexity": ref, "centralized_seconds": time.perf_counter() - t0,
                    "perplexity_gap_vs_centralized": metrics["perplexity"] / ref - 1.0}
    write_summary(out, summary)
    return summary


def write_csfed_party(out: Path, run: PartyRun, *, fold_in_iterations: int = 50) -> dict[str, Any]:
    """Evaluate the party's Φ_Σ and θ_p and write the run folder ``out``; returns the summary."""
    return write_party_model(out, run.party.party, run.test, dict(run.tokenizer), {
        "algorithm": "csfed-lda", "dataset": run.dataset, "parties": run.n_parties, "protection": run.protection,
        **history_totals(run.history, GENESIS), "setup_exchanges": GENESIS, **round_details(run.history),
    }, fold_in_iterations=fold_in_iterations)
