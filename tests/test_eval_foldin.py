"""Gibbs fold-in kernel vs a slow numpy reference that consumes the same random draws."""

from __future__ import annotations

import numpy as np
import pytest

from fedtopic.errors import ModelError
from fedtopic.models.foldin import fold_in

_MASK = (1 << 64) - 1


def _mix64(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


class _SplitMix:
    """Pure-Python splitmix64, seeded per document as the kernel does."""

    def __init__(self, seed: int, doc: int) -> None:
        self.state = _mix64((_mix64(seed) + doc) & _MASK)

    def uniform(self) -> float:
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK
        return (_mix64(self.state) >> 11) * (1.0 / 9007199254740992.0)


def _draw(weights: np.ndarray, u: float) -> int:
    cum = np.cumsum(weights)
    if cum[-1] <= 0:
        return min(int(u * len(weights)), len(weights) - 1)
    hits = np.nonzero(cum > u * cum[-1])[0]
    return int(hits[0]) if len(hits) else len(weights) - 1


def fold_in_reference(phi, words, doc_ptr, alpha, iterations, seed, burn_in):
    """Slow numpy fold-in: same conditional, same draws, same estimator."""
    k_topics = phi.shape[0]
    total = k_topics * alpha if np.ndim(alpha) == 0 else float(np.sum(alpha))
    prior_mean = np.full(k_topics, 1.0 / k_topics) if np.ndim(alpha) == 0 else alpha / total
    theta = np.tile(prior_mean, (len(doc_ptr) - 1, 1))
    for d in range(len(doc_ptr) - 1):
        doc = words[doc_ptr[d] : doc_ptr[d + 1]]
        if len(doc) == 0:
            continue
        rng = _SplitMix(seed, d)
        n_dk = np.zeros(k_topics)
        z = np.zeros(len(doc), dtype=int)
        for i, w in enumerate(doc):
            z[i] = _draw((n_dk + alpha) * phi[:, w], rng.uniform())
            n_dk[z[i]] += 1
        samples = []
        for sweep in range(iterations):
            for i, w in enumerate(doc):
                n_dk[z[i]] -= 1
                z[i] = _draw((n_dk + alpha) * phi[:, w], rng.uniform())
                n_dk[z[i]] += 1
            if sweep >= burn_in:
                samples.append((n_dk + alpha) / (len(doc) + total))
        theta[d] = np.mean(samples, axis=0)
    return theta


def _toy(seed: int = 1, k: int = 4, v: int = 30, d: int = 6):
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(v, 0.3), size=k)
    lengths = rng.integers(0, 25, size=d)
    lengths[2] = 0  # an empty document
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    words = rng.integers(0, v, size=doc_ptr[-1]).astype(np.int32)
    return phi, words, doc_ptr


def test_kernel_matches_reference_draw_for_draw():
    phi, words, doc_ptr = _toy()
    got = fold_in(phi, words, doc_ptr, alpha=0.2, iterations=12, seed=7, burn_in=4)
    want = fold_in_reference(phi, words, doc_ptr, 0.2, 12, 7, 4)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_asymmetric_alpha_matches_reference_and_an_empty_document_gets_its_mean():
    """A learned α (one value per topic, models.hyperopt) enters the conditional and the estimator per topic."""
    phi, words, doc_ptr = _toy(seed=4)
    alpha = np.array([0.05, 0.4, 1.5, 0.2])
    got = fold_in(phi, words, doc_ptr, alpha=alpha, iterations=10, seed=3, burn_in=3)
    np.testing.assert_allclose(got, fold_in_reference(phi, words, doc_ptr, alpha, 10, 3, 3), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got[2], alpha / alpha.sum())  # document 2 is empty
    symmetric = fold_in(phi, words, doc_ptr, alpha=0.3, iterations=10, seed=3, burn_in=3)
    assert np.array_equal(symmetric, fold_in(phi, words, doc_ptr, alpha=np.full(4, 0.3), iterations=10, seed=3,
                                             burn_in=3))
    with pytest.raises(ModelError, match="one value per topic"):
        fold_in(phi, words, doc_ptr, alpha=np.ones(3), iterations=2)


def test_zero_phi_column_is_drawn_uniformly_like_reference():
    phi, words, doc_ptr = _toy(seed=3)
    phi[:, 0] = 0.0
    phi /= phi.sum(axis=1, keepdims=True)
    words[:5] = 0
    got = fold_in(phi, words, doc_ptr, alpha=0.5, iterations=5, seed=2)
    want = fold_in_reference(phi, words, doc_ptr, 0.5, 5, 2, 2)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_theta_rows_sum_to_one_and_empty_doc_is_prior_mean():
    phi, words, doc_ptr = _toy()
    theta = fold_in(phi, words, doc_ptr, alpha=0.1, iterations=10)
    np.testing.assert_allclose(theta.sum(axis=1), 1.0)
    np.testing.assert_allclose(theta[2], 0.25)


def test_deterministic_for_a_seed_and_different_across_seeds():
    phi, words, doc_ptr = _toy()
    a = fold_in(phi, words, doc_ptr, alpha=0.1, iterations=10, seed=5)
    b = fold_in(phi, words, doc_ptr, alpha=0.1, iterations=10, seed=5)
    c = fold_in(phi, words, doc_ptr, alpha=0.1, iterations=10, seed=6)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_document_theta_independent_of_other_documents():
    phi, words, doc_ptr = _toy()
    full = fold_in(phi, words, doc_ptr, alpha=0.1, iterations=10, seed=5)
    first_two = fold_in(phi, words[: doc_ptr[2]], doc_ptr[:3], alpha=0.1, iterations=10, seed=5)
    assert np.array_equal(full[:2], first_two)


def test_recovers_the_mixture_of_well_separated_topics():
    k, v = 3, 30
    phi = np.zeros((k, v))
    for t in range(k):
        phi[t, t * 10 : (t + 1) * 10] = 0.1
    rng = np.random.default_rng(0)
    true_theta = np.array([0.6, 0.3, 0.1])
    topics = rng.choice(k, size=2000, p=true_theta)
    words = (topics * 10 + rng.integers(0, 10, size=2000)).astype(np.int32)
    theta = fold_in(phi, words, np.array([0, 2000], dtype=np.int64), alpha=0.1, iterations=20)
    np.testing.assert_allclose(theta[0], np.bincount(topics, minlength=k) / 2000, atol=2e-3)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"alpha": 0.0}, "alpha"),
        ({"iterations": 0}, "iterations"),
        ({"burn_in": 10}, "burn_in"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_parameters_raise_model_error(kwargs, match):
    phi, words, doc_ptr = _toy()
    args = {"alpha": 0.1, "iterations": 10} | kwargs
    with pytest.raises(ModelError, match=match):
        fold_in(phi, words, doc_ptr, **args)


def test_bad_phi_and_words_raise_model_error():
    phi, words, doc_ptr = _toy()
    with pytest.raises(ModelError, match="sum to 1"):
        fold_in(phi * 2, words, doc_ptr, alpha=0.1)
    bad = words.copy()
    bad[0] = phi.shape[1]
    with pytest.raises(ModelError, match="word index"):
        fold_in(phi, bad, doc_ptr, alpha=0.1)


def fold_in_sparse_reference(phi, words, doc_ptr, alpha, iterations, seed, burn_in):
    """Slow Python form of the sparse kernel's draws: the document's part over its topics in the order it holds
    them (a list with swap-removal), then the prior's part over all K; same uniforms as the dense reference."""
    k_topics = phi.shape[0]
    alpha = np.full(k_topics, alpha) if np.ndim(alpha) == 0 else np.asarray(alpha)
    total = float(alpha.sum())
    theta = np.tile(alpha / total, (len(doc_ptr) - 1, 1))
    for d in range(len(doc_ptr) - 1):
        doc = words[doc_ptr[d]:doc_ptr[d + 1]]
        if len(doc) == 0:
            continue
        rng, n_dk, held, z, samples = _SplitMix(seed, d), np.zeros(k_topics, dtype=int), [], [0] * len(doc), []
        for sweep in range(-1, iterations):
            for i, w in enumerate(doc):
                if sweep >= 0:
                    n_dk[z[i]] -= 1
                    if n_dk[z[i]] == 0:
                        at = held.index(z[i])
                        held[at] = held[-1]
                        held.pop()
                doc_part = [n_dk[k] * phi[k, w] for k in held]
                doc_mass = 0.0
                for x in doc_part:
                    doc_mass += x
                prior_mass = 0.0
                for k in range(k_topics):
                    prior_mass += alpha[k] * phi[k, w]
                u = rng.uniform()
                if doc_mass + prior_mass <= 0:
                    t = min(int(u * k_topics), k_topics - 1)
                else:
                    target, t = u * (doc_mass + prior_mass), None
                    if target < doc_mass:
                        run = 0.0
                        for k, x in zip(held, doc_part):
                            run += x
                            if run > target:
                                t = k
                                break
                    if t is None:
                        target -= doc_mass
                        run = 0.0
                        for k in range(k_topics):
                            if alpha[k] * phi[k, w] > 0:
                                t = k
                                run += alpha[k] * phi[k, w]
                                if run > target:
                                    break
                z[i] = t
                if n_dk[t] == 0:
                    held.append(t)
                n_dk[t] += 1
            if sweep >= burn_in:
                samples.append((n_dk + alpha) / (len(doc) + total))
        theta[d] = np.mean(samples, axis=0)
    return theta


@pytest.mark.parametrize("alpha", [0.2, np.array([0.05, 0.4, 1.5, 0.2])])
def test_sparse_kernel_matches_its_reference_draw_for_draw(monkeypatch, alpha):
    """From SPARSE_FROM topics fold_in draws sparsely; here from 1 topic, on the toy corpora (an empty document, a
    word no topic holds)."""
    monkeypatch.setattr("fedtopic.models.foldin.SPARSE_FROM", 1)
    for seed in (1, 3, 4):
        phi, words, doc_ptr = _toy(seed=seed)
        if seed == 3:
            phi[:, 0] = 0.0
            phi /= phi.sum(axis=1, keepdims=True)
            words[:5] = 0
        got = fold_in(phi, words, doc_ptr, alpha=alpha, iterations=12, seed=7, burn_in=4)
        want = fold_in_sparse_reference(phi, words, doc_ptr, alpha, 12, 7, 4)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def _exact_theta_after_one_sweep(phi, doc, alpha):
    """E[θ] of a document after the sequential first draw and one Gibbs sweep (burn-in 0), by enumerating every
    assignment: what any exact sampler of the fold-in chain must give on average."""
    k_topics = len(alpha)
    dist = {(): 1.0}
    for w in doc:  # the first draw: each token given the ones before it
        nxt: dict = {}
        for z, p in dist.items():
            weights = (np.bincount(z, minlength=k_topics) + alpha) * phi[:, w]
            for k in range(k_topics):
                nxt[z + (k,)] = nxt.get(z + (k,), 0.0) + p * weights[k] / weights.sum()
        dist = nxt
    for i, w in enumerate(doc):  # one sweep: each token given all the others
        nxt = {}
        for z, p in dist.items():
            weights = (np.bincount(z[:i] + z[i + 1:], minlength=k_topics) + alpha) * phi[:, w]
            for k in range(k_topics):
                key = z[:i] + (k,) + z[i + 1:]
                nxt[key] = nxt.get(key, 0.0) + p * weights[k] / weights.sum()
        dist = nxt
    return sum(p * (np.bincount(z, minlength=k_topics) + alpha) for z, p in dist.items()) / (len(doc) + alpha.sum())


@pytest.mark.parametrize("sparse_from", [1, 10**9])
def test_both_kernels_draw_the_exact_chain_on_average(monkeypatch, sparse_from):
    """30,000 copies of one 3-token document, one sweep each: the mean θ of either kernel equals the exact
    expectation within 5 standard errors. A kernel that dropped the prior's part, used a symmetric α or mixed the
    two parts' weights would be off by several times that."""
    monkeypatch.setattr("fedtopic.models.foldin.SPARSE_FROM", sparse_from)
    phi = np.array([[0.70, 0.20, 0.10, 0.00], [0.05, 0.15, 0.30, 0.50], [0.25, 0.25, 0.25, 0.25]])
    alpha = np.array([0.05, 2.0, 0.5])
    doc, copies = [0, 3, 1], 30_000
    words = np.tile(np.array(doc, dtype=np.int32), copies)
    doc_ptr = np.arange(copies + 1, dtype=np.int64) * len(doc)
    theta = fold_in(phi, words, doc_ptr, alpha=alpha, iterations=1, seed=11, burn_in=0)
    exact = _exact_theta_after_one_sweep(phi, doc, alpha)
    error = theta.std(axis=0) / np.sqrt(copies)
    assert np.all(np.abs(theta.mean(axis=0) - exact) < 5 * error), (theta.mean(axis=0), exact, error)
