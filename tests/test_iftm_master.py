"""iFTM's master: Eq. 29 against a slow reference, Alg. 3 merges (union-find, weights, heterogeneous K), Alg. 4
composes (each global topic at most once), and the topic-wise normalisation claim (identical alias tables)."""

import numpy as np
import pytest

from fedtopic.errors import ModelError
from fedtopic.models._mh_private import build_dense_alias
from fedtopic.models.topic_merge import (
    GlobalModel,
    compose,
    integrate,
    integrate_all,
    normalize_topics,
    similarity,
)


def _rho_slow(p, q, top):
    ti, tj = set(np.argsort(-p)[:top]), set(np.argsort(-q)[:top])
    common = sum(min(p[w], q[w]) for w in ti & tj)
    return common / (sum(p[w] for w in ti) + sum(q[w] for w in tj) - common)


def test_eq_29_matches_a_slow_reference():
    rng = np.random.default_rng(0)
    a = normalize_topics(rng.dirichlet(np.full(50, 0.2), size=7))
    b = normalize_topics(rng.dirichlet(np.full(50, 0.2), size=5))
    fast = similarity(a, b, top=10)
    slow = np.array([[_rho_slow(p, q, 10) for q in b] for p in a])
    np.testing.assert_allclose(fast, slow, rtol=1e-12)
    assert np.allclose(np.diag(similarity(a, a, 10)), 1.0)


def _topic(v, words, rng):
    t = np.full(v, 1e-4)
    t[words] = rng.dirichlet(np.ones(len(words)))
    return t / t.sum()


def test_integration_merges_redundant_topics_weighted_by_data_amount():
    rng = np.random.default_rng(1)
    v = 60
    shared = _topic(v, [0, 1, 2, 3, 4], rng)
    p1 = np.vstack([shared, _topic(v, [10, 11, 12, 13], rng)])
    p2 = np.vstack([shared * 0.9 + _topic(v, [0, 1, 2, 3, 4], rng) * 0.1, _topic(v, [20, 21, 22], rng),
                    _topic(v, [30, 31, 32], rng)])  # K differs: 2 and 3 topics
    model = integrate_all([(p1, 100.0), (p2, 300.0)], xi=0.5, top=5)
    assert model.topics.shape == (4, v)  # the shared topic merged, three others kept
    np.testing.assert_allclose(model.topics.sum(axis=1), 1.0)
    merged = int(np.argmax(model.weights))
    assert model.weights[merged] == 400.0
    np.testing.assert_allclose(model.topics[merged], (100 * p1[0] + 300 * normalize_topics(p2)[0]) / 400)
    again = integrate_all([(p1, 100.0), (p2, 300.0)], xi=0.5, top=5)
    assert np.array_equal(again.topics, model.topics)  # pure: same inputs, same bytes


def test_union_find_joins_chains():
    v = 40
    base = np.zeros((3, v))
    base[0, [0, 1, 2, 3]] = [0.4, 0.3, 0.2, 0.1]
    base[1, [0, 1, 2, 4]] = [0.4, 0.3, 0.2, 0.1]  # close to 0
    base[2, [5, 1, 2, 4]] = [0.4, 0.3, 0.2, 0.1]  # close to 1, not to 0
    rho = similarity(normalize_topics(base), normalize_topics(base), 4)
    assert rho[0, 1] >= 0.5 and rho[1, 2] >= 0.3 and rho[0, 2] < rho[1, 2]
    model = integrate(None, base, 1.0, xi=min(rho[0, 1], rho[1, 2]), top=4)
    assert model.topics.shape[0] == 1  # (0,1) and (1,2) redundant: one set


def test_composition_uses_each_global_topic_once():
    rng = np.random.default_rng(2)
    v = 50
    g = GlobalModel(np.vstack([_topic(v, [0, 1, 2], rng), _topic(v, [10, 11], rng)]), np.array([1.0, 1.0]))
    local = np.vstack([g.topics[0] * 0.95 + 0.05 / v, g.topics[0] * 0.9 + 0.1 / v, _topic(v, [40, 41], rng)])
    new = compose(g, local, xi=0.5, top=5)
    assert np.array_equal(new[0], g.topics[0])  # replaced by the closest global topic
    assert not np.array_equal(new[1], g.topics[0])  # that one is used up; no other is similar enough
    np.testing.assert_allclose(new[2], normalize_topics(local)[2])  # a topic only this party has stays


def test_topic_wise_normalisation_keeps_the_alias_tables():
    """§3.1.5: M_p and M̂_p give identical word-topic tables. M̂_p is (M_p + β) normalised per topic, so Eq. 20's
    table from the counts with β and the one from M̂_p alone coincide."""
    rng = np.random.default_rng(3)
    m, beta = rng.gamma(0.5, 20.0, size=(6, 30)), 0.01
    tables = []
    for weights, ck, b, vb in ((m, m.sum(axis=1), beta, 30 * beta), (normalize_topics(m + beta), np.ones(6), 0.0, 0.0)):
        prob, alt, w = np.empty((30, 6)), np.empty((30, 6), np.int32), np.empty((30, 6))
        build_dense_alias(weights, ck, b, vb, prob, alt, w)
        tables.append((prob, alt))
    np.testing.assert_allclose(tables[0][0], tables[1][0], rtol=1e-9)
    assert np.array_equal(tables[0][1], tables[1][1])


def test_bad_merge_parameters():
    with pytest.raises(ModelError):
        integrate(None, np.ones((2, 5)), 1.0, xi=0.0, top=3)
    with pytest.raises(ModelError):
        integrate(None, np.ones((2, 5)), 1.0, xi=1.5, top=3)
    with pytest.raises(ModelError):
        integrate(None, np.ones((2, 5)), 1.0, xi=0.5, top=0)
