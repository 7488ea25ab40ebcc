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
encoder's part needs g_P₁ and closes the step.

Every phase's message is a dense float64 vector, except that the gradient's two parts travel in float32 by default
(``NTMSettings.wire``; the sums are rounded, every node applies the same bits); the running statistics are updated
from the same global statistics at every node, so evaluation-mode BatchNorm also matches the centralised model.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    """One node's share of one Sync-Opt step; call the phases in order.

    Each part of the step's graph is differentiated once, from cut points (tensors detached and made leaves):
    the encoder up to its heads (μ_pre, logσ²_pre) of ``x``; the decoder path from those heads through BN₁, z, θ
    to θβ; the loss from θβ, μ and logσ². Phase 3 differentiates the loss; phase 4 carries its gradient, plus
    the g_P₂ terms, back along the decoder path; phase 5 adds the g_P₁ terms and differentiates the encoder.
    Differentiating the whole objective at each phase instead would do about twice the backward work."""

    def __init__(self, flat: np.ndarray, shapes: Shapes, x: np.ndarray, ctx: np.ndarray | None, noise: Noise,
                 union_size: int) -> None:
        self.shapes, self.union = shapes, float(union_size)
        self.p = leaves(np.ascontiguousarray(flat, dtype=np.float64), shapes)  # not written
        self.x = torch.from_numpy(np.asarray(x, dtype=np.float64))
        self.ctx = None if ctx is None else torch.from_numpy(np.asarray(ctx, dtype=np.float64))
        self.noise = noise
        self.mu_pre, self.lv_pre = encode(self.p, self.x, self.ctx, noise.keep_hidden)
        self.heads = (self.mu_pre.detach().requires_grad_(True), self.lv_pre.detach().requires_grad_(True))

    def sums_encoder(self) -> np.ndarray:
        """Phase 1: P₁ = [Σμ_pre, Σμ_pre², Σlv_pre, Σlv_pre²] float64[4K]."""
        mu, lv = (h.detach() for h in self.heads)
        return torch.cat([mu.sum(0), (mu ** 2).sum(0), lv.sum(0), (lv ** 2).sum(0)]).numpy()

    def sums_decoder(self, enc_total: np.ndarray) -> np.ndarray:
        """Phase 2: P₂ = [Σθβ, Σ(θβ)²] float64[2V] under the global encoder statistics."""
        self.s1 = stats_from_sums(enc_total, self.shapes.topics, self.union)
        dec_pre, (mu, lv) = decode_pre(self.p, batch_norm(self.heads[0], self.s1[0]),
                                       batch_norm(self.heads[1], self.s1[1]), self.noise)
        self.dec_pre, self.mu, self.lv = dec_pre, mu, lv
        d = dec_pre.detach()
        return torch.cat([d.sum(0), (d ** 2).sum(0)]).numpy()

    def grad_decoder_stats(self, dec_total: np.ndarray) -> np.ndarray:
        """Phase 3: ∂L_ℓ/∂(mean, var) of the decoder layer, float64[2V]; L_ℓ = this node's documents' loss / N.
        The same pass keeps ∂L_ℓ/∂(θβ), ∂L_ℓ/∂μ, ∂L_ℓ/∂logσ² (the KL term's) and ∂L_ℓ/∂σ₀² for phase 4."""
        (self.s2,) = stats_from_sums(dec_total, self.shapes.vocabulary, self.union)
        dec, mu, lv = (t.detach().requires_grad_(True) for t in (self.dec_pre, self.mu, self.lv))
        loss = doc_losses(self.p, self.x, dec, self.s2, mu, lv).sum() / self.union
        g = torch.autograd.grad(loss, [*self.s2, dec, mu, lv, self.p["prior_var"]], materialize_grads=True)
        self.g_loss = g[2:]
        return torch.cat(g[:2]).numpy()

    def grad_encoder_stats(self, g_dec_total: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Phase 4: (∂/∂(S₁) of L_ℓ + g_P₂·P₂_ℓ float64[4K], the decoder's part of G_ℓ float64[decoder_size]).

        ∂(g_P₂·P₂_ℓ)/∂(θβ) = a + 2 b ⊙ θβ for g_P₂ = [a; b] (P₂ = [Σθβ, Σ(θβ)²]), added to phase 3's ∂L_ℓ/∂(θβ)
        and carried with the KL term's ∂/∂μ, ∂/∂logσ² back to S₁, β and the encoder heads (kept for phase 5)."""
        v = self.shapes.vocabulary
        g_p2 = pull_back(g_dec_total[:v], g_dec_total[v:], self.s2[0].detach().numpy(), self.union)
        a, b = torch.from_numpy(g_p2[:v]), torch.from_numpy(g_p2[v:])
        g_dec, g_mu, g_lv, g_prior = self.g_loss
        g_dec = g_dec + a + 2.0 * b * self.dec_pre.detach()
        g = torch.autograd.grad([self.dec_pre, self.mu, self.lv],
                                [*self.s1[0], *self.s1[1], self.p["beta"], *self.heads],
                                grad_outputs=[g_dec, g_mu, g_lv], materialize_grads=True)
        self.g_heads = g[5:]
        return torch.cat(g[:4]).numpy(), np.concatenate([g[4].reshape(-1).numpy(), g_prior.reshape(-1).numpy()])

    def gradient(self, g_enc_total: np.ndarray) -> np.ndarray:
        """Phase 5: the encoder's part of G_ℓ, float64[|W| − decoder_size] (the flat vector's head); with phase 4's
        tail, Σ_ℓ G_ℓ = d(union mean loss)/dW. ∂(g_P₁·P₁_ℓ)/∂(head) = g₁ + 2 g₂ ⊙ head for each head's [g₁; g₂]."""
        k = self.shapes.topics
        grads = []
        for layer in range(2):
            g = g_enc_total[2 * k * layer:2 * k * (layer + 1)]
            g_p1 = torch.from_numpy(pull_back(g[:k], g[k:], self.s1[layer][0].detach().numpy(), self.union))
            grads.append(self.g_heads[layer] + g_p1[:k] + 2.0 * g_p1[k:] * self.heads[layer].detach())
        encoder = [t for name, t in self.p.items() if name not in DECODER]
        g = torch.autograd.grad([self.mu_pre, self.lv_pre], encoder, grad_outputs=grads, materialize_grads=True)
        return np.concatenate([t.reshape(-1).numpy() for t in g])

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
        return self.step_parts(w, [grad])

    def step_parts(self, w: np.ndarray, parts: Sequence[np.ndarray]) -> np.ndarray:
        """``step`` on the gradient given as consecutive parts (their lengths summing to n), without joining them:
        gFedNTM's gradient arrives as two sums, and one copy of |W| floats per node per step is as long as the
        update itself. A float32 part (a sum carried in float32) is read as it is: the kernel widens each value
        exactly, so the step is the one on the part widened first, without that copy."""
        from fedtopic.neural.adam_kernel import adam_update

        w = np.ascontiguousarray(w, dtype=np.float64)
        if sum(len(p) for p in parts) != w.size:
            raise ValueError(f"gradient parts of {[len(p) for p in parts]} values for {w.size} weights")
        self.t += 1
        out, at = np.empty_like(w), 0
        for part in parts:
            end = at + len(part)
            g = np.ascontiguousarray(part, dtype=part.dtype if part.dtype in _EXACT else np.float64)
            adam_update(w[at:end], g, self.m[at:end], self.v[at:end], self.lr, self.b1, self.b2, self.eps,
                        1 - self.b1 ** self.t, 1 - self.b2 ** self.t, out[at:end])
            at = end
        return out


_EXACT = (np.dtype(np.float64), np.dtype(np.float32))
"""Gradient dtypes Adam's kernel reads directly (every float32 is exactly a float64)."""
