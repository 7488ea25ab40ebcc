"""FedNMF with distributed differential privacy (``--opt dp.distributed=true``): DP-SGD across the consortium,
with only the masked sum of the parties' noisy releases ever seen (beyond the FedNMF+MI paper).

The paper's ClientUpdate runs local epochs, whose result depends on every document at once: no per-document bound
holds for it. Under DP every round is one step of DP-SGD (Abadi et al. 2016) taken by the consortium together
(the release, its decoding and its accounting: ``algorithms.dp_sgd``):

- each party draws a Poisson sample of its documents at rate γ (``dp.sampling_rate``); document j's gradient of
  Eq. 1 in W is the rank-one g_j = −2 r_j h_jᵀ (r_j = a_j − W h_j, ‖g_j‖_F = 2‖r_j‖‖h_j‖), clipped to norm C
  (``dp.clip``);
- the sum over the consortium (every party sends a share each round, selected to train or not) is the release:
  the mean clipped gradient Ĝ/ñ steps W by the server rule with pseudo-gradient Δ = −lr·Ĝ/ñ, projected on W ≥ 0;
- H_i never leaves its party: each round every h_j takes one projected step on its own term against the new W
  (Eq. 1 restricted to h_j, as in ``nmf_sgd``), which no release depends on except through g_j of a sampled j.

The SMILE term (λ > 0) is refused under DP: its critic θ would need its own clipped release. The
colluding-parties assumption of distributed DP holds (docs/privacy.md §3b).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from fedtopic.algorithms.base import OptionValue
from fedtopic.algorithms.dp_sgd import DPSGD
from fedtopic.errors import ConfigError


def nmf_dp(options: Mapping[str, OptionValue]) -> DPSGD | None:
    """The mechanism, or None when ``dp.distributed`` is off; ConfigError when λ > 0 (SMILE) is asked too."""
    if options.get("dp.distributed") and float(options.get("mi_weight", 0.0)) > 0:  # type: ignore[arg-type]
        raise ConfigError("dp.distributed trains plain FedNMF: set mi_weight=0 (the SMILE critic θ would need a "
                          "clipped release of its own)")
    return DPSGD.from_options(options)


def clipped_gradient_sum(counts: np.ndarray, w: np.ndarray, h: np.ndarray, clip: float) -> np.ndarray:
    """float64[V, k]: Σ_j ḡ_j over the rows of ``counts`` (float[B, V], the sampled documents), ``h`` their
    float[B, k], ḡ_j = g_j·min(1, C/‖g_j‖_F), g_j = −2 (a_j − W h_j) h_jᵀ."""
    resid = counts - h @ w.T  # [B, V]
    norms = 2.0 * np.linalg.norm(resid, axis=1) * np.linalg.norm(h, axis=1)
    factor = np.minimum(1.0, clip / np.maximum(norms, 1e-300))
    return -2.0 * (resid * factor[:, None]).T @ h
