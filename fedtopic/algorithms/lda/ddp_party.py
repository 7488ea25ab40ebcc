"""A CSFed-LDA party with distributed differential privacy (``dp.distributed = true``): every release carries a
Skellam share of the noise, and only the consortium's masked sum is ever released (beyond both papers).

Local DP (``dp_party.DPLDAParty``) adds N(0, (σΔ)²) to each party's release, so the masked sum of P releases
carries P(σΔ)²: P times the noise its privacy needs. Here each party adds an integer share Sk(λ) sized for the
consortium's planned minimum of contributors ``n`` (``dp.min_contributors``, default every party): n shares sum to
Sk(nλ) of variance (sσΔ)², the central noise of one Gaussian release at noise multiplier σ, and the aggregator (which
only ever sees the masked sum) refuses to release a round with fewer than ``n`` contributors. The accountant is
``fedtopic.privacy.skellam`` (Agarwal, Kairouz & Liu 2021, Thm. 3.5; Zhu & Wang 2019, Thm. 6 for γ < 1), round by
round at the contributors that actually came.

What one release is, for unit Δ (token: 1; document: ``max_doc_tokens``):

    u_p = s · C_p + X_p + B,    C_p = the word-topic counts of a fresh Poisson subsample (rate γ) of its units,
                                X_p ~ Sk(λ) per cell, λ = (sσΔ)² / (2n),  B = ``share_bound(λ)``

- ``s`` (``scale``): counts are integers already, so no rounding is needed, but integer noise of small variance costs
  more than Gaussian noise (Thm. 3.5's second term, ~3Δ/(2sV) per round at V = (σΔ)²). Scaling counts and noise by
  s leaves the Gaussian term unchanged and divides the integer term by s: s is the smallest power of two that keeps
  it under 1 % of the Gaussian term at order 2 (s ≥ 150 Δ1/Δ2²), as the anchors' scaled Skellam does;
- ``B``: the public offset that keeps every cell non-negative under ``mask`` (which sums non-negative integers
  modulo 2^b); |X_p| > B happens with probability < 1e-30 per cell, and stops the release rather than clip it. The
  session's ``max_value`` counts it, so the mask's bit width ``mask_bits(P, s·max_value + 2B)`` holds every sum,
  and a consortium whose sums would not fit in 64 bits is refused when the session opens.

The sum decodes as N̂_Σ = (Σ u_p − c·B) / (s·γ): the released noisy counts, rounded and clamped at 0 (post-processing
of the sum, never of one party's share). The others' counts a party trains against are N̂_Σ less its own part.
The word-frequency release of the setup exchange is the same mechanism at γ = 1 (once).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fedtopic.algorithms.asynchronous import ChannelSnapshot
from fedtopic.algorithms.lda.dp_options import DPSettings
from fedtopic.algorithms.lda.dp_party import DPLDAParty, release_mask
from fedtopic.algorithms.lda.options import LDAHyper
from fedtopic.corpus.types import Corpus
from fedtopic.errors import TrainingError
from fedtopic.privacy.rdp import DEFAULT_ORDERS, PrivacyReport, report_from_rdp
from fedtopic.privacy.skellam import (
    bounded_shares,
    composed_rdp,
    planned_contributors,
    share_bound,
    share_lambda,
)

INTEGER_SHARE = 0.01
"""The integer noise's RDP at order 2 is kept under this fraction of the Gaussian term (``scale``)."""


def noise_scale(sensitivity: float) -> int:
    """s: the smallest power of two with 3Δ1/(2s) ≤ INTEGER_SHARE · Δ2² (Δ1 = Δ2 = ``sensitivity`` here)."""
    need = 3.0 * sensitivity / (2.0 * INTEGER_SHARE * sensitivity**2)
    return 1 << max(0, math.ceil(math.log2(max(need, 1.0))))


class DistributedDPLDAParty(DPLDAParty):
    """A ``DPLDAParty`` whose releases carry Skellam shares for a masked sum of at least ``planned`` parties."""

    def __init__(self, party_id: str, corpus: Corpus, hyper: LDAHyper, dp: DPSettings, *, steps: int = 1,
                 seed: int | None = None, secret: bytes | None = None) -> None:
        super().__init__(party_id, corpus, hyper, dp, steps=steps, seed=seed, secret=secret)
        self.scale = noise_scale(dp.sensitivity)
        self.planned = 0  # set by ``plan`` once the consortium's size is known
        self.contributors: list[int] = []  # contributors of every released round so far (genesis first)
        self.frequency_contributors = 0  # of the setup exchange's sum (0: none released yet)

    # the plan ------------------------------------------------------------------------------------------------------
    def plan(self, n_parties: int) -> int:
        """Size the shares for the consortium: ``dp.min_contributors`` (default every party); the number planned."""
        planned = planned_contributors(self.dp.min_contributors, n_parties)
        self.planned = planned
        self._releases = {}
        return planned

    @property
    def lam(self) -> float:
        """λ of this party's Sk(λ) share per cell."""
        if not self.planned:
            raise TrainingError("distributed DP: the consortium's size is not known yet (plan first)")
        return share_lambda(self.dp.sigma * self.scale, self.dp.sensitivity, self.planned)

    @property
    def offset(self) -> int:
        """B: the public offset of every cell of a release."""
        return share_bound(self.lam)

    def release_bound(self, max_value: int) -> int:
        """The largest cell of a release when a count is at most ``max_value``: s·max_value + 2B."""
        return self.scale * int(max_value) + 2 * self.offset

    def _shared(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """s·counts + Sk(λ) + B, int64, every cell in [0, s·counts + 2B]."""
        shares, bound = bounded_shares(self.lam, counts.shape, rng, self.party_id)  # never clipped
        return self.scale * counts.astype(np.int64) + shares + bound

    # releases -------------------------------------------------------------------------------------------------------
    def own_counts(self) -> np.ndarray:
        """The current round's release u_p (int64[V,K]; the same array however often it is asked for)."""
        r = self.round
        if r not in self._releases:
            state, rng = self.model.state, self._rng(r)
            keep = release_mask(self.corpus.doc_ptr, self.dp.rate, self.dp.unit, self.dp.max_doc_tokens, rng)
            v, k = state.n_wk.shape
            cells = self.corpus.words[keep].astype(np.int64) * k + state.z[keep]
            counts = np.minimum(np.bincount(cells, minlength=v * k).reshape(v, k), self.cap)  # 1-Lipschitz per cell
            self._releases = {r: self._shared(counts, rng)}
        return self._releases[r].copy()

    def word_frequencies(self) -> np.ndarray:
        """The setup exchange's release: s·f_p + Sk(λ) + B, int64[V] (f_p of at most Δ tokens per document)."""
        self.frequency_releases = 1
        rng = self._rng(1 << 30)
        keep = release_mask(self.corpus.doc_ptr, 1.0, self.dp.unit, self.dp.max_doc_tokens, rng)
        return self._shared(np.bincount(self.corpus.words[keep], minlength=self.corpus.n_words), rng)

    def frequencies_from_sum(self, total: np.ndarray, contributors: int) -> np.ndarray:
        """The released word frequencies, int64[V], from the sum of ``contributors`` releases."""
        self.frequency_contributors = int(contributors)
        noisy = (np.asarray(total, dtype=np.int64) - contributors * self.offset) / self.scale
        return np.clip(np.rint(noisy), 0, None).astype(np.int64)

    def others_from_aggregate(self, total: np.ndarray, round: int, *, contributed: bool,
                              contributors: int | None = None) -> ChannelSnapshot:
        """The others' noisy counts N̂_Σ − (this party's part), from the sum of ``contributors`` releases."""
        if contributors is None:
            raise TrainingError("distributed DP needs the number of contributors of every aggregate")
        if len(self.contributors) <= round:
            self.contributors.extend([0] * (round + 1 - len(self.contributors)))
        self.contributors[round] = int(contributors)
        summed = np.asarray(total, dtype=np.int64) - contributors * self.offset
        if contributed:
            summed = summed - (self.own_counts() - self.offset)
        others = np.rint(summed / (self.scale * self.dp.rate))
        return ChannelSnapshot("aggregate", round, np.clip(others, 0, np.iinfo(np.int32).max).astype(np.int32))

    # accounting -----------------------------------------------------------------------------------------------------
    def _variance(self, contributors: int) -> float:
        """The released sum's noise variance in the scaled domain, 2cλ."""
        return 2.0 * contributors * self.lam

    def _rounds(self, releases: int) -> list[tuple[float, float]]:
        """(γ, V) of every release: rounds whose contributors are known at theirs, later ones at the plan."""
        seen = [c if c else self.planned for c in self.contributors[:releases]]
        rounds = [(self.dp.rate, self._variance(c)) for c in seen + [self.planned] * (releases - len(seen))]
        if self.frequency_releases:
            rounds.append((1.0, self._variance(self.frequency_contributors or self.planned)))
        return rounds

    def _rdp(self, releases: int) -> np.ndarray:
        if self.dp.sigma == 0.0:
            return np.full(len(DEFAULT_ORDERS), np.inf)
        delta_s = self.dp.sensitivity * self.scale
        return composed_rdp(self._rounds(releases), delta_s, delta_s, DEFAULT_ORDERS)

    def max_rounds(self) -> int | None:
        budget = self.dp.epsilon_budget
        if budget is None or not self.planned:
            return None
        return super().max_rounds()

    def privacy(self, releases: int | None = None) -> PrivacyReport:
        """What the released sums cost so far: genesis + rounds at their contributors, plus the frequency release."""
        n = self.round + 1 if releases is None else releases
        return report_from_rdp(self._rdp(n), DEFAULT_ORDERS, self.dp.delta, [(self.dp.rate, self.dp.sigma, n)] + (
            [(1.0, self.dp.sigma, 1)] if self.frequency_releases else []))

    def distributed_summary(self) -> dict[str, object]:
        """What summary.json says of the mechanism beyond ε: the plan, the shares, the contributors per round."""
        return {"mechanism": "distributed Skellam under mask (Agarwal, Kairouz & Liu 2021)",
                "planned_contributors": self.planned, "scale": self.scale, "share_lambda": self.lam,
                "offset": self.offset, "contributors_per_round": list(self.contributors),
                "colluders_tolerated": "none beyond the planned minimum: each released sum carries the shares of "
                                       "its contributors; k colluders who subtract their own shares leave "
                                       "(c − k) shares, so the stated ε holds while c − k ≥ the planned minimum"}


def state_of(party: DistributedDPLDAParty) -> dict[str, np.ndarray]:
    """The plan and the contributors seen (what a restarted or rebuilt party needs for its accounting)."""
    return {"ddp": np.array([party.planned, party.frequency_contributors], dtype=np.int64),
            "ddp_contributors": np.array(party.contributors, dtype=np.int64)}


def restore_into(party: DistributedDPLDAParty, arrays: dict[str, np.ndarray] | Sequence) -> None:
    """Undo ``state_of``."""
    if "ddp" in arrays:  # type: ignore[operator]
        planned, freq = (int(x) for x in arrays["ddp"])  # type: ignore[index]
        if planned:
            party.planned = planned
        party.frequency_contributors = freq
        party.contributors = [int(x) for x in arrays["ddp_contributors"]]  # type: ignore[index]
