"""One LDA party (CSFed/DAFed paper §5–7): what it computes locally in CSFed-LDA (Alg. 1) and DAFed-LDA (Alg. 3).

A party holds its own tokens, assignments z_p, θ_p and word-topic counts N_p.
Each round it takes the latest N_q it may read (CP, Def. 4) — possibly stale —
forms N_Σ = N_p + Σ_q N_q (Eq. 8), runs ``steps`` collapsed Gibbs sweeps of its
own tokens with its own counts live and the others' fixed (Eq. 10, AD-LDA
style), and hands back N_p to publish. Nothing here knows about chains or
threads: the node's loop moves snapshots in and out.

Staleness of a snapshot read at the start of round r (the party has published
rounds 0..r-1) is ``(r - 1) - round_q``: 0 when the other party is exactly in
step, positive when it lags, negative when it is ahead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from fedtopic.algorithms.asynchronous import ChannelSnapshot, RoundReport
from fedtopic.algorithms.lda.options import LDAHyper
from fedtopic.corpus.types import Corpus
from fedtopic.errors import ModelError, TrainingError
from fedtopic.eval.coherence import heaviest_ids
from fedtopic.models.distributions import phi_from_counts
from fedtopic.models.lda import GibbsLDA
from fedtopic.models.state import LDAState, check_state

if TYPE_CHECKING:
    from fedtopic.privacy.rdp import PrivacyReport


def aggregate_others(snapshots: Sequence[ChannelSnapshot], n_words: int, n_topics: int) -> tuple[np.ndarray, np.ndarray]:
    """Σ_q N_q over the readable channels (Eq. 8 without the reader's own term).

    Returns ``frozen_wk`` int32[V,K] and ``frozen_k`` int64[K].
    """
    frozen_wk = np.zeros((n_words, n_topics), dtype=np.int64)
    for snap in snapshots:
        if snap.n_wk.shape != (n_words, n_topics):
            raise ValueError(f"channel {snap.party}: counts of shape {snap.n_wk.shape}, expected {(n_words, n_topics)}")
        frozen_wk += snap.n_wk
    return frozen_wk.astype(np.int32), frozen_wk.sum(axis=0)


def privacy_summary(parties: Sequence[LDAParty]) -> dict[str, Any]:
    """``{"privacy": {party: what its publications cost}}`` for summary.json, or {} when no party has DP on."""
    reports = {p.party_id: p.privacy() for p in parties}
    if all(r is None for r in reports.values()):
        return {}
    units = {p.party_id: p.privacy_unit() for p in parties}
    return {"privacy": {pid: None if r is None else {
        "epsilon": r.epsilon, "delta": r.delta, "best_order": r.best_order, "epsilon_classic": r.epsilon_classic,
        "conversion": "Balle et al. 2020 (Thm. 21)", "unit": units[pid],
        "releases": [{"sampling_rate": g, "noise_multiplier": s, "count": n} for g, s, n in r.mechanisms],
        **({} if getattr(p, "distributed_summary", None) is None else {"distributed": p.distributed_summary()}),
    } for (pid, r), p in zip(reports.items(), parties)}}


class LDAParty:
    """One party's side of federated LDA: DAFed-LDA (Alg. 3, lines 2–17) and CSFed-LDA (Alg. 1, lines 3–12)."""

    def __init__(self, party_id: str, corpus: Corpus, hyper: LDAHyper, *, steps: int = 1, seed: int | None = None) -> None:
        if steps < 1:
            raise ValueError("steps must be at least 1")
        self.party_id = party_id
        self.corpus = corpus
        self.hyper = hyper
        self.steps = steps
        self.model = GibbsLDA(
            hyper.n_topics,
            alpha=hyper.resolved_alpha,
            beta=hyper.beta,
            sampler=hyper.sampler,
            threads=hyper.threads,
            seed=hyper.seed if seed is None else seed,
            optim_interval=hyper.optim_interval,
            optim_beta=hyper.optim_beta,
        )
        self.round = 0
        self.sweeps = 0
        self._others: tuple[ChannelSnapshot, ...] = ()

    def genesis(self) -> np.ndarray:
        """Random initial z_p; returns N_p (int32[V,K]) for the genesis publication (round 0)."""
        self.model.initialize(self.corpus)
        return self.own_counts()

    def resume(self, state: LDAState, *, round: int, sweeps: int) -> None:
        """Continue from a checkpointed sampler state (z_p, N_p, θ counts, RNG) at ``round``."""
        check_state(state, self.corpus.words, self.corpus.doc_ptr, self.corpus.n_words)
        if state.n_topics != self.hyper.n_topics:
            raise ModelError(f"the state has K={state.n_topics}, this party trains K={self.hyper.n_topics}")
        self.model.corpus, self.model.state = self.corpus, state
        self.round, self.sweeps = round, sweeps

    def own_counts(self) -> np.ndarray:
        """A copy of N_p, int32[V,K]: the only thing that leaves the party."""
        return self.model.state.n_wk.copy()

    @property
    def vocab(self) -> tuple[str, ...]:
        """The corpus's words (the asynchronous protocol's)."""
        return self.corpus.vocab

    def quality(self) -> tuple[float, str]:
        """The history's figure: the log-likelihood per token of its own documents under Φ_Σ."""
        return self.log_likelihood(), "loglik_per_token"

    def state(self) -> dict[str, np.ndarray]:
        """The sampler's state (z_p, N_p, θ counts, RNG) and progress: what a restarted party resumes from."""
        s = self.model.state
        return {"z": s.z, "n_dk": s.n_dk, "n_wk": s.n_wk, "n_k": s.n_k, "rng": s.rng,
                "progress": np.array([self.round, self.sweeps], dtype=np.int64)}

    def restore(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Resume from ``state``'s arrays; ValueError if they do not fit this party's corpus and K."""
        rnd, sweeps = (int(x) for x in arrays["progress"])
        try:
            self.resume(LDAState(**{k: arrays[k] for k in ("z", "n_dk", "n_wk", "n_k", "rng")}), round=rnd,
                        sweeps=sweeps)
        except ModelError as exc:
            raise ValueError(str(exc)) from None

    def word_frequencies(self) -> np.ndarray:
        """This party's word frequencies, int64[V] (CSFed's setup exchange, Fig. 3)."""
        return self.corpus.word_counts()

    def cap_releases(self, max_value: int) -> None:
        """Bound every published cell by a public ``max_value`` (exact counts are within it already)."""

    def max_rounds(self) -> int | None:
        """Rounds after genesis this party may publish (None: as many as the iteration budget allows)."""
        return None

    def privacy(self) -> PrivacyReport | None:
        """What this party's publications cost in differential privacy (None: no DP mechanism on them)."""
        return None

    def privacy_unit(self) -> str | None:
        """What one DP release protects ("token", "document (≤ m tokens)"), None without DP."""
        return None

    def max_sweeps(self, iterations: int) -> int:
        """The sweep budget: ``iterations``, or fewer when the privacy budget pays for fewer rounds."""
        rounds = self.max_rounds()
        return iterations if rounds is None else min(iterations, rounds * self.steps)

    def others_from_aggregate(self, total: np.ndarray, round: int, *, contributed: bool,
                              contributors: int | None = None) -> ChannelSnapshot:
        """CSFed-LDA (Alg. 1): the others' counts Σ_q N_q = N_Σ − N_p (Eq. 8) from the aggregate of ``round``.

        ``total`` is N_Σ as int64[V,K]; what this party published (``own_counts``: N_p, or its DP release) is
        subtracted only when its update is part of it (a straggler's round went on without it). ``contributors``:
        how many updates the sum holds (a distributed-DP party removes their offsets; ignored here).
        """
        own = self.own_counts().astype(np.int64) if contributed else 0
        others = total - own
        if others.size and others.min() < 0:
            raise TrainingError(f"aggregate of round {round} is smaller than what this party published")
        return ChannelSnapshot("aggregate", round, others.astype(np.int32))

    def train_round(self, others: Sequence[ChannelSnapshot]) -> RoundReport:
        """Global aggregation (Alg. 3 l. 4–7) then ``steps`` local sweeps (l. 9–16); returns N_p to publish."""
        frozen_wk, frozen_k = aggregate_others(others, self.corpus.n_words, self.hyper.n_topics)
        staleness = {s.party: self.round - s.round for s in others}
        for _ in range(self.steps):
            self.model.sweep(frozen_wk=frozen_wk, frozen_k=frozen_k)
        self.sweeps += self.steps
        self.round += 1
        self._others = tuple(others)
        spent = self.privacy()
        return RoundReport(round=self.round, sweeps=self.sweeps, n_wk=self.own_counts(), staleness=staleness,
                           epsilon=None if spent is None else spent.epsilon)

    def absorb(self, others: Sequence[ChannelSnapshot]) -> None:
        """Take the final snapshots after training so Φ_Σ reflects everyone's last counts (Alg. 3 l. 19)."""
        self._others = tuple(others)

    def global_counts(self, others: Sequence[ChannelSnapshot] | None = None) -> np.ndarray:
        """N_Σ = N_p + Σ_q N_q (Eq. 8) as int64[V,K], from ``others`` or the snapshots of the last round."""
        snaps = self._others if others is None else tuple(others)
        frozen_wk, _ = aggregate_others(snaps, self.corpus.n_words, self.hyper.n_topics)
        return self.model.state.n_wk.astype(np.int64) + frozen_wk

    def phi(self, others: Sequence[ChannelSnapshot] | None = None) -> np.ndarray:
        """Φ_Σ (Eq. 9), float64[K,V]."""
        return phi_from_counts(self.global_counts(others), self.model.beta)

    @property
    def alpha(self):
        """α: the hyper-parameter, or the consortium's learned one (float64[K], ``learn_priors``)."""
        return self.model.alpha

    @property
    def beta(self) -> float:
        return self.model.beta

    def learn_priors(self, histogram, global_counts: np.ndarray) -> None:
        """α (and with optim_beta β) from the consortium's summed document-topic histograms and N_Σ int[V, K]:
        every party holds the same sums, so every party takes the same step (models.hyperopt)."""
        self.model.learn_priors(histogram, global_counts)

    def priors_due(self, done: int) -> bool:
        """Whether the sweeps so far call for another α step, ``done`` steps taken (every optim_interval sweeps)."""
        return bool(self.hyper.optim_interval) and self.sweeps // self.hyper.optim_interval > done

    def prior_state(self) -> dict[str, np.ndarray]:
        """α and β as checkpoint arrays (``restore_priors`` reads them back)."""
        return {"alpha": np.atleast_1d(np.asarray(self.alpha, dtype=np.float64)), "beta": np.array([self.beta])}

    def restore_priors(self, arrays: Mapping[str, np.ndarray]) -> None:
        """α and β from ``prior_state``'s arrays (one α value: the symmetric prior)."""
        alpha = arrays["alpha"]
        self.model.alpha = float(alpha[0]) if alpha.shape == (1,) else alpha.copy()
        self.model.beta = float(arrays["beta"][0])

    def theta(self) -> np.ndarray:
        """θ_p (Eq. 6), float64[D_p,K]; stays with the party."""
        return self.model.theta()

    def log_likelihood(self) -> float:
        """Log-likelihood per token of this party's documents under Φ_Σ (its own counts live, its peers' as last
        read) and its θ_p: the history's quality figure for the LDA family."""
        from fedtopic.eval.likelihood import token_log_likelihood

        return token_log_likelihood(self.phi(), self.theta(), self.corpus.words, self.corpus.doc_ptr)

    def top_words_ids(self, n: int) -> np.ndarray:
        """int[K, n]: the top words of Φ_Σ."""
        return heaviest_ids(self.phi(), n)

    def topic_distribution(self) -> tuple[np.ndarray, np.ndarray]:
        """Φ_Σ float64[K,V] (Eq. 9) and the topics' prevalence float64[K]: their share of the consortium's
        tokens in N_Σ (for the dashboard's topic panel)."""
        counts = self.global_counts()
        n_k = counts.sum(axis=0).astype(np.float64)
        return phi_from_counts(counts, self.model.beta), n_k / max(float(n_k.sum()), 1.0)
