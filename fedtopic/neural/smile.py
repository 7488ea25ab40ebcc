"""The SMILE mutual-information lower bound of FedNMF+MI (paper Eq. 2; Song & Ermon 2020) and its critic T_θ.

The critic is the paper's feed-forward network with hidden layers of 32 and 256 ReLU units on the pair
(x, y) = (A_i(:, j), H_i(:, j')), x float[V] the document's counts and y float[k] its topic weights. Its first
layer is affine in the concatenation [x; y], so it splits into U·x + G·y + b: the B² pair scores of a batch cost
two small matrix products plus a B×B×32 broadcast, not B² passes over V inputs.

The paper writes clip(v, l, u) = max(min(v, l), u), which swaps min and max (it would return u for every v ≤ u);
we clip to [e^−τ, e^τ] as Song & Ermon define it, i.e. clamp T to [−τ, τ] inside the exponential, and evaluate
log mean exp(·) with logsumexp so large scores cannot overflow. Negatives are the B(B − 1) pairs j ≠ j' of the
batch, positives the B diagonal pairs, as Eq. 2 says.

The parameters travel as one flat float64 vector (``flat`` / ``load_flat``) in a fixed order: U, G, b1, W2, b2,
w3, b3.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fedtopic.neural.require import require_torch

torch: Any = require_torch("the SMILE estimator")

HIDDEN = (32, 256)


def init_critic(vocabulary: int, topics: int, rng: np.random.Generator) -> np.ndarray:
    """θ⁽⁰⁾ as a flat float64 vector: every layer U(−1/√fan_in, 1/√fan_in), PyTorch's default for Linear layers,
    drawn from ``rng`` so every party derives the same θ⁽⁰⁾ from the consortium seed."""
    h1, h2 = HIDDEN
    fan1 = vocabulary + topics
    parts = [
        rng.uniform(-1, 1, (h1, vocabulary)) / math.sqrt(fan1),  # U
        rng.uniform(-1, 1, (h1, topics)) / math.sqrt(fan1),  # G
        rng.uniform(-1, 1, h1) / math.sqrt(fan1),  # b1
        rng.uniform(-1, 1, (h2, h1)) / math.sqrt(h1),  # W2
        rng.uniform(-1, 1, h2) / math.sqrt(h1),  # b2
        rng.uniform(-1, 1, (1, h2)) / math.sqrt(h2),  # w3
        rng.uniform(-1, 1, 1) / math.sqrt(h2),  # b3
    ]
    return np.concatenate([p.reshape(-1) for p in parts])


def critic_size(vocabulary: int, topics: int) -> int:
    """Length of θ for a vocabulary of V words and k topics."""
    h1, h2 = HIDDEN
    return h1 * (vocabulary + topics) + h1 + h2 * h1 + h2 + h2 + 1


class Critic:
    """T_θ's tensors (leaf tensors with gradients, in ``dtype``) from one flat float64 parameter vector."""

    def __init__(self, flat: np.ndarray, vocabulary: int, topics: int, *, dtype: Any = None) -> None:
        if flat.shape != (critic_size(vocabulary, topics),):
            raise ValueError(f"θ has {flat.shape} entries, V={vocabulary}, k={topics} needs "
                             f"{critic_size(vocabulary, topics)}")
        h1, h2 = HIDDEN
        self.shapes = [(h1, vocabulary), (h1, topics), (h1,), (h2, h1), (h2,), (1, h2), (1,)]
        self.dtype = torch.float64 if dtype is None else dtype
        self.params: list[Any] = []
        self.load_flat(flat)

    def load_flat(self, flat: np.ndarray) -> None:
        """Replace θ by the float64 vector ``flat``."""
        out, at = [], 0
        for shape in self.shapes:
            n = int(np.prod(shape))
            out.append(torch.tensor(flat[at:at + n].reshape(shape), dtype=self.dtype, requires_grad=True))
            at += n
        self.params = out

    def flat(self) -> np.ndarray:
        """θ as a float64 vector."""
        return np.concatenate([p.detach().numpy().reshape(-1) for p in self.params]).astype(np.float64, copy=False)

    def pair_scores(self, a: Any, h: Any) -> Any:
        """T float[B,B], T[j, j'] = T_θ(a_j, h_j') for a float[B,V] and h float[B,k] (the critic's type)."""
        u, g, b1, w2, b2, w3, b3 = self.params
        first = (a @ u.T)[:, None, :] + (h @ g.T)[None, :, :] + b1  # [B, B, 32]
        second = torch.relu(torch.relu(first) @ w2.T + b2)  # [B, B, 256]
        return (second @ w3.T)[..., 0] + b3


def smile_lower_bound(scores: Any, tau: float) -> Any:
    """Î_SMILE (Eq. 2) of a B×B score matrix, B ≥ 2: its value is the mean of the diagonal minus log of the mean
    of clip(e^T, e^−τ, e^τ) over the off-diagonal pairs; its gradient is that of the Jensen–Shannon bound on the
    same scores, as in Song & Ermon's released estimator (``js + (dv − js).detach()``).

    Why not Eq. 2's own gradient: Eq. 2 is unbounded above in the diagonal scores (the clip caps only the
    negatives' term), so ascending it drives T, and with it H, to infinity. We saw θ and H reach 1e149 within
    two rounds of FedAdagrad+MI on sms-spam. The JS bound, E_P[−softplus(−T)] − E_Q[softplus(T)], is bounded by 0
    and has the same maximiser family."""
    b = scores.shape[0]
    diag = torch.diagonal(scores)
    off = ~torch.eye(b, dtype=torch.bool)
    dv = diag.mean() - (torch.logsumexp(torch.clamp(scores[off], -tau, tau), dim=0) - math.log(b * (b - 1)))
    js = -torch.nn.functional.softplus(-diag).mean() - torch.nn.functional.softplus(scores[off]).mean()
    return js + (dv - js).detach()
