"""A DAFed-LDA run end to end: simulate the parties, evaluate every party's Φ_Σ, write the run folder."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.baselines import LDAHyper
from fedtopic.corpus.training_data import TrainingData
from fedtopic.eval.plots import plot_curves, plot_histogram
from fedtopic.eval.report import evaluate_model
from fedtopic.eval.topics import top_words
from fedtopic.runs.folder import (
    TopicModelFile,
    save_topic_model,
    write_summary,
    write_topics,
)
from fedtopic.simulation.threads import SimulationResult


def write_dafed_run(
    data: TrainingData,
    hyper: LDAHyper,
    sim: SimulationResult,
    out: Path,
    *,
    steps: int = 1,
    max_delay: float = 0.0,
    fold_in_iterations: int = 50,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Evaluate every party's Φ_Σ of a finished DAFed-LDA run and write ``out``; returns summary.json's content."""
    alpha = hyper.resolved_alpha
    per_party = [
        evaluate_model(p.phi(), alpha, p.corpus, data.test, theta_train=p.theta(), fold_in_iterations=fold_in_iterations, seed=hyper.seed)
        for p in sim.parties
    ]
    metrics = {k: float(np.mean([m[k] for m in per_party])) for k in per_party[0]}
    phi = sim.parties[0].phi()
    write_topics(out, top_words(phi, data.train.vocab, 10))
    save_topic_model(out, TopicModelFile(phi=phi, alpha=alpha, beta=hyper.beta, vocab=data.train.vocab, tokenizer=data.tokenizer))
    staleness = [s for log in sim.logs for s in log.staleness]
    _plots(out, sim, staleness, [m["perplexity"] for m in per_party])
    summary: dict[str, Any] = {
        "algorithm": "dafed-lda",
        "dataset": data.name,
        "parties": len(sim.parties),
        "topics": hyper.n_topics,
        "iterations": hyper.iterations,
        "seed": hyper.seed,
        "perplexity": metrics["perplexity"],
        "npmi": metrics["npmi"],
        "topic_diversity": metrics["topic_diversity"],
        "wall_seconds": sim.wall_seconds,
        "bytes_sent": int(sum(log.bytes_sent for log in sim.logs)),
        "perplexity_eq16": metrics["perplexity_eq16"],
        "steps": steps,
        "max_delay": max_delay,
        "alpha": alpha,
        "beta": hyper.beta,
        "bytes_received": int(sum(log.bytes_received for log in sim.logs)),
        "staleness_histogram": _histogram(staleness),
        "parties_detail": [
            {
                "party": log.party_id,
                "rounds": log.rounds,
                "sweeps": log.sweeps,
                "stopped_by": log.stopped_by,
                "read_from": sorted(log.read_from),
                "bytes_sent": log.bytes_sent,
                "compute_seconds": round(log.compute_seconds, 3),
                "comm_seconds": round(log.comm_seconds, 3),
                "comm_seconds_per_round": round(log.comm_seconds / max(log.rounds, 1), 4),
                "delay_seconds": round(log.delay_seconds, 3),
                "mean_staleness": float(np.mean(log.staleness)) if log.staleness else 0.0,
            }
            | {k: m[k] for k in m}
            for log, m in zip(sim.logs, per_party)
        ],
    }
    if "macro_f1" in metrics:
        summary["macro_f1"] = metrics["macro_f1"]
    summary |= dict(extra or {})
    write_summary(out, summary)
    return summary


def _histogram(values: Sequence[int]) -> dict[str, int]:
    keys, counts = np.unique(np.asarray(values, dtype=np.int64), return_counts=True)
    return {str(int(k)): int(c) for k, c in zip(keys, counts)}


def _plots(out: Path, sim: SimulationResult, staleness: Sequence[int], perplexities: Sequence[float]) -> None:
    if staleness:
        plot_histogram(out / "staleness.png", staleness, xlabel="staleness of a read payload (rounds behind)", title="DAFed-LDA: staleness of the counts each party used")
    plot_curves(
        out / "rounds.png",
        {"rounds completed": (list(range(1, len(sim.logs) + 1)), [log.rounds for log in sim.logs])},
        xlabel="party",
        ylabel="rounds",
        title="DAFed-LDA: rounds completed per party (the fastest stops everyone)",
    )
    plot_curves(
        out / "perplexity_per_party.png",
        {"held-out perplexity": (list(range(1, len(perplexities) + 1)), list(perplexities))},
        xlabel="party",
        ylabel="held-out perplexity of the party's Φ_Σ",
        title="DAFed-LDA: each party's model on the test set",
    )
