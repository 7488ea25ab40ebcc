"""One gFedNTM node under distributed DP (``--opt dp.distributed=true``, beyond the gFedNTM paper): DP-SGD of the
per-document ProdLDA / CombinedTM across the consortium, only the masked sum of the nodes' noisy releases seen.

One channel, ``dpsgd``: per step every node sends its release int[|W| + 1] (``algorithms.dp_sgd``: the clipped
gradients' sum and the count of sampled documents in fixed point, a Skellam share of the noise per cell, the
offset), and the aggregator releases no step with fewer than the planned contributors. A round of the runtime is
one epoch (⌈1/γ⌉ steps, ``neural.ntm_dp``); each step is one release for every document of every node (each is
sampled with probability γ), accounted per document at the contributors that came (docs/privacy.md §3e).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from fedtopic.algorithms.dp_sgd import (
    DPSGD,
    decode_sum,
    privacy,
    privacy_summary,
    release,
)
from fedtopic.algorithms.federated import Channel, Exchange, StepRecord
from fedtopic.algorithms.gfedntm.party import CHECKPOINT_EVERY, GFedNTMParty


class GFedNTMDDPParty(GFedNTMParty):
    """Node ``index`` (``neural.ntm_dp.DPNode``) behind the party protocol."""

    def __init__(self, party_id: str, node: Any, dp: DPSGD) -> None:
        super().__init__(party_id, node)
        self.dp = dp
        self.releases: list[int] = []  # contributors of every released step

    def channels(self, n_parties: int) -> list[Channel]:
        self.n_parties = n_parties
        cells = self.node.shapes.size + 1
        return [Channel("dpsgd", "counts", cells, self.dp.channel_meta(cells, self.dp.planned(n_parties)))]

    def setup(self, exchange: Exchange) -> None:
        """Nothing to agree on; a node that would sample more than the release's bound is refused here."""
        self.dp.check_batch(f"node {self.party_id}", self.node.n_train)

    def step(self, round: int, exchange: Exchange) -> StepRecord:
        """One epoch of DP-SGD steps (the rest of it after a mid-epoch restart)."""
        node, planned = self.node, self.dp.planned(self.n_parties)

        def release_step(step: int, grad: np.ndarray, sampled: int, rng: np.random.Generator) -> np.ndarray:
            agg = exchange.sum("dpsgd", step, release(grad, sampled, self.dp, planned, rng).reshape(-1, 1))
            contributors = len(agg.contributors)
            total, count = decode_sum(np.asarray(agg.value), contributors, self.dp, planned, grad.shape)
            self.releases.append(contributors)
            return total / max(count, 1.0)

        def after_step() -> None:
            if node.step % CHECKPOINT_EVERY == 0:
                exchange.checkpoint()

        first = node.step if node.pos == 0 else node.epoch_first_step
        started = time.perf_counter()
        change = node.train_epoch(release_step, after_step)
        train_seconds = time.perf_counter() - started
        loss = node.end_epoch()
        spent = privacy(self.dp, self.releases, planned, node.shapes.size + 1)
        return StepRecord(quality=loss, quality_name="loss", epsilon=spent.epsilon,
                          extra={"relative_change": change, "steps": node.step - first, "epoch": node.epoch,
                                 "train_seconds": train_seconds})

    def state(self) -> dict[str, np.ndarray]:
        return self.node.state() | {"releases": np.array(self.releases, dtype=np.int64),
                                    "n_parties": np.array(getattr(self, "n_parties", 0))}

    def restore(self, arrays: Mapping[str, np.ndarray]) -> None:
        self.node.restore(dict(arrays))
        self.releases = [int(c) for c in arrays.get("releases", np.zeros(0, dtype=np.int64))]
        self.n_parties = int(arrays.get("n_parties", 0)) or getattr(self, "n_parties", 0)

    def privacy(self) -> dict[str, Any] | None:
        """What this node's releases cost (summary.json's ``privacy``)."""
        return privacy_summary(self.dp, self.releases, self.dp.planned(self.n_parties), self.node.shapes.size + 1)
