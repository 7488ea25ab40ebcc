"""Learned priors (models.hyperopt, optim_interval): Minka's fixed point from summable histograms, checked against
a direct computation and against the likelihood it maximises; the dense kernel with an asymmetric α against the
numpy reference; GibbsLDA learning, saving and loading α."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
from _lda_synth import synthetic_lda
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.special import digamma, gammaln

from fedtopic.errors import ModelError
from fedtopic.models import _buckets
from fedtopic.models.gibbs import sweep
from fedtopic.models.hyperopt import doc_topic_histogram, optimize_alpha, optimize_beta
from fedtopic.models.lda import GibbsLDA
from fedtopic.models.reference import reference_sweep
from fedtopic.models.state import init_state


def _dirichlet_multinomial(alpha: np.ndarray, n_docs: int, seed: int, low: int = 20, high: int = 120) -> np.ndarray:
    """int64[D, K] document-topic counts: θ_d ~ Dir(α), n_d ~ Multinomial(N_d, θ_d)."""
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(alpha, size=n_docs)
    return np.stack([rng.multinomial(n, p) for n, p in zip(rng.integers(low, high, size=n_docs), theta)])


def _direct_alpha_step(alpha: np.ndarray, n_dk: np.ndarray) -> np.ndarray:
    """One fixed-point step over the documents themselves (no histogram): Minka 2000 Eq. 55."""
    numerator = (digamma(n_dk + alpha) - digamma(alpha)).sum(axis=0)
    denominator = (digamma(n_dk.sum(axis=1) + alpha.sum()) - digamma(alpha.sum())).sum()
    return np.maximum(alpha * numerator / denominator, 1e-5)


def _dm_log_likelihood(alpha: np.ndarray, n_dk: np.ndarray) -> float:
    """Σ_d log p(n_d | α) of the Dirichlet-multinomial (up to the multinomial coefficient)."""
    lengths = n_dk.sum(axis=1)
    return float((gammaln(alpha.sum()) - gammaln(lengths + alpha.sum())).sum()
                 + (gammaln(n_dk + alpha) - gammaln(alpha)).sum())


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 30), st.integers(2, 6))
def test_histograms_of_two_parties_add_up_to_the_histogram_of_their_union(seed, n_docs, n_topics):
    rng = np.random.default_rng(seed)
    n_dk = rng.integers(0, 40, size=(n_docs, n_topics)) * (rng.random((n_docs, n_topics)) < 0.5)
    cut = int(rng.integers(0, n_docs + 1))
    joint, summed = doc_topic_histogram(n_dk), doc_topic_histogram(n_dk[:cut]) + doc_topic_histogram(n_dk[cut:])
    assert np.array_equal(joint.topic_counts[:, 1:], summed.topic_counts[:, 1:joint.lengths.shape[0]])
    assert np.array_equal(joint.lengths, summed.lengths[: joint.lengths.shape[0]])
    assert not summed.lengths[joint.lengths.shape[0]:].any()


def test_a_step_from_histograms_equals_the_step_over_the_documents():
    n_dk = _dirichlet_multinomial(np.array([0.1, 0.5, 2.0, 0.05]), 300, seed=1)
    alpha = np.array([0.3, 0.3, 0.3, 0.3])
    histogram = doc_topic_histogram(n_dk)
    np.testing.assert_allclose(optimize_alpha(alpha, histogram, steps=1), _direct_alpha_step(alpha, n_dk), rtol=1e-12)
    direct = alpha
    for _ in range(10):
        direct = _direct_alpha_step(direct, n_dk)
    np.testing.assert_allclose(optimize_alpha(alpha, histogram), direct, rtol=1e-10)


def test_fixed_point_reaches_the_maximum_likelihood_alpha():
    """Independent check: scipy's optimiser on the Dirichlet-multinomial likelihood finds the same α, and the
    learned α lies near the true one."""
    true = np.array([0.05, 0.2, 0.5, 1.0, 2.0])
    n_dk = _dirichlet_multinomial(true, 4000, seed=2)
    learned = optimize_alpha(np.full(5, 1.0), doc_topic_histogram(n_dk), steps=2000)
    found = minimize(lambda log_a: -_dm_log_likelihood(np.exp(log_a), n_dk), np.zeros(5), method="L-BFGS-B")
    np.testing.assert_allclose(learned, np.exp(found.x), rtol=2e-3)
    np.testing.assert_allclose(learned, true, rtol=0.15)
    assert _dm_log_likelihood(learned, n_dk) > _dm_log_likelihood(np.full(5, 1.0), n_dk)


def test_beta_fixed_point_reaches_the_maximum_likelihood_beta():
    """Topic-word counts drawn from Dir(β = 0.03) rows: the learned symmetric β maximises Σ_k log p(n_k | β)."""
    rng = np.random.default_rng(3)
    n_words = 400
    phi = rng.dirichlet(np.full(n_words, 0.03), size=8)
    n_wk = np.stack([rng.multinomial(3000, p) for p in phi]).T  # [V, K]

    def log_likelihood(beta: float) -> float:
        return float((gammaln(n_words * beta) - gammaln(n_wk.sum(axis=0) + n_words * beta)).sum()
                     + (gammaln(n_wk + beta) - gammaln(beta)).sum())

    learned = optimize_beta(0.5, n_wk, steps=3000)
    found = minimize(lambda b: -log_likelihood(float(np.exp(b[0]))), np.log([0.5]), method="L-BFGS-B")
    assert learned == pytest.approx(float(np.exp(found.x[0])), rel=2e-3)
    assert learned == pytest.approx(0.03, rel=0.15)


@pytest.mark.parametrize("k", [7, 300])  # both O(K) kernels (block runs up to K = 256, the scan above)
@pytest.mark.parametrize("with_frozen", [False, True])
def test_dense_kernel_with_asymmetric_alpha_equals_the_numpy_reference(k, with_frozen, monkeypatch):
    """(The buckets with a learned α: tests/test_models_gibbs.py, against their own reference.)"""
    monkeypatch.setattr(_buckets, "BUCKETS_FROM", 10**9)  # the scan kernel even where the words hold few topics
    corpus = synthetic_lda(n_docs=30, doc_len=25, n_words=50, n_topics=4, seed=5)[0]
    alpha = np.random.default_rng(k).uniform(0.01, 2.0, size=k)
    frozen = np.random.default_rng(1).integers(0, 20, size=(corpus.n_words, k)).astype(np.int32) if with_frozen else None
    fast, slow = (init_state(corpus.words, corpus.doc_ptr, corpus.n_words, k, 9) for _ in range(2))
    for _ in range(3):
        sweep(fast, corpus.words, corpus.doc_ptr, alpha, 0.05, frozen_wk=frozen, sampler="dense")
        reference_sweep(slow, corpus.words, corpus.doc_ptr, alpha, 0.05, frozen_wk=frozen)
    for name in ("z", "n_dk", "n_wk", "n_k", "rng"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name


def test_an_equal_alpha_vector_samples_exactly_as_the_scalar_and_other_samplers_refuse_a_vector():
    corpus = synthetic_lda(n_docs=30, doc_len=25, n_words=50, n_topics=4, seed=6)[0]
    states = [init_state(corpus.words, corpus.doc_ptr, corpus.n_words, 6, 2) for _ in range(2)]
    for _ in range(3):
        sweep(states[0], corpus.words, corpus.doc_ptr, 0.2, 0.05, sampler="dense")
        sweep(states[1], corpus.words, corpus.doc_ptr, np.full(6, 0.2), 0.05, sampler="dense")
    assert np.array_equal(states[0].z, states[1].z)
    for sampler in ("sparse", "mh"):
        with pytest.raises(ModelError, match="sampler=dense"):
            sweep(states[0], corpus.words, corpus.doc_ptr, np.full(6, 0.2), 0.05, sampler=sampler)
    with pytest.raises(ModelError, match="one value per topic"):
        sweep(states[0], corpus.words, corpus.doc_ptr, np.full(5, 0.2), 0.05, sampler="dense")


def _asymmetric_corpus(seed: int):
    """A corpus whose documents draw θ from an asymmetric Dir(α): a few topics common, most rare."""
    from fedtopic.corpus.types import Corpus

    rng = np.random.default_rng(seed)
    true = np.array([1.2, 0.5, 0.2, 0.1, 0.05, 0.05])
    phi = rng.dirichlet(np.full(80, 0.05), size=6)
    docs = [rng.choice(80, size=60, p=rng.dirichlet(true) @ phi) for _ in range(400)]
    corpus = Corpus(words=np.concatenate(docs).astype(np.int32), doc_ptr=np.arange(401, dtype=np.int64) * 60,
                    vocab=tuple(f"w{v}" for v in range(80)))
    return corpus, true


def test_gibbs_lda_learns_an_asymmetric_alpha_that_raises_the_likelihood_and_keeps_it_on_save(tmp_path):
    corpus, _ = _asymmetric_corpus(7)
    fixed = GibbsLDA(6, alpha=50.0 / 6, sampler="dense", seed=3).fit(corpus, 150)  # the paper's 50/K
    learned = GibbsLDA(6, sampler="dense", seed=3, optim_interval=10).fit(corpus, 150)
    assert learned.alpha.shape == (6,)
    assert np.sum(learned.alpha) < 6 * fixed.alpha / 10  # far below the paper's 50/K per topic (true Σα 2.1)
    ranked = np.sort(learned.alpha)[::-1]
    assert ranked[0] > 5 * ranked[-1]  # asymmetric, as the corpus is (true α from 1.2 down to 0.05)
    assert learned.log_likelihood() > fixed.log_likelihood()
    np.testing.assert_allclose(learned.theta().sum(axis=1), 1.0)
    again = GibbsLDA.load(learned.save(tmp_path / "m"))
    assert np.array_equal(again.alpha, learned.alpha) and again.optim_interval == 10


def test_gibbs_lda_learns_beta_on_request_and_refuses_what_cannot_work():
    corpus, _ = _asymmetric_corpus(8)
    model = GibbsLDA(6, sampler="dense", seed=1, optim_interval=5, optim_beta=True).fit(corpus, 20)
    assert model.beta != 0.01 and model.beta > 0
    with pytest.raises(ModelError, match="dense sampler"):
        GibbsLDA(6, sampler="mh", optim_interval=10)
    with pytest.raises(ModelError, match="optim_interval > 0"):
        GibbsLDA(6, optim_beta=True)
    with pytest.raises(ModelError, match="optim_interval"):
        GibbsLDA(6, optim_interval=-1)


def test_train_learns_alpha_and_infer_and_gensim_export_use_it(tmp_path, capsys):
    """`train --opt optim_interval=5`: the run's model carries K learned α values, used by infer, the Python API
    and the gensim export; an MH sampler with it is refused in one line."""
    from _texts import theme_texts, write_jsonl

    from fedtopic.algorithms.model import TopicModel
    from fedtopic.cli.main import main

    write_jsonl(tmp_path / "d.jsonl", theme_texts(120, seed=3))
    base = ["train", "--corpus", str(tmp_path / "d.jsonl"), "-k", "3", "--iterations", "20"]
    assert main(base + ["--opt", "optim_interval=5", "--out", str(tmp_path / "run")]) == 0
    alpha = np.load(tmp_path / "run" / "model.npz")["alpha"]
    assert alpha.shape == (3,) and alpha.min() > 0 and np.ptp(alpha) > 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    np.testing.assert_allclose(summary["alpha"], alpha)
    model = TopicModel.load(tmp_path / "run")
    assert "learned" in repr(model)
    theta = model.transform(["", model.vocab[0]])
    np.testing.assert_allclose(theta[0], alpha / alpha.sum())  # no known word: the prior mean
    capsys.readouterr()
    assert main(["infer", str(tmp_path / "run"), "--text", "the match and the goal"]) == 0
    if importlib.util.find_spec("gensim") is not None:
        from gensim.models import LdaModel

        assert main(["export", "gensim", str(tmp_path / "run"), "--out", str(tmp_path / "g" / "lda")]) == 0
        np.testing.assert_allclose(LdaModel.load(str(tmp_path / "g" / "lda")).alpha, alpha)
    capsys.readouterr()
    assert main(base + ["--opt", "optim_interval=5", "--opt", "sampler=mh", "--out", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err.strip()
    assert "sampler=dense" in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_two_threads_learning_alpha_stay_consistent_and_reproducible():
    corpus, _ = _asymmetric_corpus(9)
    runs = [GibbsLDA(6, sampler="dense", seed=2, threads=2, optim_interval=5).fit(corpus, 15) for _ in range(2)]
    assert np.array_equal(runs[0].state.z, runs[1].state.z) and np.array_equal(runs[0].alpha, runs[1].alpha)
    n_wk = np.zeros_like(runs[0].state.n_wk)
    np.add.at(n_wk, (corpus.words, runs[0].state.z), 1)
    assert np.array_equal(n_wk, runs[0].state.n_wk)
