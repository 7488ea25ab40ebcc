"""gFedNTM's Sync-Opt step (paper Eqs. 1-3) made exact for BatchNorm: a node's side, phase by phase.

At step e every node ℓ holds the same W⁽ᵉ⁾ and its own mini-batch of n_ℓ documents; the step must equal one
centralised step on the union batch (the paper's §4.1 claim, and our equivalence test). Without BatchNorm,
the union's mean-loss gradient is Σ n_ℓ G_ℓ / Σ n_ℓ (Eq. 2). ProdLDA has three BatchNorm layers whose batch
statistics couple every document of the batch, so a node's G_ℓ on its own statistics is not a share of the
union's gradient. We federate the statistics and their gradients instead, five sums per step, each through the
aggregator (only sums leave a node; ``mask`` protects them like any dense update):

1. ``sums_encoder``: n_ℓ, Σμ_pre, Σμ_pre², Σlogσ²_pre, Σ(logσ²_pre)² → everyone: the encoder layers' mean/var.
2. ``sums_decoder(S₁)``: Σ(θβ), Σ(θβ)² with the global encoder statistics → the decoder layer's mean/var.
3. ``grad_decoder_stats(S₂)``: ∂L_ℓ/∂S₂ (L_ℓ the node's share of the union's mean loss).
4. ``grad_encoder_stats(g_S₂)``: ∂/∂S₁ of L_ℓ + g_P₂·P₂_ℓ, with g_P₂ the global gradient pulled back onto the
   decoder sums; and, from the same backward pass, the decoder's part of G_ℓ (below).
5. ``gradient(g_S₁)``: the encoder's part of G_ℓ = ∂/∂W of L_ℓ + g_P₂·P₂_ℓ + g_P₁·P₁_ℓ; Σ_ℓ G_ℓ is exactly
   d(union loss)/dW by the chain rule (the statistics are functions of the sums P, the sums of every node's rows).

G_ℓ is sent in two parts. The decoder's parameters (β, σ₀²: the flat vector's tail, ``decoder_size``) do not
reach P₁ (it is computed before them), so their part of G_ℓ is ∂/∂(β, σ₀²) of L_ℓ + g_P₂·P₂_ℓ, final after
phase 3's sum: it can travel while phases 4 and 5 run (``ntm_train``: a second, overlapping exchange). The
encoder's part needs g_P₁ and closes the step. Same graph, same operations: the two parts are the bits the
whole gradient had.

Every phase's message is a dense float64 vector; the running statistics are updated from the same global
statistics at every node, so evaluation-mode BatchNorm also matches the centralised model.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedtopic.neural.prodlda import (
    Noise,
    Shapes,
    Stats,
    batch_norm,
    decode_pre,
    doc_losses,
    encode,
    flat_gradient,
    leaves,
)
from fedtopic.neural.require import require_torch

torch: Any = require_torch("gFedNTM")


DECODER = ("beta", "prior_var")
"""The parameters after the encoder, the tail of the flat vector (``Shapes.params``' order)."""


def decoder_size(shapes: Shapes) -> int:
    """Length of the decoder's part of the flat vector (its tail): β and σ₀²."""
    names = [name for name, _ in shapes.params()]
    assert tuple(names[-len(DECODER):]) == DECODER, names
    return sum(int(np.prod(shape)) for name, shape in shapes.params() if name in DECODER)


def stats_from_sums(total: np.ndarray, width: int, n: float) -> list[tuple[Any, Any]]:
    """[(mean, biased var), …] of each layer from [Σy, Σy², …] float64[2·width·layers] over n documents."""
    out = []
    for at in range(0, len(total), 2 * width):
        s1 = torch.tensor(total[at:at + width])
        s2 = torch.tensor(total[at + width:at + 2 * width])
        mean = s1 / n
        out.append((mean.clone().requires_grad_(True), (s2 / n - mean * mean).clone().requires_grad_(True)))
    return out


def pull_back(g_mean: np.ndarray, g_var: np.ndarray, mean: np.ndarray, n: float) -> np.ndarray:
    """[g_Σy ; g_Σy²] from the gradients of a layer's mean and variance (mean = Σy/n, var = Σy²/n − mean²)."""
    return np.concatenate([g_mean / n - 2.0 * mean * g_var / n, g_var / n])


class NodeStep:
    """One node's share of one Sync-Opt step; call the phases in order."""

    def __init__(self, flat: np.ndarray, shapes: Shapes, x: np.ndarray, ctx: np.ndarray | None, noise: Noise,
                 union_size: int) -> None:
        self.shapes, self.union = shapes, float(union_size)
        self.p = leaves(np.ascontiguousarray(flat, dtype=np.float64), shapes)  # not written
        self.x = torch.from_numpy(np.asarray(x, dtype=np.float64))
        self.ctx = None if ctx is None else torch.from_numpy(np.asarray(ctx, dtype=np.float64))
        self.noise = noise
        self.mu_pre, self.lv_pre = encode(self.p, self.x, self.ctx, noise.keep_hidden)
        k = shapes.topics
        self.p1 = torch.cat([self.mu_pre.sum(0), (self.mu_pre ** 2).sum(0), self.lv_pre.sum(0),
                             (self.lv_pre ** 2).sum(0)])
        assert self.p1.shape == (4 * k,)

    def sums_encoder(self) -> np.ndarray:
        """Phase 1: [Σμ_pre, Σμ_pre², Σlv_pre, Σlv_pre²] float64[4K]."""
        return self.p1.detach().numpy().copy()

    def sums_decoder(self, enc_total: np.ndarray) -> np.ndarray:
        """Phase 2: [Σθβ, Σ(θβ)²] float64[2V] under the global encoder statistics."""
        self.s1 = stats_from_sums(enc_total, self.shapes.topics, self.union)
        dec_pre, (mu, lv) = decode_pre(self.p, batch_norm(self.mu_pre, self.s1[0]),
                                       batch_norm(self.lv_pre, self.s1[1]),
                                       self.noise)
        self.dec_pre, self.mu, self.lv = dec_pre, mu, lv
        self.p2 = torch.cat([dec_pre.sum(0), (dec_pre ** 2).sum(0)])
        return self.p2.detach().numpy().copy()

    def grad_decoder_stats(self, dec_total: np.ndarray) -> np.ndarray:
        """Phase 3: ∂L_ℓ/∂(mean, var) of the decoder layer, float64[2V]; L_ℓ = this node's documents' loss / N."""
        (self.s2,) = stats_from_sums(dec_total, self.shapes.vocabulary, self.union)
        self.loss = doc_losses(self.p, self.x, self.dec_pre, self.s2, self.mu, self.lv).sum() / self.union
        g = torch.autograd.grad(self.loss, list(self.s2), retain_graph=True, allow_unused=True,
                                materialize_grads=True)
        return torch.cat(g).detach().numpy()

    def grad_encoder_stats(self, g_dec_total: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Phase 4: (∂/∂(S₁) of L_ℓ + g_P₂·P₂_ℓ float64[4K], the decoder's part of G_ℓ float64[decoder_size])."""
        v = self.shapes.vocabulary
        mean2 = self.s2[0].detach().numpy()
        self.g_p2 = torch.from_numpy(pull_back(g_dec_total[:v], g_dec_total[v:], mean2, self.union))
        q = self.loss + (self.g_p2 * self.p2).sum()
        decoder = [self.p[name] for name in DECODER]
        g = torch.autograd.grad(q, [*self.s1[0], *self.s1[1], *decoder], retain_graph=True, allow_unused=True,
                                materialize_grads=True)
        return (torch.cat(g[:4]).detach().numpy(),
                np.concatenate([t.detach().reshape(-1).numpy() for t in g[4:]]))

    def gradient(self, g_enc_total: np.ndarray) -> np.ndarray:
        """Phase 5: the encoder's part of G_ℓ, float64[|W| − decoder_size] (the flat vector's head); with phase 4's
        tail, Σ_ℓ G_ℓ = d(union mean loss)/dW."""
        k = self.shapes.topics
        parts = []
        for layer in range(2):
            g = g_enc_total[2 * k * layer:2 * k * (layer + 1)]
            parts.append(pull_back(g[:k], g[k:], self.s1[layer][0].detach().numpy(), self.union))
        g_p1 = torch.from_numpy(np.concatenate(parts))
        q = self.loss + (self.g_p2 * self.p2).sum() + (g_p1 * self.p1).sum()
        return flat_gradient(q, {name: t for name, t in self.p.items() if name not in DECODER})

    def batch_stats(self) -> Stats:
        """The union batch's statistics of the three layers (for the running averages)."""
        return Stats(tuple(t.detach() for t in self.s1[0]), tuple(t.detach() for t in self.s1[1]),  # type: ignore[arg-type]
                     tuple(t.detach() for t in self.s2))  # type: ignore[arg-type]


class Adam:
    """Adam (Kingma & Ba) as torch.optim.Adam computes it, on a flat float64 vector, applied identically by every
    node to the same aggregated gradient (CTM's settings: lr 2e-3, betas 0.99/0.99, eps 1e-8)."""

    def __init__(self, size: int, lr: float = 2e-3, betas: tuple[float, float] = (0.99, 0.99),
                 eps: float = 1e-8) -> None:
        self.lr, self.b1, self.b2, self.eps = lr, betas[0], betas[1], eps
        self.m, self.v, self.t = np.zeros(size), np.zeros(size), 0

    def step(self, w: np.ndarray, grad: np.ndarray) -> np.ndarray:
        """W after one step on ∇ (both float64[n]); the moments are updated in place."""
        from fedtopic.neural.adam_kernel import adam_update

        self.t += 1
        return adam_update(np.ascontiguousarray(w, dtype=np.float64), np.ascontiguousarray(grad, dtype=np.float64),
                           self.m, self.v, self.lr, self.b1, self.b2, self.eps, 1 - self.b1 ** self.t,
                           1 - self.b2 ** self.t)
