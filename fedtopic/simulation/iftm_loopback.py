"""``fedtopic simulate --algorithm iftm-lda``: a real aggregator child (its ``topic-merge`` combiner is the
master) and one thread per party on loopback; then the global model and every party alone, evaluated.

"Each party alone" is the same private MH with the same settings on that party's documents and no master:
the paper's Fig. 5 baseline. Held-out figures are document-completion perplexity and its log-likelihood per
scored token (−log perplexity), with α = 50/K of the model evaluated unless ``alpha`` is given.
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.base import TrainSpec
from fedtopic.algorithms.iftm_options import party_topic_counts
from fedtopic.algorithms.iftm_party import IFTMParty
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.corpus.training_data import TrainingData
from fedtopic.crypto.keys import load_party_keys
from fedtopic.eval.perplexity import completion_perplexity
from fedtopic.eval.topics import top_words
from fedtopic.network.client import AggregatorClient
from fedtopic.node.iftm_loop import IFTMRecord, run_iftm_party
from fedtopic.runs.folder import (
    TopicModelFile,
    save_topic_model,
    write_summary,
    write_topics,
)
from fedtopic.simulation.aggregator_proc import AggregatorProcess
from fedtopic.simulation.csfed_loopback import local_consortium


def _heldout(phi: np.ndarray, data: TrainingData, spec: TrainSpec) -> dict[str, float]:
    alpha = spec.options.get("alpha")
    a = 50.0 / phi.shape[0] if alpha is None else float(alpha)  # type: ignore[arg-type]
    ppl = completion_perplexity(phi, data.test, a, iterations=50, seed=spec.seed)
    return {"perplexity": ppl, "heldout_loglik_per_token": -math.log(ppl), "topics": int(phi.shape[0])}


def simulate_iftm(data: TrainingData, spec: TrainSpec, run_dir: Path, *, algorithm: str = "iftm-lda",
                  say: Callable[[str], None] = print) -> dict[str, Any]:
    """Train the consortium through a real aggregator; evaluate M* and each party alone; write ``run_dir``."""
    ks = party_topic_counts(spec.options, spec.topics, len(data.parties))
    with tempfile.TemporaryDirectory(prefix="iftm-") as tmp:
        work = Path(tmp)
        config, cfg = local_consortium(work / "consortium", len(data.parties), spec, algorithm=algorithm,
                                       protection="none", seed=spec.seed)
        algo = get_algorithm(algorithm)
        parties = [algo.party(pid, i, corpus, spec) for i, (pid, corpus) in enumerate(zip(cfg.party_ids, data.parties))]
        with AggregatorProcess(config, work / "aggregator", run_dir / "aggregator.log") as agg:
            say(f"aggregator {agg.url} (pid {agg.proc.pid}); {len(parties)} parties with K = {', '.join(map(str, ks))}")
            started = time.perf_counter()

            def one(party: IFTMParty) -> list[IFTMRecord]:
                keys = load_party_keys(config.parent / "keys" / f"{party.party_id}.key.json")
                with AggregatorClient(agg.url, keys, f"iftm-{spec.seed}") as client:
                    return run_iftm_party(party, client, cfg.party_ids, max_topics=max(ks))

            with ThreadPoolExecutor(len(parties), thread_name_prefix="party") as pool:
                records = [f.result() for f in [pool.submit(one, p) for p in parties]]
            wall = time.perf_counter() - started
    global_model = parties[0].global_model
    assert global_model is not None
    summary_global = _heldout(global_model.topics, data, spec)
    alone = []
    for i, corpus in enumerate(data.parties):
        solo = get_algorithm(algorithm).party(f"p{i + 1}-alone", i, corpus, spec)
        while solo.sweeps < spec.iterations:
            solo.local_round(spec.iterations)
        alone.append(_heldout(solo.model.phi(), data, spec))
    write_topics(run_dir, top_words(global_model.topics, data.train.vocab, 10))
    save_topic_model(run_dir, TopicModelFile(phi=global_model.topics, alpha=50.0 / global_model.topics.shape[0],
                                             beta=float(spec.options["beta"]), vocab=data.train.vocab,  # type: ignore[arg-type]
                                             tokenizer=data.tokenizer, algorithm=algorithm))
    summary: dict[str, Any] = {
        "algorithm": algorithm, "dataset": data.name, "parties": len(parties), "topics": spec.topics,
        "iterations": spec.iterations, "seed": spec.seed, "perplexity": summary_global["perplexity"],
        "npmi": float("nan"), "topic_diversity": float("nan"), "wall_seconds": wall,
        "bytes_sent": int(sum(r.bytes_sent for rec in records for r in rec)),
        "global_model": summary_global, "party_topics": ks,
        "each_party_alone": {p.party_id: a for p, a in zip(parties, alone)},
        "rounds": len(records[0]), "global_topics_per_round": [r.global_topics for r in records[0]],
        "epsilon": float(spec.options["epsilon"]), "tau": float(spec.options["tau"]),  # type: ignore[arg-type]
        "xi": float(spec.options["xi"]), "data_amounts": [p.amount for p in parties],  # type: ignore[arg-type]
    }
    write_summary(run_dir, summary)
    return summary
