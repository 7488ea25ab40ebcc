"""iFTM's party side: the sparse privatised vectors against the dense definition (two-sample tests), the private
MH chain's stationary distribution (Eq. 6, chi-square), and recovery of ground-truth topics."""

import itertools
import math

import numpy as np
import pytest
from _lda_synth import synthetic_lda, topic_l1_error
from scipy import stats

from fedtopic.errors import ModelError
from fedtopic.models._cycle_mh import scan_order
from fedtopic.models._mh_private import build_dense_alias, mh_sweep
from fedtopic.models._mh_private_exact import mh_sweep_exact
from fedtopic.models.private_mh import PrivateMHLDA
from fedtopic.models.privatize import buffer_size, expected_entries, privatized_vector
from fedtopic.models.reference import reference_private_exact_sweep
from fedtopic.models.rng import make_rng_states


def _sparse(key, n, word, v, eps, tau):
    bw, bv = np.empty(buffer_size(v, eps, tau), np.int64), np.empty(buffer_size(v, eps, tau))
    out = []
    for i in range(n):
        m = privatized_vector(np.uint64(key), i, word, v, eps, tau, bw, bv)
        vec = np.zeros(v)
        vec[bw[:m]] = bv[:m]
        out.append(vec)
    return np.array(out)


def _dense(n, word, v, eps, tau, seed):
    x = np.zeros((n, v))
    x[:, word] = 1.0
    x += np.random.default_rng(seed).laplace(0.0, 1.0 / eps, size=(n, v))
    x[x <= tau] = 0.0
    return x


@pytest.mark.parametrize(("eps", "tau"), [(1.0, 0.5), (3.0, 0.2), (0.5, 0.0)])
def test_sparse_privatised_vectors_match_the_dense_definition(eps, tau):
    v, word, n = 12, 4, 20_000
    sparse, dense = _sparse(123, n, word, v, eps, tau), _dense(n, word, v, eps, tau, seed=1)
    # how many entries are kept: same distribution
    assert stats.ks_2samp((sparse > 0).sum(1), (dense > 0).sum(1)).pvalue > 1e-3
    assert (sparse > 0).sum(1).mean() == pytest.approx(expected_entries(v, eps, tau), rel=0.03)
    # the true word's value, and the other words' values and positions
    assert stats.ks_2samp(sparse[:, word], dense[:, word]).pvalue > 1e-3
    others = [w for w in range(v) if w != word]
    s_vals, d_vals = sparse[:, others], dense[:, others]
    assert stats.ks_2samp(s_vals[s_vals > 0], d_vals[d_vals > 0]).pvalue > 1e-3
    counts = (s_vals > 0).sum(0)
    assert stats.chisquare(counts).pvalue > 1e-3  # uniform over the other words


def test_privatised_vector_is_fixed_by_key_and_token_and_off_at_infinity():
    a, b = _sparse(7, 50, 2, 30, 2.0, 0.2), _sparse(7, 50, 2, 30, 2.0, 0.2)
    assert np.array_equal(a, b) and not np.array_equal(a, _sparse(8, 50, 2, 30, 2.0, 0.2))
    exact = _sparse(7, 5, 2, 30, math.inf, 0.2)
    assert np.array_equal(exact, np.eye(30)[[2] * 5])


def _doc_order_sweep(words, ptr, z, n_dk, ckw, ck, phi, alpha, prob, alt, weight, rng):
    bw, bv = np.empty(4, np.int64), np.empty(4)
    return mh_sweep(words, ptr, z, n_dk, ckw, ck, np.log(phi), alpha, np.uint64(1), phi.shape[1], math.inf, 0.2,
                    prob, alt, weight, bw, bv, rng, 0)


def _word_major_sweep(words, ptr, z, n_dk, ckw, ck, phi, alpha, prob, alt, weight, rng):
    word_ptr, order, doc_of = scan_order(words, ptr, 0, len(ptr) - 1)
    return mh_sweep_exact(ptr, word_ptr, order, doc_of, z, n_dk, ckw, ck, phi, alpha, prob, alt, weight, rng, 0)


@pytest.mark.parametrize("sweep", [_doc_order_sweep, _word_major_sweep])
def test_private_mh_chain_has_eq_6_as_stationary_distribution(sweep):
    """ε = ∞, fixed Φ and fixed proposal tables: the joint topics of a 3-token document follow Eq. 6 exactly, in
    document order (the privatised path) and word by word (ε = ∞'s kernel)."""
    k, words = 3, np.array([2, 0, 1], dtype=np.int32)
    ptr = np.array([0, 3], dtype=np.int64)
    phi = np.array([[0.6, 0.3, 0.1], [0.1, 0.2, 0.7], [0.3, 0.4, 0.3]])
    alpha = 0.7
    prob, alt, weight = np.empty((3, k)), np.empty((3, k), np.int32), np.empty((3, k))
    build_dense_alias(np.random.default_rng(0).random((k, 3)) + 0.1, np.ones(k), 0.0, 0.0, prob, alt, weight)
    z = np.array([0, 0, 0], dtype=np.int32)
    n_dk = np.array([[3, 0, 0]], dtype=np.int32)
    ckw, ck = np.zeros((k, 3)), np.zeros(k)
    rng = make_rng_states(5, 1)
    seen = {}
    for it in range(60_000):
        sweep(words, ptr, z, n_dk, ckw, ck, phi, alpha, prob, alt, weight, rng)
        if it >= 1000:
            seen[tuple(z)] = seen.get(tuple(z), 0) + 1
    states = list(itertools.product(range(k), repeat=3))
    target = []
    for s in states:  # p(z) ∝ Π_i φ_{z_i w_i} · Π_k Γ(n_k + α) (the collapsed θ of Eq. 6)
        n = np.bincount(s, minlength=k)
        target.append(np.prod([phi[s[i], words[i]] for i in range(3)]) * np.prod([math.gamma(c + alpha) for c in n]))
    target = np.array(target) / np.sum(target)
    observed = np.array([seen.get(s, 0) for s in states])
    assert stats.chisquare(observed, target * observed.sum()).pvalue > 1e-4


def _random_state(seed):
    """A random corpus (empty documents and unused words included), its counts, a Φ and the Eq. 20 tables."""
    rng = np.random.default_rng(seed)
    n_docs, v, k = 25, 30, 7
    lengths = rng.integers(0, 14, n_docs)
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    words = rng.integers(0, v - 3, ptr[-1]).astype(np.int32)
    z = rng.integers(0, k, ptr[-1]).astype(np.int32)
    n_dk = np.zeros((n_docs, k), np.int32)
    np.add.at(n_dk, (np.repeat(np.arange(n_docs), lengths), z), 1)
    ckw = np.zeros((k, v))
    np.add.at(ckw, (z, words), 1.0)
    prob, alt, weight = np.empty((v, k)), np.empty((v, k), np.int32), np.empty((v, k))
    build_dense_alias(ckw, ckw.sum(1), 0.05, v * 0.05, prob, alt, weight)
    return words, ptr, z, n_dk, ckw, ckw.sum(1), rng.dirichlet(np.ones(v), k), prob, alt, weight


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_word_major_sweep_matches_its_reference_draw_for_draw(seed):
    words, ptr, z, n_dk, ckw, ck, phi, prob, alt, weight = _random_state(seed)
    mine = [z, n_dk, ckw, ck, make_rng_states(seed, 1)]
    ref = [a.copy() for a in mine]
    word_ptr, order, doc_of = scan_order(words, ptr, 0, len(ptr) - 1)
    for _ in range(4):
        got = mh_sweep_exact(ptr, word_ptr, order, doc_of, *mine[:4], phi, 0.3, prob, alt, weight, mine[4], 0)
        want = reference_private_exact_sweep(words, ptr, *ref[:4], phi, 0.3, prob, alt, weight, ref[4], 0)
        assert got == want > 0
        for a, b in zip(mine, ref):
            assert np.array_equal(a, b)
    assert np.array_equal(mine[2], np.bincount(mine[0] * ckw.shape[1] + words, minlength=ckw.size)
                          .reshape(ckw.shape))  # C^KW kept equal to the counts of z


@pytest.mark.parametrize("eps", [math.inf, 11.0])
def test_private_mh_recovers_ground_truth_topics(eps):
    corpus, phi = synthetic_lda(n_docs=200, doc_len=50, n_words=40, n_topics=4, seed=11, alpha=0.2, beta=0.05)
    model = PrivateMHLDA(4, alpha=0.2, beta=0.05, epsilon=eps, tau=0.2, seed=3)
    model.initialize(corpus)
    for _ in range(60):
        model.sweep()
    if math.isinf(eps):
        assert topic_l1_error(phi, model.phi()) < 0.25
    else:  # the Laplace noise spreads ~40 % of C^KW's mass evenly at V = 40: compare the top words instead
        est = model.phi()
        overlaps = [max(len(set(np.argsort(-phi[k])[:5]) & set(np.argsort(-est[j])[:5])) for j in range(4))
                    for k in range(4)]
        assert min(overlaps) >= 3 and sum(overlaps) >= 17  # of 20 top words (chance: ~2.5)


def test_adopting_a_model_reassigns_topics_from_it():
    corpus, phi = synthetic_lda(n_docs=100, doc_len=40, n_words=30, n_topics=3, seed=2, alpha=0.2, beta=0.05)
    model = PrivateMHLDA(3, alpha=0.2, beta=0.05, seed=1)
    model.initialize(corpus)
    model.adopt(phi)
    assert topic_l1_error(phi, model.phi()) < 0.5  # counts built from the adopted model's assignments
    with pytest.raises(ModelError):
        model.adopt(phi[:2])


def test_bad_privacy_parameters_are_model_errors():
    for kwargs in ({"epsilon": 0.0}, {"epsilon": -1.0}, {"tau": -0.1}, {"tau": math.inf}):
        with pytest.raises(ModelError):
            PrivateMHLDA(3, **kwargs)


def test_debiasing_removes_the_noise_floor_from_the_topics():
    corpus, phi = synthetic_lda(n_docs=200, doc_len=50, n_words=40, n_topics=4, seed=11, alpha=0.2, beta=0.05)
    errors = {}
    for debias in (False, True):
        model = PrivateMHLDA(4, alpha=0.2, beta=0.05, epsilon=11.0, tau=0.2, seed=3, debias=debias)
        model.initialize(corpus)
        for _ in range(40):
            model.sweep()
        errors[debias] = topic_l1_error(phi, model.phi())
    assert errors[True] < 0.6 * errors[False]


@pytest.mark.parametrize("shape", [0.01, 0.5, 1.0, 2.5, 40.0])
def test_gamma_variates_follow_the_gamma_distribution(shape):
    from fedtopic.models.dirichlet import gamma_draws

    x = gamma_draws(shape, 40_000, np.uint64(3))
    assert stats.kstest(x, "gamma", args=(shape,)).pvalue > 1e-3


def test_dirichlet_rows_are_deterministic_and_normalised():
    from fedtopic.models.dirichlet import dirichlet_rows

    c = np.random.default_rng(0).poisson(1.0, size=(7, 50)).astype(float)
    a, b = dirichlet_rows(c, 0.1, np.uint64(9)), dirichlet_rows(c, 0.1, np.uint64(9))
    assert np.array_equal(a, b) and np.allclose(a.sum(axis=1), 1.0)
    assert not np.array_equal(a, dirichlet_rows(c, 0.1, np.uint64(10)))
