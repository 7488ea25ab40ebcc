"""``fedtopic simulate --algorithm fednmf``: a real aggregator child process on loopback and one thread per client
over HTTP; then the global W and every client's H_i evaluated as the paper does (§IV-B, §IV-D)."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.base import Fitted, TrainSpec
from fedtopic.algorithms.fednmf_party import FedNMFParty
from fedtopic.algorithms.nmf_model import nmf_topic_model
from fedtopic.consortium.init import key_file_path
from fedtopic.corpus.training_data import TrainingData
from fedtopic.crypto.keys import load_party_keys
from fedtopic.errors import TrainingError
from fedtopic.network.client import AggregatorClient
from fedtopic.node.fednmf_loop import PROTECTIONS, FedNMFRecord, run_fednmf_party
from fedtopic.simulation.aggregator_proc import AggregatorProcess
from fedtopic.simulation.csfed_loopback import local_consortium
from fedtopic.simulation.nmf_run import write_nmf_run
from fedtopic.simulation.party_threads import PATIENCE, run_party_threads


def simulate_fednmf(data: TrainingData, spec: TrainSpec, run_dir: Path, *, protection: str = "none",
                    say: Callable[[str], None] = print,
                    on_round: Callable[[int, FedNMFRecord], None] | None = None) -> dict[str, Any]:
    """Train the clients of ``data.parties`` through a real aggregator; evaluate; write ``run_dir``."""
    if protection not in PROTECTIONS:
        raise TrainingError(f"fednmf takes protection {' or '.join(PROTECTIONS)}, got {protection!r}")
    n = len(data.parties)
    with tempfile.TemporaryDirectory(prefix="fednmf-") as tmp:
        work = Path(tmp)
        config, cfg = local_consortium(work / "consortium", n, spec, algorithm="fednmf", protection=protection,
                                       seed=spec.seed)
        parties = [FedNMFParty(pid, i, n, corpus, spec) for i, (pid, corpus) in enumerate(zip(cfg.party_ids, data.parties))]
        publics = [p.x25519_public_bytes for p in cfg.parties]
        with AggregatorProcess(config, work / "aggregator", run_dir / "aggregator.log") as agg:
            say(f"aggregator {agg.url} (pid {agg.proc.pid}); {n} clients, C = {spec.options['fraction']}, "
                f"rule {spec.options['server_rule']}, λ = {spec.options['mi_weight']}, protection {protection}")
            started = time.perf_counter()

            def report(index: int, rec: FedNMFRecord) -> None:
                if index == 0:
                    say(f"round {rec.round + 1}/{spec.iterations}: {rec.bytes_sent:,} bytes up per client, "
                        f"{time.perf_counter() - started:.0f} s")
                if on_round is not None:
                    on_round(index, rec)

            def one(party: FedNMFParty) -> list[FedNMFRecord]:
                keys = load_party_keys(key_file_path(config.parent, party.party_id))
                with AggregatorClient(agg.url, keys, f"fednmf-{spec.seed}", patience=PATIENCE) as client:
                    return run_fednmf_party(party, client, cfg.party_ids, keys, publics, protection=protection,
                                            on_round=lambda rec, i=party.index: report(i, rec))

            records = run_party_threads([f"client {p.party_id}" for p in parties], lambda i: one(parties[i]))
            wall = time.perf_counter() - started
    w = parties[0].w
    disagree = max(float(np.max(np.abs(p.w - w))) for p in parties)
    if disagree != 0.0:
        raise TrainingError(f"clients ended with different global W (max difference {disagree:g})")
    theta = np.vstack([p.topic_weights() for p in parties])
    fitted = Fitted(nmf_topic_model(w, data.train.vocab, "fednmf", data.tokenizer), theta)
    sent = [r.bytes_sent for rec in records for r in rec]
    extra = {
        "protection": protection, "rounds": len(records[0]), "train_wall_seconds": wall,
        "bytes_sent": int(sum(sent)), "bytes_per_client_round": int(np.median(sent)),
        "selected_per_round": [sum(rec[r].selected for rec in records) for r in range(len(records[0]))],
        "client_documents": [p.client.n_docs for p in parties],
    }
    return write_nmf_run(run_dir, data, "fednmf", spec, fitted, wall_seconds=wall, extra=extra)
