"""DPGibbsLDA: SUB-LDA's differentially private collapsed Gibbs (Huang & Chen, Alg. 1) over one corpus.

A ``GibbsLDA`` whose sweep is the DP kernel of ``_dp``: Poisson subsampling at
rate γ, K fresh N(0, σ²) draws on the word's counts for every sampled token,
clipping, Eq. 1. γ = 1 is HDP-LDA (Zhao et al. 2020), the paper's baseline.

Adaptive subsampling (§5.6): before every sweep, each topic's frequent-word set
is recomputed from the current counts; tokens whose (word, current topic) is in
it are sampled at vγ, the others not at all. The set is read from Eq. 10's
"{t : Σ_t n_k^t ≥ q N_k}" as *the fewest most frequent words of topic k whose
counts sum to at least q·N_k*: the only reading under which Eq. 11,
E|G_sub| / E|Ḡ_sub| = 1/(vq), holds (a q-share of the tokens is eligible).
"""

from __future__ import annotations

import math

import numpy as np

from fedtopic.errors import ModelError
from fedtopic.models._dp import dp_shard
from fedtopic.models.gibbs import _check_frozen
from fedtopic.models.lda import GibbsLDA


def frequent_word_sets(n_wk: np.ndarray, q: float) -> np.ndarray:
    """bool[V,K]: per topic k, the fewest most frequent words whose counts reach q·N_k (ties: lower word id first).

    n_wk int[V,K] word-topic counts; q in (0, 1]. A topic with no tokens has an empty set.
    """
    if not 0.0 < q <= 1.0:
        raise ModelError(f"adaptive subsampling's q must be in (0, 1], got {q}")
    order = np.argsort(-n_wk, axis=0, kind="stable")
    ranked = np.take_along_axis(n_wk, order, axis=0).astype(np.int64)
    before = np.cumsum(ranked, axis=0) - ranked
    target = q * ranked.sum(axis=0)
    keep = (before < target[None, :]) & (ranked > 0)
    out = np.zeros(n_wk.shape, dtype=bool)
    np.put_along_axis(out, order, keep, axis=0)
    return out


class DPGibbsLDA(GibbsLDA):
    """SUB-LDA: sampling rate γ in (0, 1], noise σ ≥ 0 (0: no noise; only for tests and audits), upper clip.

    ``adaptive=(v, q)`` switches on adaptive subsampling (frequent words at rate vγ, 1 < v ≤ 1/γ). After each
    sweep ``last_sampled`` holds how many tokens the sweep touched.
    """

    def __init__(self, n_topics: int, alpha: float | None = None, beta: float = 0.01, *, rate: float = 1.0,
                 sigma: float = 1.0, clip: float | None = None, adaptive: tuple[float, float] | None = None,
                 seed: int = 0) -> None:
        super().__init__(n_topics, alpha=alpha, beta=beta, sampler="dense", threads=1, seed=seed)
        if not 0.0 < rate <= 1.0:
            raise ModelError(f"sampling rate γ must be in (0, 1], got {rate}")
        if not (sigma >= 0.0 and math.isfinite(sigma)):
            raise ModelError(f"noise σ must be finite and ≥ 0, got {sigma}")
        if clip is not None and not clip > 0:
            raise ModelError(f"clip must be positive, got {clip}")
        if adaptive is not None:
            v, q = adaptive
            if not (1.0 < v and v * rate <= 1.0 + 1e-12):
                raise ModelError(f"adaptive subsampling needs 1 < v ≤ 1/γ, got v={v:g} at γ={rate:g}")
            frequent_word_sets(np.zeros((1, 1), dtype=np.int32), q)  # validates q
        self.rate = float(rate)
        self.sigma = float(sigma)
        self.clip = math.inf if clip is None else float(clip)
        self.adaptive = adaptive
        self.last_sampled = 0

    def sweep(self, frozen_wk: np.ndarray | None = None, frozen_k: np.ndarray | None = None) -> None:
        """One DP sweep (Alg. 1's inner loop); frozen_* are other parties' counts (read only, e.g. federated)."""
        corpus, state = self._ready()
        frozen_wk, frozen_k = _check_frozen(state, frozen_wk, frozen_k)
        if frozen_wk is None:
            tot_wk, tot_k = state.n_wk, state.n_k
        else:
            tot_wk, tot_k = state.n_wk + frozen_wk, state.n_k + frozen_k
        if self.adaptive is None:
            rate, freq = self.rate, np.zeros((0, 0), dtype=np.uint8)
        else:
            v, q = self.adaptive
            rate, freq = min(v * self.rate, 1.0), frequent_word_sets(tot_wk, q).astype(np.uint8)
        self.last_sampled = int(dp_shard(
            corpus.words, corpus.doc_ptr, state.z, state.n_dk, tot_wk, tot_k, self.alpha, self.beta,
            state.n_words * self.beta, rate, freq, self.sigma, self.clip, state.rng, 0,
        ))
        if frozen_wk is not None:
            np.subtract(tot_wk, frozen_wk, out=state.n_wk)
            np.subtract(tot_k, frozen_k, out=state.n_k)
        self.iterations_done += 1
