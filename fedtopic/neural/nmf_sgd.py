"""NMF by projected mini-batch SGD, with the SMILE regulariser (paper Eqs. 1-3, Alg. 1 ClientUpdate).

One client holds its documents A_i (N_i × V counts, rows are the paper's columns A_i(:, j)) and its topic weights
H_i (N_i × k, the paper's H_i transposed), which never leave it. ``client_update`` runs E local epochs from the
global (W, θ): for each mini-batch b of B documents, with every gradient taken at the same point (Alg. 1 lines
5-7, a simultaneous step),

    L = −λ·Î_SMILE(θ; A_b, H_b) + (1/B)·Σ_{j∈b} ‖a_j − W h_j‖²            (Eq. 3)
    W ← Π(W − η ∇_W L),   H_b ← Π(H_b − η·B·∇_{H_b} L),   θ ← θ + η ∇_θ Î   (Π = max(·, 0))

The factor B on H's step is our choice, not the paper's letter. Each h_j is in one term of the batch mean, so
∇_{h_j} L is 1/B of the gradient of the document's own term, while W collects B terms per step and N_i/B steps
per epoch; with one η for both, H barely moves from its initialisation and every topic converges to the mean
document (on sms-spam, K = 50, 20 epochs: topic diversity 0.04 and macro-F1 0.53 with the letter of Alg. 1;
0.46 and 0.92 with the factor, at η = 0.1). With the factor, h_j steps on its own term, i.e. exactly the
stochastic gradient of Eq. 1 restricted to h_j, which is what a per-document SGD on H means.

Step caps (ours; the paper tuned η per dataset and says nothing about divergence): each block steps by
min(η, t*)·g, t* the exact minimiser of its reconstruction quadratic along its gradient g
(t*_W = B‖G‖²_F / (2‖H_b Gᵀ‖²_F); per document t*_j = ‖d_j‖² / (2‖W d_j‖²), d_j = B·∇_{h_j}L). A step
beyond t* is where SGD on a quadratic starts to overshoot, and beyond 2t* it increases the loss: with the cap,
documents with many repeated words (spam messages) cannot blow the factors up, and where η is small the cap
does not bind (FedAvg on sms-spam, k = 20, η = 0.05 went to NaN in round 2 without it).

Non-negativity: projected SGD, i.e. clamping at zero after every step. Projection is the standard way to keep
an NMF constraint under first-order updates (it is the projected-gradient method of Lin 2007 on mini-batches):
it leaves the objective of Eq. 1 unchanged and keeps exact zeros, which is what makes NMF topics sparse. A
parameterisation (W = softplus(U) or U²) changes the loss landscape, shrinks gradients near zero (so small
weights never reach zero) and needs a different learning rate; the benchmark ``bench_nmf.py`` compares the
projected loss with scikit-learn's coordinate-descent NMF on the same matrix (docs/RESULTS.md).

A batch of one document has no negative pair, so its MI term is skipped (Eq. 2 needs B ≥ 2). λ = 0 skips the
critic altogether (plain NMF+SGD / FedNMF). Everything is float64, so the same seed gives the same bits.
Batch order: epoch e of client c shuffles with a generator seeded by (seed, c, e), e counted over the client's
whole training, so one client under FedAvg with C = 1 sees exactly the batches of centralised NMF+SGD.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from fedtopic.errors import TrainingError
from fedtopic.neural.require import require_torch

torch: Any = require_torch("NMF by SGD")

from fedtopic.neural.smile import Critic, smile_lower_bound  # noqa: E402  (after the one clear torch check)

ASSUMED_DOC_LENGTH = 10.0  # tokens per document behind the public W⁽⁰⁾ scale (short texts, paper Table II)


@dataclass(frozen=True)
class SGDSettings:
    """η (lr), B (batch), λ (mi_weight) and τ of Eqs. 2-3."""

    lr: float
    batch: int
    mi_weight: float
    tau: float = 5.0


def init_w(vocabulary: int, topics: int, rng: np.random.Generator) -> np.ndarray:
    """W⁽⁰⁾ float64[V,k] = |N(0,1)|·√(m/k) with m = ASSUMED_DOC_LENGTH / V, scikit-learn's "random" NMF
    initialisation with a public stand-in for the mean count (the true mean is no party's to publish)."""
    return np.abs(rng.standard_normal((vocabulary, topics))) * np.sqrt(ASSUMED_DOC_LENGTH / vocabulary / topics)


def init_h(counts: sp.csr_matrix, topics: int, rng: np.random.Generator) -> np.ndarray:
    """H_i⁽⁰⁾ float64[N_i,k] = |N(0,1)|·√(mean(A_i)/k): scikit-learn's "random" initialisation on the client's
    own matrix (an all-zero matrix gets the public scale of ``init_w``)."""
    n, v = counts.shape
    mean = counts.sum() / max(n * v, 1) if counts.nnz else ASSUMED_DOC_LENGTH / v
    return np.abs(rng.standard_normal((n, topics))) * np.sqrt(mean / topics)


def reconstruction_loss(counts: sp.csr_matrix, w: np.ndarray, h: np.ndarray, *, chunk: int = 65_536) -> float:
    """‖A − H Wᵀ‖²_F (Eq. 1) for A float[N,V] sparse, W float64[V,k], H float64[N,k], without forming H Wᵀ:
    ‖A‖² − 2⟨A, H Wᵀ⟩ + ‖H Wᵀ‖², the cross term over A's nonzeros only (h_j · w_v for each, ``chunk`` at a
    time) and the last as trace((HᵀH)(WᵀW)). O(nnz·k + (N + V)·k²) instead of N·V·k: a client's loss at
    V = 15,184 and k = 200 took 130 ms through the dense product."""
    a = counts.tocoo(copy=True)
    a.sum_duplicates()
    cross = 0.0
    for at in range(0, a.nnz, chunk):
        rows, cols, vals = a.row[at:at + chunk], a.col[at:at + chunk], a.data[at:at + chunk]
        cross += float(vals @ np.einsum("ij,ij->i", h[rows], w[cols]))
    return float(a.data @ a.data) - 2.0 * cross + float(np.sum((h.T @ h) * (w.T @ w)))


class NMFClient:
    """One client's documents A_i, its private H_i and the ClientUpdate of Alg. 1."""

    def __init__(self, counts: sp.csr_matrix, topics: int, *, index: int, seed: int) -> None:
        self.counts = sp.csr_matrix(counts, dtype=np.float64)
        self.index = index
        self.seed = seed
        self.h = init_h(self.counts, topics, np.random.default_rng([seed, index, 0x48]))
        self.epochs_done = 0

    @property
    def n_docs(self) -> int:
        return int(self.counts.shape[0])

    def client_update(self, w: np.ndarray, theta: np.ndarray | None, settings: SGDSettings,
                      epochs: int) -> tuple[np.ndarray, np.ndarray | None]:
        """(W_i, θ_i) after ``epochs`` local epochs from the global (W float64[V,k], θ or None when λ = 0);
        H_i is updated in place."""
        v, k = w.shape
        wt = torch.tensor(w, dtype=torch.float64)
        ht = torch.from_numpy(self.h)  # shares memory: the projected writes below update self.h
        critic = Critic(theta, v, k) if settings.mi_weight > 0 and theta is not None else None
        grad_w, square = torch.empty((v, k), dtype=torch.float64), torch.empty((v, k), dtype=torch.float64)
        for _ in range(epochs):
            order = np.random.default_rng([self.seed, self.index, self.epochs_done]).permutation(self.n_docs)
            for start in range(0, self.n_docs, settings.batch):
                idx = order[start:start + settings.batch]
                self._step(wt, ht, critic, idx, settings, grad_w, square)
            # a non-finite value never leaves W or H once it is in, so one check per epoch catches every one
            if not (torch.isfinite(wt).all() and torch.isfinite(ht).all()):
                raise TrainingError(f"client {self.index}: SGD produced a non-finite W or H (epoch "
                                    f"{self.epochs_done}); lower --opt lr")
            self.epochs_done += 1
        return wt.numpy().copy(), (critic.flat() if critic is not None else theta)

    def _step(self, wt: Any, ht: Any, critic: Critic | None, idx: np.ndarray, s: SGDSettings, grad_w: Any,
              square: Any) -> None:
        """One simultaneous projected step of W, H_b (and θ) on the batch ``idx``. The reconstruction term's
        gradients are closed-form (R = A_b − H_b Wᵀ: ∇_W = −(2/B) Rᵀ H_b, ∇_{H_b} = −(2/B) R W); autograd runs
        only through the SMILE term, which involves H_b and θ but not W. ``grad_w``, ``square`` float64[V,k]:
        scratch for ∇_W and its square, so no W-sized tensor is allocated per step (the page faults of the four
        it made were a fifth of the step at V = 15,184, k = 200); the same operations in the same order, the
        same bits."""
        b = len(idx)
        rows = torch.from_numpy(idx)
        a = torch.from_numpy(self.counts[idx].toarray())
        hb = ht[rows]
        resid = a - hb @ wt.T  # [B, V]
        torch.matmul(resid.T, hb, out=grad_w).mul_(-2.0 / b)  # [V, k]
        d = -2.0 * (resid @ wt)  # each h_j's own-term gradient, B·∇_{h_j}L  [B, k]
        if critic is not None and b >= 2:
            h = hb.clone().requires_grad_(True)
            mi = smile_lower_bound(critic.pair_scores(a, h), s.tau)
            grad_h_mi, *grads = torch.autograd.grad(mi, [h, *critic.params])
            d = d - (b * s.mi_weight) * grad_h_mi  # L = … − λ·Î
            with torch.no_grad():
                for p, g in zip(critic.params, grads):
                    p.add_(s.lr * g)  # θ ascends Î (Alg. 1 line 7)
        with torch.no_grad():
            # step caps: the exact minimiser along the gradient of each block's reconstruction quadratic
            wd = d @ wt.T  # [B, V]
            s_h = (d * d).sum(dim=1) / torch.clamp(2.0 * (wd * wd).sum(dim=1), min=1e-300)
            hg = (-2.0 / b) * ((hb @ hb.T) @ resid)  # = H_b ∇_Wᵀ [B, V], through the B×B Gram matrix
            s_w = b * float(torch.mul(grad_w, grad_w, out=square).sum()) / max(2.0 * float((hg * hg).sum()),
                                                                                  1e-300)
            ht[rows] = torch.clamp(hb - torch.clamp(s_h, max=s.lr)[:, None] * d, min=0.0)
            wt.sub_(grad_w.mul_(min(s.lr, s_w))).clamp_(min=0.0)
