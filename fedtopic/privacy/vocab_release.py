"""The private vocabulary's first stage: which words are frequent enough, released with distributed DP.

Differentially private set union (Gopi et al. 2020, "Differentially Private Set Union", ICML; the setting of
Manzonelli et al. 2024 for a topic model's vocabulary), with the documents as its users: every document d gives
each of its distinct words (at most ``max_words`` of them, a uniform draw when it has more) the weight 1/√ℓ_d, ℓ_d
the number of words it gives weight to (Gopi et al.'s ℓ2 policy with uniform weights), so that one document moves
the vector of weights by at most 1 in ℓ2 and √max_words in ℓ1. The words are keyed hashes (``threshold_words``:
the aggregator never holds the key), so the weights are a vector over ``buckets`` cells; two words of one document
in one cell count once.

Each party adds its documents' weights in fixed point (scale s), a Skellam share Sk(λ) per cell sized so that the
P shares sum to the central noise (sσ)² (``fedtopic.privacy.skellam``), and the public offset B; the sum travels
under ``mask``, so the aggregator and every party see only the noisy total per cell. That total is the whole
release of this stage: one Skellam mechanism with ℓ2 sensitivity s and ℓ1 sensitivity s√max_words (Agarwal,
Kairouz & Liu 2021, Thm. 3.5), (ε, δ) per document, and everything after it (which cells pass ``threshold``) is
post-processing. The privacy unit is one document of one party; every party takes part, so the noise is never
less than planned. The colluding-parties assumption of distributed DP holds: a party that sees its own share can
subtract it, leaving (P − 1)/P of the noise (docs/privacy.md).

The threshold is in documents' weight: a cell whose noisy total is at least ``threshold`` (one document giving a
word its whole weight is 1; a word in k documents of ℓ words weighs about k/√ℓ) makes its words candidates. The
second stage then admits a candidate only if at least ``min_parties`` parties hold it (``threshold_words``); that
rule is exact, not noisy, and is what stops a word that one party alone holds from reaching anyone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from fedtopic.errors import ConfigError
from fedtopic.privacy.rdp import (
    DEFAULT_ORDERS,
    PrivacyReport,
    check_delta,
    report_from_rdp,
)
from fedtopic.privacy.skellam import (
    bounded_shares,
    share_bound,
    share_lambda,
    skellam_rdp,
)

INTEGER_SHARE = 0.01
"""Thm. 3.5's integer term is kept under this fraction of the Gaussian term at order 2 (``scale``)."""
MAX_DOCUMENTS = 1 << 22
"""The most documents one party may have in the alignment: the public bound every cell of its update is under."""


@dataclass(frozen=True)
class ReleaseSettings:
    """How the private vocabulary is released; every party must use the same (they are the session's params)."""

    noise_multiplier: float = 1.0
    threshold: float = 0.5
    max_words: int = 256
    buckets: int = 1 << 18
    min_parties: int = 2
    delta: float = 1e-6

    def check(self, parties: int) -> ReleaseSettings:
        """Itself; ConfigError naming the first setting out of range for ``parties`` parties."""
        if not (math.isfinite(self.noise_multiplier) and self.noise_multiplier > 0):
            raise ConfigError(f"the vocabulary's noise multiplier must be positive, got {self.noise_multiplier}")
        if not (math.isfinite(self.threshold) and self.threshold > 0):
            raise ConfigError(f"the vocabulary's threshold must be positive, got {self.threshold}")
        if not 1 <= self.max_words <= 1 << 16:
            raise ConfigError(f"max words per document must be from 1 to 65536, got {self.max_words}")
        if not 1 << 8 <= self.buckets <= 1 << 24:
            raise ConfigError(f"buckets must be from 256 to 16777216, got {self.buckets}")
        if not 1 <= self.min_parties <= parties:
            raise ConfigError(f"min parties must be from 1 to the consortium's {parties}, got {self.min_parties}")
        check_delta(self.delta)
        return self

    @property
    def scale(self) -> int:
        """s: the smallest power of two with 3Δ1/(2s) ≤ INTEGER_SHARE · Δ2² for Δ1 = √max_words, Δ2 = 1."""
        need = 3.0 * math.sqrt(self.max_words) / (2.0 * INTEGER_SHARE)
        return 1 << max(0, math.ceil(math.log2(need)))

    def as_params(self) -> dict[str, object]:
        """The settings as session params (every party checks it derives the same)."""
        return {f"vocab_{k}": v for k, v in asdict(self).items()}


def document_weights(doc_buckets: Sequence[np.ndarray], settings: ReleaseSettings,
                     rng: np.random.Generator) -> np.ndarray:
    """int64[buckets]: Σ over documents of floor(s/√ℓ_d) in each of the ≤ max_words distinct cells document d
    gives weight to (``doc_buckets[d]``: int64 cells of its words, repeats allowed). A document's part has ℓ2 norm
    ≤ s and ℓ1 norm ≤ s√max_words."""
    total = np.zeros(settings.buckets, dtype=np.int64)
    scale = settings.scale
    for cells in doc_buckets:
        distinct = np.unique(cells)
        if distinct.size > settings.max_words:
            distinct = np.sort(rng.choice(distinct, settings.max_words, replace=False))
        if distinct.size:
            total[distinct] += math.floor(scale / math.sqrt(distinct.size))
    return total


@dataclass(frozen=True)
class NoisyRelease:
    """One party's part of the release: u = weights + Sk(λ) + B per cell (every cell in [0, s·D + 2B])."""

    update: np.ndarray
    offset: int


def noisy_part(weights: np.ndarray, settings: ReleaseSettings, parties: int, rng: np.random.Generator) -> NoisyRelease:
    """This party's update (``weights`` from ``document_weights``); a share beyond its bound (p < 1e-30 a cell)
    withholds the release rather than clip it."""
    shares, bound = bounded_shares(share_lambda(settings.noise_multiplier, settings.scale, parties), weights.shape,
                                   rng, "the vocabulary's release")
    return NoisyRelease(weights + shares + bound, bound)


def max_cell(settings: ReleaseSettings, parties: int) -> int:
    """The public bound of every cell of any party's update (the mask session's ``max_value``)."""
    return settings.scale * MAX_DOCUMENTS + 2 * share_bound(share_lambda(settings.noise_multiplier, settings.scale,
                                                                         parties))


def candidates(total: np.ndarray, settings: ReleaseSettings, parties: int) -> np.ndarray:
    """bool[buckets]: the cells whose noisy weight (the masked sum ``total`` of P updates, less P·B, over s)
    reaches the threshold."""
    bound = share_bound(share_lambda(settings.noise_multiplier, settings.scale, parties))
    return (total.reshape(-1).astype(np.int64) - parties * bound) >= settings.threshold * settings.scale


def release_report(settings: ReleaseSettings, orders: Sequence[int] = DEFAULT_ORDERS) -> PrivacyReport:
    """(ε, δ) and RDP of the release, per document: one Skellam sum of variance (sσ)², Δ2 = s, Δ1 = s√max_words
    (Thm. 3.5; γ = 1, one step)."""
    s = settings.scale
    rdp = skellam_rdp((s * settings.noise_multiplier) ** 2, s * math.sqrt(settings.max_words), float(s), orders)
    return report_from_rdp(rdp, orders, settings.delta, [(1.0, settings.noise_multiplier, 1)])
