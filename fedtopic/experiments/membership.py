"""A membership-inference audit of a released topic model: LiRA (Carlini et al. 2022, "Membership Inference
Attacks From First Principles"), as Manzonelli et al. (2024, arXiv 2403.04451) apply it to topic models.

A consortium of ``parties`` trains csfed-lda (without DP, with local DP, or with distributed DP under the mask) on
synthetic LDA documents plus ``canaries``: documents of ``canary_length`` tokens drawn from words no other document
uses, each put in party 0's corpus with probability 1/2, independently per training run. The attacker sees what
the consortium releases, the final aggregate's Φ (under mask: the masked sum, decoded), and scores a canary by its
per-token log-likelihood under Φ after folding in its θ. ``models`` runs give, for every canary, the scores of the
runs it was in and of those it was not; LiRA fits a Gaussian to each and scores a target run's canary by the log
of their likelihood ratio. Every run is the target once, against the others as shadows (leave one out), which
gives ``models × canaries`` guesses with known answers: TPR at 0.1 % and 1 % FPR, and the ROC's AUC.

DP's guarantee is per document here (``dp.unit=document`` with ``max_doc_tokens`` = the canary's length), so an
(ε, δ)-DP release bounds any attack: TPR ≤ e^ε · FPR + δ at every threshold.

This is the issue's *tested* privacy claim for released models, beyond the canary-token audit of the accountant
(``dp_audit``): a test shows the DP runs within the bound and the run without DP above it.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace

import numpy as np

from fedtopic.algorithms.capabilities import ChannelParties, capability
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.corpus.synthetic import generate_synthetic
from fedtopic.corpus.types import Corpus
from fedtopic.eval.perplexity import token_log_probs
from fedtopic.models.foldin import fold_in
from fedtopic.privacy.audit import clopper_pearson_upper

MODES = ("none", "local", "distributed")


@dataclass(frozen=True)
class AttackSettings:
    """The consortium attacked, its DP, and the attack's size."""

    mode: str = "none"  # none, local (each party's release noisy) or distributed (shares under the mask)
    noise_multiplier: float = 1.0
    models: int = 32
    canaries: int = 20
    canary_length: int = 10
    parties: int = 3
    docs_per_party: int = 40
    doc_length: int = 20
    n_words: int = 150
    topics: int = 5
    rounds: int = 8
    delta: float = 1e-5
    seed: int = 0


def _corpora(s: AttackSettings) -> tuple[list[Corpus], np.ndarray]:
    """The parties' base corpora over a vocabulary extended by the canaries' words, and the canary documents
    (int32[C, L]: canary c uses only its own words)."""
    base = generate_synthetic(n_parties=s.parties, n_topics=s.topics, n_shared=s.topics % s.parties or s.parties,
                              n_words=s.n_words, docs_per_party=s.docs_per_party, doc_length=s.doc_length,
                              seed=s.seed).parties
    per_canary = 3
    vocab = base[0].vocab + tuple(f"canary{c}_{j}" for c in range(s.canaries) for j in range(per_canary))
    rng = np.random.default_rng([s.seed, 0xCA9A])
    canaries = np.array([s.n_words + c * per_canary + rng.integers(0, per_canary, s.canary_length)
                         for c in range(s.canaries)], dtype=np.int32)
    return [Corpus(words=c.words, doc_ptr=c.doc_ptr, vocab=vocab) for c in base], canaries


def _with_canaries(corpus: Corpus, canaries: np.ndarray, inside: np.ndarray) -> Corpus:
    """``corpus`` with the canaries marked ``inside`` appended as documents."""
    extra = canaries[inside]
    words = np.concatenate([corpus.words, extra.reshape(-1)]).astype(np.int32)
    ptr = np.concatenate([corpus.doc_ptr, corpus.doc_ptr[-1] + np.arange(1, len(extra) + 1) * canaries.shape[1]])
    return Corpus(words=words, doc_ptr=ptr.astype(np.int64), vocab=corpus.vocab)


def _options(s: AttackSettings) -> dict[str, object]:
    if s.mode == "none":
        return {}
    return {"dp.noise_multiplier": s.noise_multiplier, "dp.sampling_rate": 1.0, "dp.unit": "document",
            "dp.max_doc_tokens": s.canary_length, "dp.delta": s.delta} | (
        {"dp.distributed": True} if s.mode == "distributed" else {})


def train_released(s: AttackSettings, corpora: list[Corpus], run: int) -> tuple[np.ndarray, float | None]:
    """One csfed-lda run (the aggregator's exact sum, as under mask), in lock-step: the released Φ float64[K,V]
    (the final aggregate, β-smoothed) and party 0's ε."""
    algo = get_algorithm("csfed-lda")
    spec = algo.spec(s.topics, s.rounds, s.seed * 100_003 + run, _options(s))
    lda: ChannelParties = capability(algo, ChannelParties, "the membership attack's lock-step run")
    parties = [lda.channel_party(f"p{i + 1}", i, c, spec) for i, c in enumerate(corpora)]
    for p in parties:
        if hasattr(p, "plan"):
            p.plan(len(parties))
    releases = [p.genesis() for p in parties]
    for r in range(s.rounds + 1):
        total = np.sum(np.stack([np.asarray(x, dtype=np.int64) for x in releases]), axis=0)
        if r == s.rounds:
            released = parties[0].others_from_aggregate(total, r, contributed=False, contributors=len(parties)).n_wk
            break
        views = [p.others_from_aggregate(total, r, contributed=True, contributors=len(parties)) for p in parties]
        releases = [p.train_round([v]).n_wk for p, v in zip(parties, views)]
    beta = float(spec.options["beta"])  # type: ignore[arg-type]
    counts = released.T.astype(np.float64) + beta
    spent = parties[0].privacy()
    return counts / counts.sum(axis=1, keepdims=True), None if spent is None else spent.epsilon


def canary_scores(phi: np.ndarray, canaries: np.ndarray, alpha: float, seed: int) -> np.ndarray:
    """float64[C]: each canary's mean per-token log-likelihood under Φ after folding in its θ."""
    c, length = canaries.shape
    ptr = np.arange(c + 1, dtype=np.int64) * length
    theta = fold_in(phi, canaries.reshape(-1), ptr, alpha, iterations=20, seed=seed)
    logp = token_log_probs(phi, theta, canaries.reshape(-1), np.repeat(np.arange(c), length))
    return logp.reshape(c, length).mean(axis=1)


def lira(scores: np.ndarray, inside: np.ndarray) -> np.ndarray:
    """float64[M, C]: LiRA's log likelihood ratio of every (run, canary), each run scored against the others
    (Gaussians of the canary's in and out scores, the variance pooled per canary for stability, Carlini et al.
    §4's "fixed variance")."""
    m, _ = scores.shape
    out = np.empty_like(scores)
    for t in range(m):
        rest = np.arange(m) != t
        s, lab = scores[rest], inside[rest]
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an empty side gives NaN, handled below
            mu_in = np.nanmean(np.where(lab, s, np.nan), axis=0)
            mu_out = np.nanmean(np.where(~lab, s, np.nan), axis=0)
            resid = np.where(lab, s - mu_in, s - mu_out)
            sd = np.maximum(np.sqrt(np.nanmean(resid**2, axis=0)), 1e-6)
        x = scores[t]
        ratio = (-(x - mu_in) ** 2 + (x - mu_out) ** 2) / (2 * sd**2)
        out[t] = np.where(np.isfinite(ratio), ratio, 0.0)  # a canary never (or always) in the shadows: no evidence
    return out


FPRS = (0.001, 0.01)


def roc(score: np.ndarray, label: np.ndarray) -> tuple[dict[float, tuple[float, int, int]], float]:
    """Per FPR target x in ``FPRS``: (the best TPR among thresholds with FPR ≤ x, that threshold's true and false
    positives); and the ROC's AUC (the rank statistic) of ``score`` against ``label``."""
    order = np.argsort(-score, kind="stable")
    lab = label[order]
    tp, fp = np.cumsum(lab), np.cumsum(~lab)
    n_pos, n_neg = max(int(label.sum()), 1), max(int((~label).sum()), 1)
    tpr, fpr = tp / n_pos, fp / n_neg
    at = {}
    for x in FPRS:
        ok = np.flatnonzero(fpr <= x)
        i = int(ok[np.argmax(tpr[ok])]) if len(ok) else -1
        at[x] = (0.0, 0, 0) if i < 0 else (float(tpr[i]), int(tp[i]), int(fp[i]))
    ranks = np.empty(len(score))
    ranks[np.argsort(score, kind="stable")] = np.arange(1, len(score) + 1)
    auc = (ranks[label].sum() - int(label.sum()) * (int(label.sum()) + 1) / 2) / (n_pos * n_neg)
    return at, float(auc)


def within_dp_bound(tp: int, members: int, fp: int, others: int, epsilon: float, delta: float,
                    alpha: float = 0.05) -> bool:
    """Whether ``tp`` of ``members`` found at ``fp`` of ``others`` false alarms is consistent with (ε, δ)-DP's
    TPR ≤ e^ε·FPR + δ, sampling error allowed for: the TPR's Clopper–Pearson lower bound against the bound at the
    FPR's upper one (each at level 1 − alpha/2)."""
    lower = 0.0 if tp == 0 else 1.0 - clopper_pearson_upper(members - tp, members, alpha / 2)
    return lower <= min(1.0, math.exp(epsilon) * clopper_pearson_upper(fp, others, alpha / 2) + delta)


def run_attack(s: AttackSettings, reference_epsilon: float | None = None) -> dict[str, object]:
    """The audit: ``models`` training runs, LiRA on every (run, canary), its ROC; ε per canary document where DP
    is on, and at each FPR target whether the attack's TPR is within TPR ≤ e^ε·FPR + δ (``within_dp_bound``; for
    a run without DP, at ``reference_epsilon``: what a DP run of that ε would have bounded)."""
    if s.mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {s.mode!r}")
    corpora, canaries = _corpora(s)
    rng = np.random.default_rng([s.seed, 0x11A])
    inside = rng.random((s.models, s.canaries)) < 0.5
    scores = np.empty((s.models, s.canaries))
    epsilon = None
    alpha = 50.0 / s.topics
    for run in range(s.models):
        parts = [_with_canaries(corpora[0], canaries, inside[run]), *corpora[1:]]
        phi, epsilon = train_released(s, parts, run)
        scores[run] = canary_scores(phi, canaries, alpha, seed=run)
    lr = lira(scores, inside)
    at, auc = roc(lr.reshape(-1), inside.reshape(-1))
    members, others = int(inside.sum()), int((~inside).sum())
    eps = epsilon if epsilon is not None else reference_epsilon
    return {"mode": s.mode, "noise_multiplier": s.noise_multiplier if s.mode != "none" else None,
            "epsilon": epsilon, "delta": s.delta if epsilon is not None else None, "models": s.models,
            "canaries": s.canaries, "guesses": int(inside.size), "members": members,
            **{f"tpr_at_fpr_{x:g}": at[x][0] for x in FPRS}, "auc": auc,
            "bound_epsilon": eps,
            "within_dp_bound": None if eps is None else {
                f"{x:g}": within_dp_bound(at[x][1], members, at[x][2], others, eps, s.delta) for x in FPRS}}


def attack_table(settings: AttackSettings) -> list[dict[str, object]]:
    """The audit for the three modes at ``settings``' noise multiplier (local and distributed DP spend the same ε);
    the run without DP is held to the DP runs' ε."""
    local = run_attack(replace(settings, mode="local"))
    distributed = run_attack(replace(settings, mode="distributed"))
    plain = run_attack(replace(settings, mode="none"), reference_epsilon=local["epsilon"])  # type: ignore[arg-type]
    return [plain, local, distributed]
