"""Sync-Opt with every node in this process: one thread per node, each phase's vectors summed in node order.

The sum is what the aggregator's dense-sum session computes (same order, same float64 additions; with
``wire=float32`` the gradient's parts and sum rounded to float32 as that session does), so this is the reference
the aggregator's run is compared with (tests) and the transport-free cost of a federated step (benchmarks).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from fedtopic.neural.ntm_train import GRADIENT_PHASES, FederatedNode, gradient_on_wire


def train_in_process(nodes: Sequence[FederatedNode], epochs: int) -> None:
    """Up to ``epochs`` epochs of every node, with the federated stopping rule (the consortium's validation loss,
    summed in node order); their W, Adam state and statistics end identical."""
    sizes = [node.adopt_split([n.counts.shape[0] for n in nodes]) for node in nodes][0]  # as setup does
    pending: dict[tuple[str, int], list[Any]] = {}
    barrier = threading.Barrier(len(nodes))
    lock = threading.Lock()
    wire = gradient_on_wire(nodes[0].settings.wire)

    def total_for(i: int):
        def total(phase: str, step: int, vector: np.ndarray) -> np.ndarray:
            with lock:
                pending.setdefault((phase, step), [None] * len(nodes))[i] = vector
            barrier.wait()  # every node's vector is in
            rounded = wire if phase in GRADIENT_PHASES else (lambda v: v)
            out = np.zeros_like(vector)
            for v in pending[(phase, step)]:
                out = out + rounded(v)
            out = rounded(out)
            barrier.wait()  # every node has read them
            if i == 0:
                del pending[(phase, step)]
            return out
        return total

    for _ in range(epochs):
        threads = [threading.Thread(target=node.train_epoch, args=(sizes, total_for(i)))
                   for i, node in enumerate(nodes)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        total = np.zeros(2)  # the validation sums, in node order, as the aggregator's ``val`` channel adds them
        for node in nodes:
            total = total + np.array(node.validation_sum(), dtype=np.float64)
        validation = float(total[0] / total[1]) if total[1] > 0 else float("nan")
        if any([node.end_epoch(validation) for node in nodes]):
            return
