"""gFedNTM against centralised ProdLDA on one machine: seconds per step and per epoch, bytes per node per step.

    python benchmarks/bench_gfedntm.py [--nodes 5] [--docs 1280] [--vocabulary 5000] [--topics 50]
                                       [--repeats 3] [--json out.json]

Synthetic LDA documents (the corpus layer's generator, §4.1's shape: V words, K topics, lengths U[150, 250]),
``--docs`` per node, batch 64 per node (a union batch of ``--nodes`` × 64: gFedNTM's ``batch`` is the union's). One epoch of each, ``--repeats`` times (median):

- centralised: one ProdLDA step on the union batch (``--nodes`` × 64 documents; loss, autograd, Adam), the
  step a centralised trainer takes, so the same number of steps per epoch;
- federated in process: Sync-Opt with one thread per node, the five phase sums in node order in memory;
- federated through a real aggregator child process on 127.0.0.1 (``simulate``): protection none, with the
  gradient's two messages in float32 (the default since session 27, ``--opt wire=float32``) and in float64
  (``--opt wire=float64``: the centralised model's bits, twice the bytes), and mask (fixed point either way).

Reported per row: seconds per step, seconds per epoch, bytes each node uploads per step (the five phases'
encoded vectors), and the ratio to the centralised step. A step is a training step: the centralised row times
its steps; the aggregator rows time node 1's ``train_epoch`` (the summary's ``epoch_train_seconds``), without
the validation pass and its sum that end a federated epoch (about 50 ms, which ``s / epoch`` includes; before
session 26 ``s / step`` included it too, and the centralised row had none). The in-process row's epoch includes
its validation.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fedtopic.algorithms.registry import get_algorithm  # noqa: E402
from fedtopic.allocator import keep_freed_buffers  # noqa: E402
from fedtopic.corpus.pool import merge_corpora  # noqa: E402
from fedtopic.corpus.synthetic import generate_synthetic  # noqa: E402
from fedtopic.corpus.training_data import TrainingData  # noqa: E402
from fedtopic.models.nnls import counts_matrix  # noqa: E402
from fedtopic.neural.ntm_train import FederatedNode, NTMSettings  # noqa: E402
from fedtopic.neural.prodlda import (  # noqa: E402
    Shapes,
    batch_loss,
    draw_noise,
    flat_gradient,
    init_params,
    leaves,
)
from fedtopic.neural.sync_local import train_in_process  # noqa: E402
from fedtopic.neural.sync_opt import Adam  # noqa: E402
from fedtopic.simulation.sync_run import simulate_sync  # noqa: E402

BATCH = 64


def centralised_epoch(counts, topics: int, union: int, seed: int) -> tuple[float, int]:
    """(seconds, steps) of one epoch of centralised ProdLDA steps on batches of ``union`` documents."""
    import torch

    shapes = Shapes(counts.shape[1], topics)
    flat, adam = init_params(shapes, np.random.default_rng(seed)), Adam(shapes.size)
    perm = np.random.default_rng(seed).permutation(counts.shape[0])
    steps = 0
    started = time.perf_counter()
    for start in range(0, len(perm), union):
        idx = perm[start:start + union]
        params = leaves(flat, shapes)
        loss, _ = batch_loss(params, torch.from_numpy(counts[idx].toarray()), None,
                             draw_noise(np.random.default_rng([seed, steps]), len(idx), topics))
        flat = adam.step(flat, flat_gradient(loss / len(idx), params))
        steps += 1
    return time.perf_counter() - started, steps


def corpus_arguments(ap: argparse.ArgumentParser) -> None:
    """The corpus and model options this benchmark and ``bench_gfedntm_phases`` share."""
    ap.add_argument("--nodes", type=int, default=5)
    ap.add_argument("--docs", type=int, default=1280, help="documents per node")
    ap.add_argument("--vocabulary", type=int, default=5000)
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)


def synthetic_consortium(args: argparse.Namespace) -> tuple[Any, TrainingData]:
    """(the generator's output, its parties as ``TrainingData``) for ``corpus_arguments``; torch on one thread."""
    import torch

    torch.set_num_threads(1)
    synth = generate_synthetic(n_parties=args.nodes, n_topics=args.topics, n_shared=10, n_words=args.vocabulary,
                               docs_per_party=args.docs, doc_length=200, eta=0.01, seed=args.seed)
    union = merge_corpora(synth.parties)
    return synth, TrainingData(name="bench-synthetic", train=union,
                               test=union.subset(np.arange(min(200, union.n_docs))), parties=list(synth.parties))


def main() -> None:
    keep_freed_buffers()  # as every `fedtopic` command does (the aggregator child is one)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    corpus_arguments(ap)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    synth, data = synthetic_consortium(args)
    counts = counts_matrix(data.train)
    settings = NTMSettings(batch=args.nodes * BATCH, epochs=1, tolerance=0.0)  # the union batch: BATCH a node
    rows: dict[str, list[dict[str, float]]] = {}

    def record(name: str, seconds: float, steps: int, bytes_up: float, epoch: float | None = None) -> None:
        """``seconds``: the training steps; ``epoch``: the whole epoch (default: the same)."""
        rows.setdefault(name, []).append({"seconds": seconds, "steps": steps, "bytes": bytes_up,
                                          "epoch": seconds if epoch is None else epoch})
        print(f"{name}: {seconds:.2f} s, {steps} steps", file=sys.stderr)

    for _ in range(args.repeats):
        seconds, steps = centralised_epoch(counts, args.topics, args.nodes * BATCH, args.seed)
        record("centralised", seconds, steps, 0.0)
        nodes = [FederatedNode(i, counts_matrix(c), None, args.topics, settings, args.seed)
                 for i, c in enumerate(synth.parties)]
        started = time.perf_counter()
        train_in_process(nodes, 1)
        k, v = args.topics, args.vocabulary  # the statistics in float64, the gradient in the wire's precision
        wire_bytes = np.dtype(settings.wire).itemsize
        record("federated, in process", time.perf_counter() - started, nodes[0].step,
               8.0 * (4 * k + 2 * v + 2 * v + 4 * k) + wire_bytes * nodes[0].shapes.size)
        for protection, wire in (("none", "float32"), ("none", "float64"), ("mask", "float32")):
            spec = get_algorithm("gfedntm-prodlda").spec(args.topics, 1, args.seed,
                                                         {"batch": str(args.nodes * BATCH), "tolerance": "0",
                                                          "wire": wire})
            with tempfile.TemporaryDirectory() as tmp:
                s = simulate_sync(data, "gfedntm-prodlda", spec, Path(tmp) / "run", protection=protection,
                                  say=lambda _: None)
            record(f"federated, aggregator ({protection}{', wire float64' if wire == 'float64' else ''})",
                   sum(s["epoch_train_seconds"]), s["steps"], s["bytes_per_node_step"], sum(s["epoch_seconds"]))

    base = statistics.median(r["seconds"] / r["steps"] for r in rows["centralised"])
    print(f"\n{args.nodes} nodes × {args.docs} documents, V = {args.vocabulary:,}, K = {args.topics}, batch "
          f"{BATCH} per node; median of {args.repeats}\n")
    print("| run | s / step | s / epoch | steps | bytes up per node per step | × centralised step |")
    print("|---|---:|---:|---:|---:|---:|")
    summary = {}
    for name, rs in rows.items():
        per_step = statistics.median(r["seconds"] / r["steps"] for r in rs)
        epoch = statistics.median(r["epoch"] for r in rs)
        summary[name] = {"seconds_per_step": per_step, "seconds_per_epoch": epoch, "steps": rs[0]["steps"],
                         "bytes_per_node_step": rs[0]["bytes"], "ratio": per_step / base}
        print(f"| {name} | {per_step:.3f} | {epoch:.1f} | {rs[0]['steps']} | {rs[0]['bytes']:,.0f} | "
              f"{per_step / base:.2f} |")
    if args.json:
        args.json.write_text(json.dumps({"settings": {k: str(v) for k, v in vars(args).items()},
                                         "results": summary, "runs": rows}, indent=2))


if __name__ == "__main__":
    main()
