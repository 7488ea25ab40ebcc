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
critic altogether (plain NMF+SGD / FedNMF).

Precision: a client computes in ``precision`` (float32 by default for the algorithms, float64 here): W, H_i, the
batch and the critic are held in that type, while W and θ travel, and the server's rule runs, in float64. The
step is four products of a B × V block with the V × k weights, and at float64 they already ran at this core's
peak: float32 halves their time (docs/results/fednmf.md, "FedNMF"). Either way one thread computes in a fixed order,
so the same seed gives the same bits. (Runs recorded before this step took its present form differ from
float64's in the last bits: W's step rounds differently now that ∇_W is not formed; see ``_step``.)

Batch order: epoch e of client c shuffles with a generator seeded by (seed, c, e), e counted over the client's
whole training, so one client under FedAvg with C = 1 sees exactly the batches of centralised NMF+SGD.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from fedtopic.errors import TrainingError
from fedtopic.neural.dense_rows import dense_rows
from fedtopic.neural.require import require_torch

torch: Any = require_torch("NMF by SGD")

from fedtopic.neural.smile import Critic, smile_lower_bound  # noqa: E402  (after the one clear torch check)

ASSUMED_DOC_LENGTH = 10.0  # tokens per document behind the public W⁽⁰⁾ scale (short texts, paper Table II)
PRECISIONS = {"float32": torch.float32, "float64": torch.float64}


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
    """‖A − H Wᵀ‖²_F (Eq. 1) for A float[N,V] sparse, W float64[V,k], H float[N,k], without forming H Wᵀ:
    ‖A‖² − 2⟨A, H Wᵀ⟩ + ‖H Wᵀ‖², the cross term over A's nonzeros only (h_j · w_v for each, ``chunk`` at a
    time) and the last as trace((HᵀH)(WᵀW)). O(nnz·k + (N + V)·k²) instead of N·V·k: a client's loss at
    V = 15,184 and k = 200 took 130 ms through the dense product."""
    h = np.asarray(h, dtype=np.float64)
    a = counts.tocoo(copy=True)
    a.sum_duplicates()
    cross = 0.0
    for at in range(0, a.nnz, chunk):
        rows, cols, vals = a.row[at:at + chunk], a.col[at:at + chunk], a.data[at:at + chunk]
        cross += float(vals @ np.einsum("ij,ij->i", h[rows], w[cols]))
    ht, wt = torch.from_numpy(h), torch.from_numpy(np.asarray(w, dtype=np.float64))
    # torch's one thread: numpy's BLAS would start its own pool beside every party's thread
    return float(a.data @ a.data) - 2.0 * cross + float(((ht.T @ ht) * (wt.T @ wt)).sum())


class NMFClient:
    """One client's documents A_i, its private H_i and the ClientUpdate of Alg. 1."""

    def __init__(self, counts: sp.csr_matrix, topics: int, *, index: int, seed: int,
                 precision: str = "float64") -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
        self.dtype = PRECISIONS[precision]
        self.counts = sp.csr_matrix(counts, dtype=np.float64)
        # the batches' rows in the working type (counts are integers, exact in float32 below 2^24)
        self._rows = self.counts if precision == "float64" else sp.csr_matrix(counts, dtype=np.float32)
        self.index = index
        self.seed = seed
        self.h = init_h(self.counts, topics, np.random.default_rng([seed, index, 0x48])).astype(precision)
        self.epochs_done = 0

    @property
    def n_docs(self) -> int:
        return int(self.counts.shape[0])

    def client_update(self, w: np.ndarray, theta: np.ndarray | None, settings: SGDSettings,
                      epochs: int) -> tuple[np.ndarray, np.ndarray | None]:
        """(W_i float64[V,k], θ_i) after ``epochs`` local epochs from the global (W float64[V,k], θ or None when
        λ = 0); H_i is updated in place."""
        v, k = w.shape
        wt = torch.tensor(w, dtype=self.dtype)
        ht = torch.from_numpy(self.h)  # shares memory: the projected writes below update self.h
        critic = Critic(theta, v, k, dtype=self.dtype) if settings.mi_weight > 0 and theta is not None else None
        batch = np.empty((min(settings.batch, self.n_docs), v), dtype=self.h.dtype)  # A_b, refilled each step
        for _ in range(epochs):
            order = np.random.default_rng([self.seed, self.index, self.epochs_done]).permutation(self.n_docs)
            for start in range(0, self.n_docs, settings.batch):
                idx = order[start:start + settings.batch]
                self._step(wt, ht, critic, idx, settings, batch)
            # a non-finite value never leaves W or H once it is in, so one check per epoch catches every one
            if not (torch.isfinite(wt).all() and torch.isfinite(ht).all()):
                raise TrainingError(f"client {self.index}: SGD produced a non-finite W or H (epoch "
                                    f"{self.epochs_done}); lower --opt lr")
            self.epochs_done += 1
        return wt.numpy().astype(np.float64), (critic.flat() if critic is not None else theta)

    def h_step(self, w: np.ndarray, lr: float, *, chunk: int = 256) -> None:
        """One projected step of every h_j on its own term of Eq. 1 against ``w`` float64[V,k], capped as in
        ``_step`` (distributed DP's rounds: H_i trains here while W trains on the consortium's noisy sum)."""
        if not self.n_docs:
            return
        wt = torch.tensor(w, dtype=self.dtype)
        ht = torch.from_numpy(self.h)
        batch = np.empty((min(chunk, self.n_docs), w.shape[0]), dtype=self.h.dtype)
        for start in range(0, self.n_docs, chunk):
            idx = np.arange(start, min(start + chunk, self.n_docs))
            dense_rows(self._rows.indptr, self._rows.indices, self._rows.data, idx, batch)
            a, hb = torch.from_numpy(batch[:len(idx)]), ht[start:start + len(idx)]
            d = -2.0 * (torch.addmm(a, hb, wt.T, alpha=-1.0) @ wt)  # each h_j's own-term gradient [b, k]
            wd = d @ wt.T
            s_h = (d * d).sum(dim=1) / torch.clamp(2.0 * (wd * wd).sum(dim=1), min=torch.finfo(self.dtype).tiny)
            ht[start:start + len(idx)] = torch.clamp(hb - torch.clamp(s_h, max=lr)[:, None] * d, min=0.0)
        if not torch.isfinite(ht).all():
            raise TrainingError(f"client {self.index}: H's step produced a non-finite value; lower --opt lr")

    def _step(self, wt: Any, ht: Any, critic: Critic | None, idx: np.ndarray, s: SGDSettings,
              batch: np.ndarray) -> None:
        """One simultaneous projected step of W, H_b (and θ) on the batch ``idx``, every gradient at the same point.

        The reconstruction term's gradients are closed-form (R = A_b − H_b Wᵀ [B,V]: ∇_W = −(2/B) Rᵀ H_b,
        B·∇_{h_j}L = −2 (R W)_j); autograd runs only through the SMILE term, which involves H_b and θ but not W.
        ∇_W is never formed: W's step is one product accumulated into W (W += (2t/B) Rᵀ H_b, then clamped), and
        its cap needs only B×B matrices, ‖∇_W‖² = (2/B)²⟨R Rᵀ, Γ⟩ and ‖H_b ∇_Wᵀ‖² = (2/B)²⟨R Rᵀ, Γ²⟩ with
        Γ = H_b H_bᵀ. So W (V×k) is the one large array the step touches, by four products with B×V or B×k
        blocks, and no V×k scratch pushes it out of cache. ``batch`` float[≥B, V]: scratch for A_b."""
        b = len(idx)
        rows = torch.from_numpy(idx)
        dense_rows(self._rows.indptr, self._rows.indices, self._rows.data, idx, batch)
        a = torch.from_numpy(batch[:b])
        hb = ht[rows]
        resid = torch.addmm(a, hb, wt.T, alpha=-1.0)  # R = A_b − H_b Wᵀ [B, V]
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
            s_h = (d * d).sum(dim=1) / torch.clamp(2.0 * (wd * wd).sum(dim=1), min=torch.finfo(self.dtype).tiny)
            rr, gram = (resid @ resid.T).double(), (hb @ hb.T).double()  # [B, B]
            s_w = b * float((rr * gram).sum()) / max(2.0 * float((rr * (gram @ gram)).sum()), 1e-300)
            ht[rows] = torch.clamp(hb - torch.clamp(s_h, max=s.lr)[:, None] * d, min=0.0)
            wt.addmm_(resid.T, hb, alpha=2.0 * min(s.lr, s_w) / b).clamp_(min=0.0)  # W − t ∇_W, projected
