"""SUB-LDA's DP sweep: ziggurat normals, kernel == numpy reference draw for draw, σ=0/γ=1 == plain dense sweep,
subsampling rates, adaptive subsampling (Eqs. 11–12), recovery of the ground truth at large ε."""

import numpy as np
import pytest
from _lda_synth import synthetic_lda, topic_l1_error
from scipy import stats

from fedtopic.errors import ModelError
from fedtopic.models._dp import dp_shard
from fedtopic.models.dp_lda import DPGibbsLDA, frequent_word_sets
from fedtopic.models.gibbs import sweep
from fedtopic.models.normal import PyNormal, normals
from fedtopic.models.reference import reference_dp_sweep
from fedtopic.models.rng import PyXoroshiro, make_rng_states
from fedtopic.models.state import counts_from_z, init_state

K = 6


@pytest.fixture(scope="module")
def corpus():
    return synthetic_lda(n_docs=30, doc_len=25, n_words=50, n_topics=4, seed=4)[0]


def _state(corpus, seed=3, k=K):
    return init_state(corpus.words, corpus.doc_ptr, corpus.n_words, k, seed)


def _kernel(state, corpus, alpha, beta, *, rate, sigma, clip=np.inf, freq=None):
    freq = np.zeros((0, 0), np.uint8) if freq is None else freq.astype(np.uint8)
    return dp_shard(corpus.words, corpus.doc_ptr, state.z, state.n_dk, state.n_wk, state.n_k, alpha, beta,
                    state.n_words * beta, rate, freq, sigma, clip, state.rng, 0)


def test_ziggurat_normals_are_standard_normal_and_match_the_python_twin():
    x = normals(make_rng_states(1, 1), 0, 400_000)
    assert stats.kstest(x, "norm").pvalue > 1e-3
    assert abs(x.mean()) < 0.01 and abs(x.var() - 1) < 0.01
    tail = (np.abs(x) > 3.6541528853610088).mean()  # the ziggurat's base-layer tail is its own code path
    assert tail == pytest.approx(2 * stats.norm.sf(3.6541528853610088), rel=0.25)
    fast, slow = make_rng_states(9, 1), make_rng_states(9, 1)
    twin = PyNormal(PyXoroshiro(slow, 0))
    assert np.array_equal(normals(fast, 0, 5000), [twin.next() for _ in range(5000)])
    twin.gen.store()
    assert np.array_equal(fast, slow)


@pytest.mark.parametrize(("rate", "sigma", "clip", "adaptive"), [
    (1.0, 2.0, np.inf, False), (0.3, 1.5, np.inf, False), (0.5, 3.0, 6.0, False), (0.4, 1.0, np.inf, True)])
def test_dp_kernel_equals_numpy_reference(corpus, rate, sigma, clip, adaptive):
    fast, slow = _state(corpus), _state(corpus)
    for _ in range(3):
        freq = frequent_word_sets(fast.n_wk, 0.5) if adaptive else None
        n_fast = _kernel(fast, corpus, 0.3, 0.05, rate=rate, sigma=sigma, clip=clip, freq=freq)
        n_slow = reference_dp_sweep(slow, corpus.words, corpus.doc_ptr, 0.3, 0.05, rate=rate, sigma=sigma,
                                    clip=clip, freq=freq)
        assert n_fast == n_slow
    for name in ("z", "n_dk", "n_wk", "n_k", "rng"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    assert np.array_equal(np.stack(counts_from_z(fast.z, corpus.words, corpus.doc_ptr, corpus.n_words, K)[1]),
                          fast.n_wk)  # the true counts follow the drawn topics


def test_without_noise_and_subsampling_it_is_the_plain_dense_sweep(corpus):
    dp, plain = _state(corpus), _state(corpus)
    for _ in range(3):
        assert _kernel(dp, corpus, 0.3, 0.05, rate=1.0, sigma=0.0) == corpus.n_tokens
        sweep(plain, corpus.words, corpus.doc_ptr, 0.3, 0.05, sampler="dense")
    for name in ("z", "n_dk", "n_wk", "n_k", "rng"):
        assert np.array_equal(getattr(dp, name), getattr(plain, name)), name


def test_noise_changes_the_draws(corpus):
    quiet, noisy = _state(corpus), _state(corpus)
    _kernel(quiet, corpus, 0.3, 0.05, rate=1.0, sigma=0.0)
    _kernel(noisy, corpus, 0.3, 0.05, rate=1.0, sigma=5.0)
    assert not np.array_equal(quiet.z, noisy.z)


@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_poisson_subsampling_touches_a_binomial_share_and_leaves_the_rest(corpus, rate):
    state = _state(corpus)
    before = state.z.copy()
    counts = [_kernel(state, corpus, 0.3, 0.05, rate=rate, sigma=1.0) for _ in range(240)]  # var: ±9 % (1 sd)
    n = corpus.n_tokens
    assert np.mean(counts) == pytest.approx(rate * n, rel=0.05)
    assert np.var(counts) == pytest.approx(rate * (1 - rate) * n, rel=0.4)
    one = _state(corpus)
    _kernel(one, corpus, 0.3, 0.05, rate=0.05, sigma=1.0)
    assert (one.z != before).sum() <= 0.05 * n * 2 + 10  # unsampled tokens keep their topic


def test_frequent_word_sets_are_the_fewest_top_words_reaching_q():
    n_wk = np.array([[5, 0], [3, 1], [2, 1], [0, 8]], dtype=np.int32)  # topic 0: 5,3,2 (N=10); topic 1: 8,1,1
    freq = frequent_word_sets(n_wk, 0.6)
    assert freq[:, 0].tolist() == [True, True, False, False]  # 5 < 6, 5+3 ≥ 6
    assert freq[:, 1].tolist() == [False, False, False, True]  # 8 ≥ 0.6·10
    assert frequent_word_sets(np.zeros((3, 2), np.int32), 0.5).sum() == 0
    with pytest.raises(ModelError):
        frequent_word_sets(n_wk, 0.0)


def test_adaptive_subsampling_matches_eqs_11_and_12():
    """E|G_sub|/E|Ḡ_sub| = 1/(vq) = η and Var ratio = (1-γ)/(qv(1-vγ)) over many draws, with q the eligible share."""
    corpus = synthetic_lda(n_docs=60, doc_len=40, n_words=40, n_topics=3, seed=8)[0]
    gamma, v = 0.1, 4.0
    state = _state(corpus, k=3)
    freq = frequent_word_sets(state.n_wk, 0.5)
    eligible = int(freq[corpus.words, state.z].sum())
    q = eligible / corpus.n_tokens  # the share the sets cover (≥ 0.5 per topic by construction)
    uniform, adaptive = [], []
    for i in range(400):
        a, b = _state(corpus, k=3), _state(corpus, k=3)
        a.rng[:] = make_rng_states(100 + i, a.rng.shape[0])
        b.rng[:] = make_rng_states(900 + i, b.rng.shape[0])
        uniform.append(_kernel(a, corpus, 0.3, 0.05, rate=gamma, sigma=0.0))
        adaptive.append(_kernel(b, corpus, 0.3, 0.05, rate=v * gamma, sigma=0.0, freq=freq))
    assert np.mean(uniform) / np.mean(adaptive) == pytest.approx(1 / (v * q), rel=0.05)
    assert np.var(uniform) / np.var(adaptive) == pytest.approx((1 - gamma) / (q * v * (1 - v * gamma)), rel=0.3)


def test_large_epsilon_recovers_the_ground_truth():
    corpus, phi = synthetic_lda(n_docs=150, doc_len=60, n_words=40, n_topics=4, seed=21, alpha=0.2, beta=0.05)
    private = DPGibbsLDA(4, alpha=0.2, beta=0.05, rate=1.0, sigma=0.5, seed=1).fit(corpus, 60)
    plain_err = topic_l1_error(phi, DPGibbsLDA(4, alpha=0.2, beta=0.05, sigma=0.0, seed=1).fit(corpus, 60).phi())
    err = topic_l1_error(phi, private.phi())
    assert err < 0.25 and err < plain_err + 0.1


def test_bad_dp_settings_are_model_errors():
    for kwargs in ({"rate": 0.0}, {"rate": 1.5}, {"sigma": -1.0}, {"sigma": float("nan")}, {"clip": 0.0},
                   {"rate": 0.5, "adaptive": (3.0, 0.5)}, {"rate": 0.1, "adaptive": (0.5, 0.5)}):
        with pytest.raises(ModelError):
            DPGibbsLDA(4, **kwargs)
