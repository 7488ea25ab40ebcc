"""A federated LDA party with differential privacy on (CSFed/DAFed-LDA + SUB-LDA; beyond both papers).

What leaves the party is, every time, the output of one stated mechanism (see
docs/privacy.md for the argument):

* **count release** (genesis and every round): a fresh Poisson subsample of the
  party's units at rate γ (Def. 3.3), the word-topic counts of their tokens plus
  N(0, (σΔ)²) on every cell, divided by γ, rounded and clamped at 0. Unit
  ``token`` (the SUB-LDA paper's): a token's own (word, topic) pair moves one
  cell by one, Δ = 1. Unit ``document``: a kept document contributes at most
  ``max_doc_tokens`` = Δ tokens (chosen at random), which move the release by at
  most Δ in ℓ2. Accounted as one Poisson-subsampled Gaussian step of noise
  multiplier σ (Eq. 3).
* **word-frequency release** (CSFed's setup, once): word frequencies (document
  unit: of at most Δ tokens per document) plus N(0, (σΔ)²), rounded and clamped
  at 0; one Gaussian step without subsampling.

The release randomness (subsample and noise) is drawn from a generator seeded
by (seed, round, secret): a resumed party re-publishes exactly what it
published before (no second draw that an observer could average), and the
party's secret (a node's ``PartyKeys.noise_secret``) keeps it unpredictable to
peers who know the consortium's public seed; without a secret (one-process
simulations) the seed alone keys it. Local sweeps are SUB-LDA sweeps (noisy,
subsampled reads) against the others' published counts; the party's own Φ_Σ
uses its exact counts, which never leave it. With ``epsilon_budget`` the party
publishes only as many rounds as the budget pays for.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from fedtopic.algorithms.lda.dp_options import DPSettings
from fedtopic.algorithms.lda.options import LDAHyper
from fedtopic.algorithms.lda.party import LDAParty
from fedtopic.corpus.types import Corpus
from fedtopic.errors import TrainingError
from fedtopic.models.dp_lda import DPGibbsLDA
from fedtopic.privacy.rdp import (
    DEFAULT_ORDERS,
    PrivacyReport,
    epsilon_from_rdp,
    report_from_rdp,
    subsampled_gaussian_rdp,
)

_RELEASE_TAG = 0xD1FF  # separates the release generator's seed from the sampler's
_INT32_MAX = np.iinfo(np.int32).max


def release_mask(doc_ptr: np.ndarray, rate: float, unit: str, max_doc_tokens: int,
                 rng: np.random.Generator) -> np.ndarray:
    """bool[N]: the tokens one release counts.

    unit "token": each token independently with probability γ (Poisson subsampling of tokens). unit "document":
    each document with probability γ, and of a kept document at most ``max_doc_tokens`` tokens, chosen at random
    (so one document moves the release by at most that many in ℓ2).
    """
    n_tokens, n_docs = int(doc_ptr[-1]), len(doc_ptr) - 1
    if unit == "token":
        return rng.random(n_tokens) < rate if rate < 1.0 else np.ones(n_tokens, dtype=bool)
    lengths = np.diff(doc_ptr)
    doc_of = np.repeat(np.arange(n_docs), lengths)
    kept_doc = rng.random(n_docs) < rate if rate < 1.0 else np.ones(n_docs, dtype=bool)
    order = np.lexsort((rng.random(n_tokens), doc_of))  # by document, random inside each
    rank = np.empty(n_tokens, dtype=np.int64)
    rank[order] = np.arange(n_tokens) - doc_ptr[doc_of[order]]
    return kept_doc[doc_of] & (rank < max_doc_tokens)


def count_release(words: np.ndarray, z: np.ndarray, keep: np.ndarray, shape: tuple[int, int], rate: float,
                  noise_std: float, rng: np.random.Generator) -> np.ndarray:
    """int32[V,K]: round(((counts of the kept tokens) + N(0, noise_std²)) / γ), clamped to [0, 2^31−1].

    words int32[N] and z int32[N] are the tokens and their topics, keep bool[N] the release's subsample.
    """
    v, k = shape
    cells = words[keep].astype(np.int64) * k + z[keep]
    counts = np.bincount(cells, minlength=v * k).reshape(v, k).astype(np.float64)
    noisy = (counts + rng.normal(0.0, noise_std, size=(v, k))) / rate
    return np.clip(np.rint(noisy), 0, _INT32_MAX).astype(np.int32)


def frequency_release(words: np.ndarray, keep: np.ndarray, n_words: int, noise_std: float,
                      rng: np.random.Generator) -> np.ndarray:
    """int64[V]: frequencies of the kept tokens plus N(0, noise_std²), rounded, clamped at 0."""
    freqs = np.bincount(words[keep], minlength=n_words).astype(np.float64)
    return np.clip(np.rint(freqs + rng.normal(0.0, noise_std, size=n_words)), 0, None).astype(np.int64)


class DPLDAParty(LDAParty):
    """An ``LDAParty`` whose every publication is a DP release and whose local sweeps are SUB-LDA sweeps."""

    def __init__(self, party_id: str, corpus: Corpus, hyper: LDAHyper, dp: DPSettings, *, steps: int = 1,
                 seed: int | None = None, secret: bytes | None = None) -> None:
        super().__init__(party_id, corpus, hyper, steps=steps, seed=seed)
        self.dp = dp
        self._secret = () if secret is None else (int.from_bytes(secret, "big"),)
        self.model = DPGibbsLDA(hyper.n_topics, alpha=hyper.resolved_alpha, beta=hyper.beta, rate=dp.rate,
                                sigma=dp.sigma, clip=dp.clip, seed=self.model.seed)
        self._releases: dict[int, np.ndarray] = {}
        self.frequency_releases = 0
        self.cap = _INT32_MAX

    def cap_releases(self, max_value: int) -> None:
        """Clamp released cells at a public bound (CSFed's per-cell bound; post-processing, no privacy cost)."""
        self.cap = min(int(max_value), _INT32_MAX)
        self._releases = {}

    def _rng(self, *purpose: int) -> np.random.Generator:
        return np.random.default_rng([self.model.seed, _RELEASE_TAG, *purpose, *self._secret])

    def own_counts(self) -> np.ndarray:
        """The DP release of N_p for the current round (the same array however often it is asked for)."""
        r = self.round
        if r not in self._releases:
            state, rng = self.model.state, self._rng(r)
            keep = release_mask(self.corpus.doc_ptr, self.dp.rate, self.dp.unit, self.dp.max_doc_tokens, rng)
            release = count_release(self.corpus.words, state.z, keep, state.n_wk.shape, self.dp.rate,
                                    self.dp.sigma * self.dp.sensitivity, rng)
            self._releases = {r: np.minimum(release, self.cap)}
        return self._releases[r].copy()

    def word_frequencies(self) -> np.ndarray:
        """The DP release of this party's word frequencies (CSFed's setup exchange), int64[V]."""
        self.frequency_releases = 1
        rng = self._rng(1 << 30)
        keep = release_mask(self.corpus.doc_ptr, 1.0, self.dp.unit, self.dp.max_doc_tokens, rng)
        return frequency_release(self.corpus.words, keep, self.corpus.n_words, self.dp.sigma * self.dp.sensitivity,
                                 rng)

    @cached_property
    def _step_rdp(self) -> tuple[np.ndarray, np.ndarray]:
        """RDP per order of one count release and of one frequency release (∞ without noise: audits only)."""
        if self.dp.sigma == 0.0:
            return np.full(len(DEFAULT_ORDERS), np.inf), np.full(len(DEFAULT_ORDERS), np.inf)
        return (subsampled_gaussian_rdp(self.dp.rate, self.dp.sigma, DEFAULT_ORDERS),
                subsampled_gaussian_rdp(1.0, self.dp.sigma, DEFAULT_ORDERS))

    def _rdp(self, releases: int) -> np.ndarray:
        count, freq = self._step_rdp
        return releases * count + (self.frequency_releases * freq if self.frequency_releases else 0.0)

    def max_rounds(self) -> int | None:
        """Rounds after genesis the ε budget pays for (None: no budget); every release is counted, genesis too."""
        budget = self.dp.epsilon_budget
        if budget is None:
            return None
        fits = lambda n: epsilon_from_rdp(self._rdp(n), DEFAULT_ORDERS, self.dp.delta)[0] <= budget  # noqa: E731
        if not fits(1):
            raise TrainingError(f"dp.epsilon_budget {budget:g} does not pay for this party's first publication")
        lo, hi = 1, 2
        while fits(hi) and hi < 1 << 30:
            lo, hi = hi, hi * 2
        while hi - lo > 1:  # ε grows with the releases: the largest count that fits
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        return lo - 1

    def privacy_unit(self) -> str:
        return "token" if self.dp.unit == "token" else f"document (≤ {self.dp.max_doc_tokens} tokens counted)"

    def privacy(self, releases: int | None = None) -> PrivacyReport:
        """What this party's publications cost so far (genesis + rounds, plus a frequency release if made)."""
        n = self.round + 1 if releases is None else releases
        mechanisms = [(self.dp.rate, self.dp.sigma, n)] + (
            [(1.0, self.dp.sigma, self.frequency_releases)] if self.frequency_releases else [])
        return report_from_rdp(self._rdp(n), DEFAULT_ORDERS, self.dp.delta, mechanisms)
