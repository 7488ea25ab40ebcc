"""The empirical audit of a DP party's releases on a small corpus with and without one canary token.

The corpus is a small LDA-generated one (the audit's power does not depend on
its size); the canary token is a word no other token uses, added to the first
document. Each run builds a fresh ``DPLDAParty`` (seed = run), publishes its
genesis release and ``releases − 1`` round releases with no other party (what
a party of CSFed/DAFed publishes), and scores the run by the canary word's row
summed over topics and releases. See ``fedtopic.privacy.audit`` for the test.

With ``distributed`` = n ≥ 2 it audits distributed DP instead (``ddp_party``): each run builds n parties, the
canary's and n − 1 without it, each adding its Skellam share to its releases, and scores the canary's row of the
decoded *sum* of their releases, which is all an observer of a masked consortium sees.

With ``mechanism = "dp-sgd"`` it audits the DP-SGD release of FedNMF's and gFedNTM's ``dp.distributed``
(``algorithms.dp_sgd``, the same encoding, shares and decoding): n parties release the clipped gradients of their
sampled documents in ``DP_SGD_CELLS`` cells; the canary is a document of party 0, sampled at rate γ like every
other, whose clipped gradient is C·e₀ (the most a clipped document can move one cell: the worst case), and the run is
scored by cell 0 of the decoded sum over the releases. The other documents' gradients lie in the other cells.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedtopic.algorithms.lda.dp_options import DPSettings
from fedtopic.algorithms.lda.dp_party import DPLDAParty
from fedtopic.algorithms.lda.options import LDAHyper
from fedtopic.corpus.types import Corpus
from fedtopic.privacy.audit import AuditResult, run_scores, threshold_audit
from fedtopic.privacy.rdp import privacy_report


@dataclass(frozen=True)
class AuditSettings:
    """The mechanism audited (γ, σ, releases) and the audit's size."""

    sampling_rate: float = 0.5
    noise_multiplier: float = 2.0
    releases: int = 3
    runs: int = 1000
    delta: float = 1e-5
    confidence: float = 0.95
    seed: int = 0
    distributed: int = 0  # n ≥ 2: the released sum of n parties' distributed-DP releases
    mechanism: str = "lda"  # "lda": csfed/dafed's count releases; "dp-sgd": the DP-SGD release (needs distributed)


DP_SGD_CELLS = 16
"""Cells of an audited DP-SGD release (its accountant's sensitivities follow them)."""


def canary_corpora(seed: int = 0, n_docs: int = 30, doc_len: int = 15, n_words: int = 25,
                   n_topics: int = 3) -> tuple[Corpus, Corpus, int]:
    """(corpus with the canary token, corpus without it, the canary's word id); same vocabulary."""
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(n_words, 0.3), size=n_topics)
    docs = []
    for _ in range(n_docs):
        theta = rng.dirichlet(np.full(n_topics, 0.5))
        docs.append([int(rng.choice(n_words, p=phi[k])) for k in rng.choice(n_topics, size=doc_len, p=theta)])
    canary = n_words  # a word id no other token uses
    vocab = tuple(f"w{v}" for v in range(n_words)) + ("canary",)

    def build(documents: list[list[int]]) -> Corpus:
        ptr = np.zeros(len(documents) + 1, dtype=np.int64)
        np.cumsum([len(d) for d in documents], out=ptr[1:])
        return Corpus(words=np.asarray([w for d in documents for w in d], dtype=np.int32), doc_ptr=ptr, vocab=vocab)

    with_canary = [docs[0] + [canary]] + docs[1:]
    return build(with_canary), build(docs), canary


def _settings(s: AuditSettings) -> DPSettings:
    return DPSettings(rate=s.sampling_rate, sigma=s.noise_multiplier, order=14, clip=None, delta=s.delta,
                      epsilon_budget=None, adaptive=None, distributed=s.distributed > 0)


def _distributed_scorer(corpus: Corpus, others: Corpus, canary: int, s: AuditSettings):
    from fedtopic.algorithms.lda.ddp_party import DistributedDPLDAParty

    dp, n = _settings(s), s.distributed
    hyper = LDAHyper(n_topics=3, iterations=s.releases, alpha=0.5, beta=0.1, sampler="dense")

    def score(seed: int) -> float:
        parties = [DistributedDPLDAParty(f"a{i}", corpus if i == 0 else others, hyper, dp, seed=seed * n + i)
                   for i in range(n)]
        for party in parties:
            party.plan(n)
        total = 0.0
        releases = [[p.genesis() for p in parties]]
        releases += [[p.train_round([]).n_wk for p in parties] for _ in range(s.releases - 1)]
        for round_releases in releases:
            summed = np.sum(round_releases, axis=0) - n * parties[0].offset
            total += float(summed[canary].sum()) / (parties[0].scale * s.sampling_rate)
        return total

    return score


def _dp_sgd(s: AuditSettings):
    from fedtopic.algorithms.dp_sgd import DPSGD

    return DPSGD(sigma=s.noise_multiplier, rate=s.sampling_rate, clip=1.0, delta=s.delta, min_contributors=None,
                 max_batch=64)


def _dp_sgd_scorer(canary_in: bool, s: AuditSettings):
    from fedtopic.algorithms.dp_sgd import decode_sum, release

    dp, n = _dp_sgd(s), s.distributed

    def score(seed: int) -> float:
        total = 0.0
        for r in range(s.releases):
            parts = []
            for i in range(n):
                rng = np.random.default_rng([seed, r, i])
                sampled = rng.random(8) < s.sampling_rate  # 8 ordinary documents of this party
                grad = np.zeros(DP_SGD_CELLS)
                for cell in rng.integers(1, DP_SGD_CELLS, size=int(sampled.sum())):
                    grad[cell] += dp.clip
                count = int(sampled.sum())
                if i == 0 and canary_in and rng.random() < s.sampling_rate:
                    grad[0] += dp.clip
                    count += 1
                parts.append(release(grad, count, dp, n, rng))
            noisy, _ = decode_sum(np.sum(parts, axis=0), n, dp, n, (DP_SGD_CELLS,))
            total += float(noisy[0])
        return total

    return score


def _scorer(corpus: Corpus, canary: int, s: AuditSettings):
    dp = _settings(s)
    hyper = LDAHyper(n_topics=3, iterations=s.releases, alpha=0.5, beta=0.1, sampler="dense")

    def score(seed: int) -> float:
        party = DPLDAParty("audit", corpus, hyper, dp, seed=seed)
        total = float(party.genesis()[canary].sum())
        for _ in range(s.releases - 1):
            total += float(party.train_round([]).n_wk[canary].sum())
        return total

    return score


def audit_releases(s: AuditSettings) -> dict:
    """Run the audit; returns ε_lb, the test's error rates and the accountant's ε for the same mechanism."""
    with_canary, without, canary = canary_corpora(s.seed)
    if s.mechanism == "dp-sgd":
        scorer_in, scorer_out = _dp_sgd_scorer(True, s), _dp_sgd_scorer(False, s)
    elif s.distributed:
        scorer_in = _distributed_scorer(with_canary, without, canary, s)
        scorer_out = _distributed_scorer(without, without, canary, s)
    else:
        scorer_in, scorer_out = _scorer(with_canary, canary, s), _scorer(without, canary, s)
    scores_in = run_scores(scorer_in, s.runs, s.seed * 1_000_003)
    scores_out = run_scores(scorer_out, s.runs, s.seed * 1_000_003 + s.runs)
    result: AuditResult = threshold_audit(scores_in, scores_out, delta=s.delta, confidence=s.confidence)
    return result.as_dict() | {"accountant_epsilon": _accountant(s), "sampling_rate": s.sampling_rate,
                               "noise_multiplier": s.noise_multiplier, "releases": s.releases,
                               "distributed": s.distributed, "mechanism": s.mechanism,
                               "holds": result.epsilon_lower_bound <= _accountant(s)}


def _accountant(s: AuditSettings) -> float:
    """The accountant's ε for the audited mechanism (∞ without noise)."""
    if s.noise_multiplier <= 0:
        return float("inf")
    if s.mechanism == "dp-sgd":
        from fedtopic.algorithms.dp_sgd import privacy

        return privacy(_dp_sgd(s), [s.distributed] * s.releases, s.distributed, DP_SGD_CELLS + 1).epsilon
    if not s.distributed:
        return privacy_report(s.sampling_rate, s.noise_multiplier, s.releases, s.delta).epsilon
    from fedtopic.algorithms.lda.ddp_party import noise_scale
    from fedtopic.privacy.rdp import DEFAULT_ORDERS, epsilon_from_rdp
    from fedtopic.privacy.skellam import composed_rdp

    scale = noise_scale(1.0)
    variance = (scale * s.noise_multiplier) ** 2
    rdp = composed_rdp([(s.sampling_rate, variance)] * s.releases, scale, scale, DEFAULT_ORDERS)
    return epsilon_from_rdp(rdp, DEFAULT_ORDERS, s.delta)[0]
