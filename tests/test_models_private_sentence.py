"""iFTM's private MH SentenceLDA (Alg. 2): Eq. 13's stationary distribution over sentence topics (chi-square),
recovery of ground-truth topics from SentenceLDA data (ε = ∞ and 11), one topic per sentence, adoption of a
master's model, and the errors a corpus without sentences gets."""

import itertools
import math

import numpy as np
import pytest
from _lda_synth import synthetic_lda, synthetic_sentence_lda, topic_l1_error
from scipy import stats

from fedtopic.errors import ModelError
from fedtopic.models._mh_private import build_dense_alias
from fedtopic.models._mh_sentence import mh_sentence_sweep
from fedtopic.models.private_mh import PrivateMHSentenceLDA
from fedtopic.models.rng import make_rng_states


def test_sentence_chain_has_eq_13_as_stationary_distribution():
    """ε = ∞, fixed Φ and tables: the joint topics of a document's three sentences follow Eq. 13 (θ collapsed)."""
    k = 3
    words = np.array([0, 1, 2, 2, 0], dtype=np.int32)
    sent_ptr = np.array([0, 2, 3, 5], dtype=np.int64)  # sentences (0, 1), (2), (2, 0)
    doc_sent = np.array([0, 3], dtype=np.int64)
    phi = np.array([[0.6, 0.3, 0.1], [0.1, 0.2, 0.7], [0.3, 0.4, 0.3]])
    alpha = 0.7
    prob, alt, weight = np.empty((3, k)), np.empty((3, k), np.int32), np.empty((3, k))
    build_dense_alias(np.random.default_rng(0).random((k, 3)) + 0.1, np.ones(k), 0.0, 0.0, prob, alt, weight)
    z = np.zeros(5, dtype=np.int32)
    n_dk = np.array([[3, 0, 0]], dtype=np.int32)
    ckw, ck = np.zeros((k, 3)), np.zeros(k)
    rng = make_rng_states(5, 1)
    bw, bv = np.empty(4, np.int64), np.empty(4)
    acc, sw, sv, argmax = np.zeros(3), np.empty(3, np.int64), np.empty(3), np.empty(2, np.int64)
    seen = {}
    for it in range(50_000):
        mh_sentence_sweep(words, doc_sent, sent_ptr, z, n_dk, ckw, ck, np.log(phi), alpha, np.uint64(1), 3,
                          math.inf, 0.2, prob, alt, weight, bw, bv, acc, sw, sv, argmax, rng, 0)
        assert z[0] == z[1] and z[3] == z[4]
        if it >= 1000:
            state = (int(z[0]), int(z[2]), int(z[3]))
            seen[state] = seen.get(state, 0) + 1
    states = list(itertools.product(range(k), repeat=3))
    target = []
    for s in states:  # p(z) ∝ Π_s Π_{i∈s} φ_{z_s w_i} · Π_k Γ(n_k + α), n_k counting sentences
        lik = phi[s[0], 0] * phi[s[0], 1] * phi[s[1], 2] * phi[s[2], 2] * phi[s[2], 0]
        n = np.bincount(s, minlength=k)
        target.append(lik * np.prod([math.gamma(c + alpha) for c in n]))
    target = np.array(target) / np.sum(target)
    observed = np.array([seen.get(s, 0) for s in states])
    assert stats.chisquare(observed, target * observed.sum()).pvalue > 1e-4
    start = np.zeros((k, 3))
    start[0] = np.bincount(words, minlength=3)  # every sentence began at topic 0
    final = np.zeros((k, 3))
    np.add.at(final, (z, words), 1.0)
    assert n_dk.sum() == 3 and np.allclose(start + ckw, final)  # the weights moved with the sentences


@pytest.mark.parametrize("eps", [math.inf, 11.0])
def test_private_sentence_mh_recovers_ground_truth_topics(eps):
    corpus, phi = synthetic_sentence_lda(n_docs=150, sentences=6, sentence_len=8, n_words=40, n_topics=4, seed=7,
                                         alpha=0.3, beta=0.05)
    errors = []
    for seed in (3, 4, 5):  # an MH chain can sit in a mode with two topics merged: judge the median of three
        model = PrivateMHSentenceLDA(4, alpha=0.3, beta=0.05, epsilon=eps, tau=0.2, seed=seed,
                                     debias=not math.isinf(eps))
        model.initialize(corpus)
        for _ in range(40):
            model.sweep()
        starts, ends = corpus.sent_ptr[:-1], corpus.sent_ptr[1:] - 1
        assert np.array_equal(model.z[starts], model.z[ends])  # one topic per sentence
        assert model.n_dk.sum() == corpus.n_sentences
        errors.append(topic_l1_error(phi, model.phi()))
    assert np.median(errors) < (0.25 if math.isinf(eps) else 0.3)  # a random Φ is ~1.5 away


def test_adopting_a_model_reassigns_whole_sentences():
    corpus, phi = synthetic_sentence_lda(n_docs=80, sentences=5, sentence_len=6, n_words=30, n_topics=3, seed=2)
    model = PrivateMHSentenceLDA(3, alpha=0.2, beta=0.05, seed=1)
    model.initialize(corpus)
    model.adopt(phi)
    assert np.array_equal(model.z[corpus.sent_ptr[:-1]], model.z[corpus.sent_ptr[1:] - 1])
    assert topic_l1_error(phi, model.phi()) < 0.5


def test_a_corpus_without_sentences_is_a_model_error():
    corpus, _ = synthetic_lda(n_docs=5, doc_len=4, n_words=6, n_topics=2, seed=0)
    with pytest.raises(ModelError, match="sentence boundaries"):
        PrivateMHSentenceLDA(2).initialize(corpus)
