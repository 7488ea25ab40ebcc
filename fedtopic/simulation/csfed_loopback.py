"""CSFed-LDA on loopback in one command: a real aggregator child process and P parties as threads over HTTP.

Used by ``fedtopic simulate --algorithm csfed-lda`` and the timing experiment.
The consortium (config + seeded keys: a simulation, never a deployment) is
written to a work folder; every party has its own state folder there.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.base import TrainSpec
from fedtopic.algorithms.lda.party import privacy_summary
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.consortium.config import ConsortiumConfig
from fedtopic.consortium.init import key_file_path
from fedtopic.corpus.training_data import TrainingData
from fedtopic.corpus.types import Corpus
from fedtopic.crypto.keys import load_party_keys
from fedtopic.eval.perplexity import completion_perplexity
from fedtopic.eval.plots import plot_curves
from fedtopic.eval.report import evaluate_model
from fedtopic.eval.topics import top_words
from fedtopic.node.csfed_loop import CSFedParticipant
from fedtopic.node.csfed_node import csfed_settings, round_totals
from fedtopic.runs.folder import (
    TopicModelFile,
    save_topic_model,
    write_summary,
    write_topics,
)
from fedtopic.runs.history import HistoryLine
from fedtopic.simulation.aggregator_proc import AggregatorProcess
from fedtopic.simulation.local_consortium import local_consortium


def make_participants(config: Path, cfg: ConsortiumConfig, corpora: Sequence[Corpus], url: str,
                      say: Callable[[str], None], history_dir: Path | None = None) -> list[CSFedParticipant]:
    """One participant per party, built by the config's algorithm (party i seeded ``seed + i``, as lock-step)."""
    settings = csfed_settings(cfg)
    publics = [p.x25519_public_bytes for p in cfg.parties]
    algorithm, spec = get_algorithm(cfg.algorithm.name), cfg.algorithm.spec()
    out = []
    for i, (pid, corpus) in enumerate(zip(cfg.party_ids, corpora)):
        party = algorithm.party(pid, i, corpus, spec)
        keys = load_party_keys(key_file_path(config.parent, pid))
        out.append(CSFedParticipant(party, keys, url, cfg.party_ids, publics, settings,
                                    config.parent / "state" / pid, say=say,
                                    history=None if history_dir is None else history_dir / f"{pid}.jsonl"))
    return out


def run_all(participants: Sequence[CSFedParticipant], step: Callable[[CSFedParticipant], Any]) -> list[Any]:
    """``step`` on every participant concurrently (threads); re-raises the first failure."""
    with ThreadPoolExecutor(max_workers=len(participants), thread_name_prefix="party") as pool:
        return [f.result() for f in [pool.submit(step, p) for p in participants]]


def write_csfed_run(out: Path, data: TrainingData, spec: TrainSpec, participants: Sequence[CSFedParticipant], *,
                    protection: str, wall_seconds: float, compare_centralized: bool = False,
                    fold_in_iterations: int = 50) -> dict[str, Any]:
    """Evaluate the consortium's Φ_Σ (every party holds the same), write the run folder, return the summary."""
    first = participants[0].party
    hyper, steps = first.hyper, first.steps
    phi = first.phi()
    same = all(np.array_equal(p.party.phi(), phi) for p in participants[1:])
    metrics = evaluate_model(phi, hyper.resolved_alpha, data.train, data.test, fold_in_iterations=fold_in_iterations,
                             seed=hyper.seed)
    write_topics(out, top_words(phi, data.train.vocab, 10))
    save_topic_model(out, TopicModelFile(phi=phi, alpha=hyper.resolved_alpha, beta=hyper.beta,
                                         vocab=data.train.vocab, tokenizer=data.tokenizer))
    totals = [round_totals(p.records) for p in participants]
    summary: dict[str, Any] = {
        "algorithm": "csfed-lda", "dataset": data.name, "parties": len(participants), "topics": hyper.n_topics,
        "iterations": hyper.iterations, "seed": hyper.seed, "perplexity": metrics["perplexity"],
        "npmi": metrics["npmi"], "topic_diversity": metrics["topic_diversity"], "wall_seconds": wall_seconds,
        "bytes_sent": int(sum(t["bytes_sent"] for t in totals)), "perplexity_eq16": metrics["perplexity_eq16"],
        "protection": protection, "steps": steps, "rounds": len(participants[0].records),
        "bytes_received": int(sum(t["bytes_received"] for t in totals)), "parties_hold_same_phi": same,
        "recoveries_sent": int(sum(t["recoveries_sent"] for t in totals)),
        "seconds_per_party": {k: float(np.mean([t[k] for t in totals])) for k in totals[0] if k.endswith("_seconds")},
    } | privacy_summary([p.party for p in participants])
    if compare_centralized:
        t0 = time.perf_counter()
        central_algo = get_algorithm("centralized-lda")
        shared = {o.name for o in central_algo.options}
        central_spec = central_algo.spec(spec.topics, spec.iterations, spec.seed,
                                         {k: v for k, v in spec.options.items() if k in shared and v is not None})
        central = central_algo.fit(data.parties, central_spec)[0].model.phi
        ref = completion_perplexity(central, data.test, hyper.resolved_alpha, iterations=fold_in_iterations,
                                    seed=hyper.seed)
        summary |= {"centralized_perplexity": ref, "centralized_seconds": time.perf_counter() - t0,
                    "perplexity_gap_vs_centralized": metrics["perplexity"] / ref - 1.0}
    write_summary(out, summary)
    records = participants[0].records
    phases = ("sweep_seconds", "encode_seconds", "submit_seconds", "fetch_seconds", "decode_seconds")
    plot_curves(out / "round_seconds.png",
                {k.removesuffix("_seconds"): ([r.round for r in records], [getattr(r, k) for r in records])
                 for k in phases},
                xlabel="aggregator round", ylabel="seconds (party p1)",
                title=f"CSFed-LDA ({protection}): time per round by phase")
    return summary


def simulate_csfed(data: TrainingData, spec: TrainSpec, run_dir: Path, *, algorithm: str = "csfed-lda",
                   protection: str, delta: float = 0.005, key_bits: int = 2048, seed: int = 0,
                   compare_centralized: bool = False, say: Callable[[str], None] = print,
                   on_line: Callable[[str, HistoryLine], None] | None = None) -> dict[str, Any]:
    """Aggregator child + one thread per party on loopback; writes ``run_dir`` (the aggregator's log too)."""
    with tempfile.TemporaryDirectory(prefix="csfed-") as tmp:
        work = Path(tmp)
        config, cfg = local_consortium(work / "consortium", len(data.parties), spec, algorithm=algorithm,
                                       protection=protection, delta=delta, key_bits=key_bits, seed=seed)
        with AggregatorProcess(config, work / "aggregator", run_dir / "aggregator.log") as agg:
            say(f"aggregator {agg.url} (pid {agg.proc.pid}); {len(data.parties)} parties, protection {protection}")
            participants = make_participants(config, cfg, data.parties, agg.url, say, run_dir / "history")
            started = time.perf_counter()
            run_all(participants, lambda p: p.run(on_line=None if on_line is None else
                                                  (lambda line, pid=p.keys.party_id: on_line(pid, line))))
            wall = time.perf_counter() - started
    return write_csfed_run(run_dir, data, spec, participants, protection=protection, wall_seconds=wall,
                           compare_centralized=compare_centralized)
