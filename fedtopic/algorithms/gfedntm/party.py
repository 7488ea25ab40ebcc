"""One gFedNTM node as a ``FederatedParty``: its document count once, then per mini-batch step five sums (the
gradient's in two parts).

Channels (one aggregator session each, so each has a fixed length): ``size`` (every node's N_ℓ, at its index)
and ``enc``, ``dec``, ``gdec``, ``genc``, ``grad-enc`` (``neural.sync_opt``'s phases; round = the step over the
whole run) and ``grad-dec``, the decoder's part of the gradient, which the runtime carries while the node
computes phases 4 and 5 (``Exchange.start``). A round of the runtime is one epoch. Under ``mask`` the
aggregator learns none of them, not even the sums; the nodes learn the sums, i.e. the union batch's BatchNorm
statistics and gradient, which is what a centralised trainer would see. Stopping: the centralised trainer's
rule, federated (``neural.ntm_train``): each node's validation quarter gives [Σ loss, count] on the ``val``
channel once per epoch, and every node applies the same patience to the consortium's mean and ends with the
best epoch's weights; or the epoch budget, or (optional) a relative weight change below ``tolerance``.

Checkpoints: the runtime's after every epoch, and one every ``CHECKPOINT_EVERY`` steps within it (the node's
state carries its position in the epoch). The aggregator keeps the last ``KEEP_AGGREGATES`` aggregates of a
session, so a resumed node still finds every aggregate of the steps it replays.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from fedtopic.algorithms.federated import Channel, Exchange, StepRecord
from fedtopic.eval.coherence import heaviest_ids

CHECKPOINT_EVERY = 8
KEEP_AGGREGATES = 16  # the aggregator's (network.store.KEEP_AGGREGATES; a test checks they agree)
assert CHECKPOINT_EVERY < KEEP_AGGREGATES  # a resumed node must still find every aggregate it replays


class GFedNTMParty:
    """Node ``index`` (``neural.ntm_train.FederatedNode``) behind the party protocol."""

    def __init__(self, party_id: str, node: Any) -> None:
        self.party_id, self.node = party_id, node
        self.sizes: list[int] = []

    def channels(self, n_parties: int) -> list[Channel]:
        from fedtopic.neural.ntm_train import GRADIENT_PHASES

        self.n_parties = n_parties
        wire = {"dtype": self.node.settings.wire}
        return [Channel("size", "dense", n_parties), Channel("val", "dense", 2)] + [
            Channel(phase, "dense", n, wire if phase in GRADIENT_PHASES else {})
            for phase, n in self.node.phase_sizes().items()]

    def setup(self, exchange: Exchange) -> None:
        """Every node's document count: the centralised split of the pooled documents (each node's part of it,
        ``FederatedNode.adopt_split``) and the union batch's composition at every step."""
        own = np.zeros(self.n_parties)
        own[self.node.index] = self.node.counts.shape[0]
        self.sizes = self.node.adopt_split([int(round(x)) for x in exchange.sum("size", 0, own).value])

    def step(self, round: int, exchange: Exchange) -> StepRecord:
        """One epoch of Sync-Opt steps (the rest of it after a mid-epoch restart)."""
        node = self.node

        def total(phase: str, step: int, vector: np.ndarray) -> np.ndarray:
            return exchange.sum(phase, step, vector).value

        def start(phase: str, step: int, vector: np.ndarray) -> Callable[[], np.ndarray]:
            flight = exchange.start(phase, step, vector)
            return lambda: flight.result().value

        def after_step() -> None:
            if node.step % CHECKPOINT_EVERY == 0:
                exchange.checkpoint()

        first = node.step if node.pos == 0 else node.epoch_first_step
        started = time.perf_counter()
        change = node.train_epoch(self.sizes, total, after_step, start)
        train_seconds = time.perf_counter() - started  # the steps alone: the validation pass and its sum follow
        # scaled by a power of two (exactly, so the ratio keeps its bits): a sum of thousands of documents' losses
        # would leave mask's fixed-point bound (±2^20), the share of all training documents stays far inside it
        scale = 2.0 ** -math.ceil(math.log2(max(sum(self.sizes), 1)))
        loss_sum, count = exchange.sum("val", round, np.array(node.validation_sum(), dtype=np.float64) * scale).value
        validation = float(loss_sum / count) if count > 0 else float("nan")  # the consortium's, every node alike
        node.end_epoch(validation)
        return StepRecord(quality=validation, quality_name="validation_loss",
                          extra={"relative_change": change, "steps": node.step - first, "epoch": node.epoch,
                                 "best_epoch": node.stopping.best_epoch, "train_seconds": train_seconds})

    def done(self) -> bool:
        return self.node.finished

    def privacy(self) -> dict[str, Any] | None:
        """None: nothing is released under DP (``ddp_party`` is the node that does)."""
        return None

    def state(self) -> dict[str, np.ndarray]:
        return self.node.state()

    def restore(self, arrays: Mapping[str, np.ndarray]) -> None:
        self.node.restore(dict(arrays))

    def top_words_ids(self, n: int) -> np.ndarray:
        from fedtopic.neural.prodlda import topics

        return heaviest_ids(topics(self.node.flat, self.node.shapes), n)

    def topic_distribution(self) -> tuple[np.ndarray, None]:
        """softmax(β) float64[K,V] (ProdLDA's topics); no prevalence (θ of the documents is not kept)."""
        from fedtopic.neural.prodlda import topics

        phi = np.asarray(topics(self.node.flat, self.node.shapes), dtype=np.float64)
        return phi / phi.sum(axis=1, keepdims=True), None
