"""``fedtopic simulate --algorithm gfedntm-prodlda``: a real aggregator child process on loopback, one thread per
node over HTTP; then the federated model (every node holds the same) evaluated like the centralised one."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.base import Fitted, TrainSpec
from fedtopic.algorithms.model import TopicModel
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.consortium.init import key_file_path
from fedtopic.corpus.training_data import TrainingData
from fedtopic.crypto.keys import load_party_keys
from fedtopic.errors import TrainingError
from fedtopic.node.dense_session import PROTECTIONS
from fedtopic.node.gfedntm_loop import EpochRecord, run_gfedntm_node
from fedtopic.simulation.aggregator_proc import AggregatorProcess
from fedtopic.simulation.csfed_loopback import local_consortium
from fedtopic.simulation.ntm_run import write_ntm_run
from fedtopic.simulation.party_threads import PATIENCE, run_party_threads


def simulate_gfedntm(data: TrainingData, spec: TrainSpec, run_dir: Path, *, algorithm: str = "gfedntm-prodlda",
                     protection: str = "none", say: Callable[[str], None] = print) -> dict[str, Any]:
    """Train the nodes of ``data.parties`` through a real aggregator; evaluate; write ``run_dir``."""
    from fedtopic.neural.ntm_model import network_arrays
    from fedtopic.neural.prodlda import topics

    if protection not in PROTECTIONS:
        raise TrainingError(f"{algorithm} takes protection {' or '.join(PROTECTIONS)}, got {protection!r}")
    algo = get_algorithm(algorithm)
    n = len(data.parties)
    with tempfile.TemporaryDirectory(prefix="gfedntm-") as tmp:
        work = Path(tmp)
        config, cfg = local_consortium(work / "consortium", n, spec, algorithm=algorithm, protection=protection,
                                       seed=spec.seed)
        nodes = [algo.party(pid, i, c, spec) for i, (pid, c) in enumerate(zip(cfg.party_ids, data.parties))]
        publics = [p.x25519_public_bytes for p in cfg.parties]
        params = {"algorithm": algorithm, "topics": spec.topics, "seed": spec.seed,
                  "vocabulary": data.train.n_words, **{f"opt_{k}": v for k, v in spec.options.items()}}
        with AggregatorProcess(config, work / "aggregator", run_dir / "aggregator.log") as agg:
            say(f"aggregator {agg.url} (pid {agg.proc.pid}); {n} nodes, K = {spec.topics}, protection {protection}")
            started = time.perf_counter()

            def one(i: int) -> list[EpochRecord]:
                keys = load_party_keys(key_file_path(config.parent, cfg.party_ids[i]))

                def report(rec: EpochRecord) -> None:
                    if i == 0:
                        say(f"epoch {rec.epoch}: {rec.steps} steps, Δ = {rec.relative_change:.2e}, "
                            f"{rec.seconds:.1f} s")

                return run_gfedntm_node(nodes[i], agg.url, keys, cfg.party_ids, publics,
                                        session=f"gfedntm-{spec.seed}", protection=protection, params=params,
                                        patience=PATIENCE, on_epoch=report)

            records = run_party_threads([f"node {pid}" for pid in cfg.party_ids], one)
            wall = time.perf_counter() - started
    flat = nodes[0].flat
    if any(not np.array_equal(node.flat, flat) for node in nodes[1:]):
        raise TrainingError("nodes ended with different weights")
    model_ntm = nodes[0].model()
    model = TopicModel(topics(flat, model_ntm.shapes), 0.0, 0.0, data.train.vocab, dict(data.tokenizer),
                       algorithm=algorithm, network=network_arrays(model_ntm))
    theta_train = np.vstack([model_ntm.theta(node.counts, node.ctx) for node in nodes])
    extra = {"protection": protection, "epochs": len(records[0]), "steps": nodes[0].step,
             "train_wall_seconds": wall, "bytes_sent": int(sum(r.bytes_sent for rec in records for r in rec)),
             "bytes_per_node_step": int(sum(r.bytes_sent for r in records[0]) / max(nodes[0].step, 1)),
             "seconds_per_step": wall / max(nodes[0].step, 1),
             "relative_change": [r.relative_change for r in records[0]],
             "epoch_seconds": [r.seconds for r in records[0]]}  # training only: sessions opened before
    return write_ntm_run(run_dir, data, algorithm, spec, Fitted(model, theta_train), wall_seconds=wall, extra=extra)
