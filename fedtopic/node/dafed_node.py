"""One DAFed-LDA party as its own process, over a real chain (``fedtopic node run``).

The party loads its documents, connects to the chain named in the consortium
config, and runs the asynchronous loop (Alg. 3) with a checkpoint in its
state folder, so a killed node resumes where it stopped. When training ends it
saves θ_p (its own, never published) and Φ_Σ as a run folder.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.baselines import LDAHyper
from fedtopic.algorithms.dafed import DAFedParty, RoundReport
from fedtopic.eval.report import evaluate_model
from fedtopic.eval.topics import top_words
from fedtopic.ledger.channel import ChainChannel
from fedtopic.ledger.endpoint import chain_for, registry_of
from fedtopic.node.async_loop import PartyLog, run_party
from fedtopic.node.config import ConsortiumConfig, converge_tol_of
from fedtopic.node.identity import load_own_keys
from fedtopic.node.party_data import load_party_data
from fedtopic.node.retrying import RetryingTransport
from fedtopic.node.run_folder import TopicModelFile, save_topic_model, write_summary, write_topics


def run_dafed_node(
    cfg: ConsortiumConfig,
    config_path: Path,
    party_id: str,
    *,
    key_file: Path | None = None,
    corpus: Path | None = None,
    vocab: Path | None = None,
    rpc: str | None = None,
    state_dir: Path | None = None,
    genesis_timeout: float = 600.0,
    say: Callable[[str], None] = print,
    on_round: Callable[[str, RoundReport, PartyLog], None] | None = None,
) -> dict[str, Any]:
    """Train party ``party_id`` to the end; returns (and writes to ``state_dir/model``) its summary."""
    keys = load_own_keys(cfg, config_path, party_id, key_file)
    state_dir = state_dir or config_path.parent / "state" / party_id
    state_dir.mkdir(parents=True, exist_ok=True)
    data = load_party_data(cfg, party_id, corpus=corpus, vocab=vocab)
    algo = cfg.algorithm
    index = cfg.party_ids.index(party_id)
    hyper = LDAHyper(n_topics=algo.topics, iterations=algo.iterations, alpha=algo.alpha, beta=algo.beta, seed=algo.seed)
    channel = ChainChannel(chain_for(cfg, rpc), registry_of(cfg), keys, shape=(data.train.n_words, algo.topics))
    transport = RetryingTransport(channel, say=say)
    party = DAFedParty(party_id, data.train, hyper, steps=algo.steps, seed=algo.seed + index)
    lo, hi = algo.random_delay
    rng = np.random.default_rng(algo.seed + 10_007 * (index + 1))
    say(f"party {party_id}: {data.train.n_docs:,} documents, {data.train.n_tokens:,} tokens from {data.source}; "
        f"reads {', '.join(cfg.channels_readable_by(party_id))}; state in {state_dir}")
    log = run_party(
        party,
        transport,
        readable=set(cfg.channels_readable_by(party_id)),
        max_sweeps=algo.iterations,
        stop=threading.Event(),
        delay=lambda: float(rng.uniform(lo, hi)) if hi > 0 else 0.0,
        on_round=on_round,
        genesis_timeout=genesis_timeout,
        checkpoint=state_dir / "checkpoint.npz",
        converge_tol=converge_tol_of(cfg),
    )
    party.absorb(transport.read_latest())
    return _write_model(state_dir / "model", cfg, party, log, data.train, data.test, data.tokenizer, hyper)


def _write_model(out: Path, cfg: ConsortiumConfig, party: DAFedParty, log: PartyLog, train, test, tokenizer, hyper: LDAHyper) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    alpha = hyper.resolved_alpha
    phi, theta = party.phi(), party.theta()
    metrics = evaluate_model(phi, alpha, train, test, theta_train=theta, seed=hyper.seed)
    np.save(out / "theta.npy", theta)
    write_topics(out, top_words(phi, train.vocab, 10))
    save_topic_model(out, TopicModelFile(phi=phi, alpha=alpha, beta=hyper.beta, vocab=train.vocab, tokenizer=tokenizer))
    summary = {
        "algorithm": "dafed-lda", "dataset": cfg.data.dataset or "own corpus", "parties": len(cfg.parties),
        "topics": hyper.n_topics, "iterations": hyper.iterations, "seed": hyper.seed,
        "perplexity": metrics["perplexity"], "npmi": metrics["npmi"], "topic_diversity": metrics["topic_diversity"],
        "wall_seconds": log.compute_seconds + log.comm_seconds + log.delay_seconds, "bytes_sent": log.bytes_sent,
        "party": party.party_id, "rounds": log.rounds, "sweeps": log.sweeps, "stopped_by": log.stopped_by,
        "bytes_received": log.bytes_received, "comm_seconds_per_round": log.comm_seconds / max(log.rounds, 1),
        "mean_staleness": float(np.mean(log.staleness)) if log.staleness else 0.0,
        "perplexity_eq16": metrics["perplexity_eq16"],
    } | ({"macro_f1": metrics["macro_f1"]} if "macro_f1" in metrics else {})
    write_summary(out, summary)
    return summary | {"run": str(out)}
