"""gFedNTM under distributed DP: one node's DP-SGD training of the per-document ProdLDA / CombinedTM.

No I/O: the node gets a ``release`` callable that takes (step, Σ of this node's clipped gradients, the number of
documents it sampled, its step generator) and returns the consortium's noisy mean gradient (the aggregator under
mask in production, ``algorithms.dp_sgd`` for the encoding), so the same code runs everywhere.

Each step every node draws a Poisson sample of its documents at rate γ (``dp.sampling_rate``) with a generator
keyed by its own secret (subsampling amplifies privacy only while the sample stays unknown), computes each sampled
document's gradient of its own loss (``prodlda.document_losses``: no batch statistics, so a document's gradient is
its own) with ``torch.func``, clips it to ℓ2 norm C over all parameters, and sums. An epoch is ⌈1/γ⌉ steps (each
document is expected once); the epoch budget is the only stop: early stopping would choose by a loss that is no
release, and every node must end with the same weights. Adam steps the same noisy mean gradient at every node
(post-processing). The node reports its own documents' mean loss, which never leaves it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from fedtopic.neural.ntm_train import (
    NTMModel,
    NTMSettings,
    check_weights,
    eval_loss,
    restore_training,
    training_state,
)
from fedtopic.neural.prodlda import (
    Noise,
    Shapes,
    document_losses,
    draw_noise,
    init_params,
    initial_running,
    unflatten,
)
from fedtopic.neural.require import require_torch
from fedtopic.neural.sync_opt import Adam

torch: Any = require_torch("gFedNTM with distributed DP")

ReleaseFn = Callable[[int, np.ndarray, int, np.random.Generator], np.ndarray]
"""``release(step, clipped gradient sum float64[|W|], sampled documents, generator)`` → the noisy mean gradient."""
CHUNK = 32
"""Documents whose per-document gradients are held at once (CHUNK × |W| float64)."""


def per_document_gradients(flat: np.ndarray, shapes: Shapes, x: np.ndarray, ctx: np.ndarray | None,
                           noise: Noise) -> np.ndarray:
    """float64[B, |W|]: each document's gradient of its own loss (``document_losses``), in the flat order."""
    from torch.func import grad, vmap

    params = {k: torch.from_numpy(v) for k, v in unflatten(np.ascontiguousarray(flat), shapes).items()}

    def one(p: dict[str, Any], xj: Any, cj: Any, eps: Any, keep_h: Any, keep_t: Any) -> Any:
        return document_losses(p, xj[None], None if cj is None else cj[None],
                               Noise(eps[None], keep_h[None], keep_t[None])).sum()

    xs = torch.from_numpy(np.asarray(x, dtype=np.float64))
    cs = None if ctx is None else torch.from_numpy(np.asarray(ctx, dtype=np.float64))
    g = vmap(grad(one), in_dims=(None, 0, None if cs is None else 0, 0, 0, 0))(
        params, xs, cs, noise.eps, noise.keep_hidden, noise.keep_theta)
    return torch.cat([g[name].reshape(xs.shape[0], -1) for name, _ in shapes.params()], dim=1).numpy()


def clipped_gradient_sum(flat: np.ndarray, shapes: Shapes, counts: sp.csr_matrix, ctx: np.ndarray | None,
                         noise: Noise, clip: float) -> np.ndarray:
    """float64[|W|]: Σ_j g_j·min(1, C/‖g_j‖) over the rows of ``counts`` (the sampled documents), CHUNK at a time."""
    total = np.zeros(shapes.size)
    for start in range(0, counts.shape[0], CHUNK):
        stop = min(start + CHUNK, counts.shape[0])
        g = per_document_gradients(flat, shapes, counts[start:stop].toarray(),
                                   None if ctx is None else ctx[start:stop], noise.rows(start, stop))
        norms = np.linalg.norm(g, axis=1)
        total += np.minimum(1.0, clip / np.maximum(norms, 1e-300)) @ g
    return total


class DPNode:
    """Node ℓ of a gFedNTM consortium under distributed DP: its documents, the replicated W and Adam state.

    Its position is (epoch, pos, step) as ``FederatedNode``'s, so a checkpoint can fall mid-epoch."""

    quality_name = "loss"

    def __init__(self, index: int, counts: sp.csr_matrix, ctx: np.ndarray | None, topics: int,
                 settings: NTMSettings, seed: int, rate: float, clip: float, secret: tuple[int, ...]) -> None:
        self.index, self.counts, self.ctx, self.settings, self.seed = index, counts, ctx, settings, seed
        self.rate, self.clip, self._secret = rate, clip, secret
        self.shapes = Shapes(counts.shape[1], topics, 0 if ctx is None else ctx.shape[1], "document")
        self.flat = init_params(self.shapes, np.random.default_rng([seed, 0x57]))
        self.adam, self.running = Adam(self.shapes.size, settings.lr), initial_running(self.shapes)
        self.step = self.epoch = self.pos = 0
        self.epoch_start, self.epoch_first_step = self.flat.copy(), 0
        self.history: list[dict[str, float]] = []
        self.finished = False

    @property
    def n_train(self) -> int:
        return self.counts.shape[0]

    @property
    def best_epoch(self) -> int:
        """The epoch whose weights are kept: the last (no selection by a loss that is no release)."""
        return self.epoch

    def steps_per_epoch(self) -> int:
        """⌈1/γ⌉: each document is sampled about once an epoch."""
        return math.ceil(1.0 / self.rate - 1e-9)

    def train_epoch(self, release: ReleaseFn, after_step: Callable[[], None] | None = None) -> float:
        """The current epoch's remaining DP-SGD steps; returns ‖ΔW‖ / ‖W‖ over the epoch."""
        if self.pos == 0:
            self.epoch_start, self.epoch_first_step = self.flat.copy(), self.step
        for s in range(self.pos, self.steps_per_epoch()):
            rng = np.random.default_rng([self.seed, 0x4450, self.index, self.step, *self._secret])
            idx = np.flatnonzero(rng.random(self.n_train) < self.rate)
            noise = draw_noise(rng, len(idx), self.shapes.topics)
            grad = clipped_gradient_sum(self.flat, self.shapes, self.counts[idx],
                                        None if self.ctx is None else self.ctx[idx], noise, self.clip)
            self.flat = self.adam.step(self.flat, release(self.step, grad, len(idx), rng))
            self.pos, self.step = s + 1, self.step + 1
            if after_step is not None:
                after_step()
        self.epoch, self.pos = self.epoch + 1, 0
        change = float(np.linalg.norm(self.flat - self.epoch_start) / max(np.linalg.norm(self.epoch_start), 1e-300))
        self.history.append({"epoch": self.epoch, "relative_change": change})
        return change

    def end_epoch(self) -> float:
        """This node's documents' mean loss under the new W (stays here); whether the budget or the tolerance
        ends training is recorded in ``finished``."""
        loss = eval_loss(self.flat, self.shapes, self.counts, self.ctx, self.running)
        self.history[-1]["loss"] = loss
        self.finished = (self.epoch >= self.settings.epochs
                         or self.history[-1]["relative_change"] < self.settings.tolerance)
        return loss

    def state(self) -> dict[str, np.ndarray]:
        """W, Adam's moments and count, the position and the history, as arrays (a checkpoint)."""
        return training_state(self)

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        """Back to ``state()``'s arrays; ValueError if they do not fit this node."""
        check_weights(self, arrays)
        restore_training(self, arrays)

    def model(self) -> NTMModel:
        return NTMModel(self.shapes, self.flat.copy(), self.running, list(self.history))
