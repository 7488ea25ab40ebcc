"""The topic browser's maths (eval/topic_view) against slow references: relevance (Sievert and Shirley 2014),
the candidate lists, Jensen–Shannon against scipy, principal coordinates against known geometry, and the
matching that keeps topic ids stable."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import jensenshannon

from fedtopic.eval.topic_view import (
    LAMBDA_GRID,
    hellinger_matrix,
    hellinger_sparse,
    jensen_shannon,
    marginal,
    match_topics,
    principal_coordinates,
    relevance,
    relevance_candidates,
)


def _phi(rng: np.random.Generator, k: int, v: int) -> np.ndarray:
    phi = rng.dirichlet(np.full(v, 0.1), size=k)
    return phi / phi.sum(axis=1, keepdims=True)


def test_relevance_is_the_papers_formula_word_by_word():
    rng = np.random.default_rng(0)
    phi, share = _phi(rng, 4, 30), rng.dirichlet(np.ones(4))
    p_w = marginal(phi, share)
    for lam in (0.0, 0.3, 1.0):
        r = relevance(phi, p_w, lam)
        for k in range(4):
            for w in range(30):
                expected = lam * np.log(phi[k, w]) + (1 - lam) * np.log(phi[k, w] / sum(share[j] * phi[j, w] for j in range(4)))
                assert r[k, w] == pytest.approx(expected, rel=1e-12, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(2, 6), v=st.integers(5, 60), n=st.integers(1, 8))
def test_candidates_hold_the_top_words_at_every_grid_lambda(seed, k, v, n):
    rng = np.random.default_rng(seed)
    phi, share = _phi(rng, k, v), rng.dirichlet(np.ones(k))
    phi = np.maximum(phi, 1e-12)
    phi /= phi.sum(axis=1, keepdims=True)
    p_w = marginal(phi, share)
    cands = relevance_candidates(phi, p_w, n)
    for lam in LAMBDA_GRID:
        r = relevance(phi, p_w, lam)
        for t in range(k):
            threshold = np.sort(r[t])[::-1][min(n, v) - 1]
            must = set(np.flatnonzero(r[t] > threshold + 1e-12).tolist())  # strictly above the n-th (ties aside)
            assert must <= set(cands[t].tolist())
    for t in range(k):  # heaviest first, no repeats
        assert len(set(cands[t].tolist())) == len(cands[t])
        assert np.all(np.diff(phi[t, cands[t]]) <= 0)


def test_jensen_shannon_matches_scipy():
    rng = np.random.default_rng(1)
    phi = _phi(rng, 6, 40)
    phi[0, :5] = 0.0
    phi[0] /= phi[0].sum()
    ours = jensen_shannon(phi)
    for i in range(6):
        for j in range(6):
            assert ours[i, j] == pytest.approx(jensenshannon(phi[i], phi[j]) ** 2, abs=1e-12)


def test_principal_coordinates_recover_a_planar_configuration():
    rng = np.random.default_rng(2)
    points = rng.normal(size=(7, 2))
    dist = np.linalg.norm(points[:, None] - points[None], axis=2)
    coords = principal_coordinates(dist)
    assert np.allclose(np.linalg.norm(coords[:, None] - coords[None], axis=2), dist, atol=1e-9)
    assert np.array_equal(coords, principal_coordinates(dist))  # deterministic signs


def test_matching_follows_a_renumbering_and_measures_drift():
    topics = [{"a": 0.5, "b": 0.3, "c": 0.2}, {"x": 0.6, "y": 0.4}, {"p": 0.7, "q": 0.3}]
    shuffled = [topics[2], topics[0], {"x": 0.5, "y": 0.4, "z": 0.1}]
    ids, drift = match_topics(topics, shuffled, [10, 11, 12])
    assert ids == [12, 10, 11]
    assert drift[0] == pytest.approx(0.0, abs=1e-12) and drift[1] == pytest.approx(0.0, abs=1e-12)
    assert 0.0 < drift[2] < 0.5


def test_matching_keeps_positions_under_small_moves_and_gives_new_topics_new_ids():
    before = [{"a": 0.5, "b": 0.5}, {"a": 0.45, "b": 0.55}]
    after = [{"a": 0.46, "b": 0.54}, {"a": 0.5, "b": 0.5}, {"new": 1.0}]  # a near-tie: positions kept
    ids, drift = match_topics(before, after, [0, 1])
    assert ids == [0, 1, 2] and drift[2] is None
    first_ids, first_drift = match_topics([], after, [])
    assert first_ids == [0, 1, 2] and first_drift == [None, None, None]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from("abcdefgh"), st.floats(0.0, 1.0), max_size=6), min_size=1, max_size=4),
       st.lists(st.dictionaries(st.sampled_from("abcdefgh"), st.floats(0.0, 1.0), max_size=6), min_size=1, max_size=4))
def test_the_hellinger_matrix_is_the_pairwise_distance(a, b):
    m = hellinger_matrix(a, b)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            # squared: H near 0 is √(1 − BC), which turns a rounding of BC (1e-16) into 1e-8 in either form
            assert m[i, j] ** 2 == pytest.approx(hellinger_sparse(x, y) ** 2, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 5), v=st.integers(1, 40), n=st.integers(1, 10))
def test_candidates_equal_a_sort_per_lambda_with_ties_and_zeros(seed, k, v, n):
    """The one-pass selection against sorting every λ's scores (ties to the lower id; φ = 0 never a candidate),
    on weights with many ties and zeros."""
    rng = np.random.default_rng(seed)
    phi = rng.integers(0, 4, (k, v)).astype(float)
    phi[:, 0] += 1.0  # every topic has a word
    phi /= phi.sum(axis=1, keepdims=True)
    p_w = marginal(phi, np.full(k, 1.0 / k))
    got = relevance_candidates(phi, p_w, n)
    for t in range(k):
        chosen: set[int] = set()
        for lam in LAMBDA_GRID:
            r = relevance(phi, p_w, lam)[t]
            ids = sorted((w for w in range(v) if np.isfinite(r[w])), key=lambda w: (-r[w], w))[:n]  # φ = 0: −inf or NaN
            chosen.update(ids)
        want = sorted(chosen, key=lambda w: (-phi[t, w], w))
        assert got[t].tolist() == want


def test_drift_is_its_definition_and_bounds_the_whole_vocabularys_distance_when_the_top_words_stay():
    """Issue 46, item 3, against direct computations: drift is the Hellinger distance between the recorded top
    words' φ plus one cell for the rest (docs/dashboard.md); where a topic's top words are the same at both
    snapshots it is a lower bound of the distance over the whole vocabulary (the same coarse-graining of both),
    and it is closer to that distance than the old estimate (the listed words renormalised) was."""
    from fedtopic.runs.topic_snapshot import top_of

    rng = np.random.default_rng(7)
    k, v = 8, 3000
    phi1 = rng.dirichlet(np.full(v, 0.05), size=k)
    phi2 = phi1 * rng.lognormal(0.0, 0.3, size=phi1.shape)  # every weight moves a little, the tail reorders
    phi2 /= phi2.sum(axis=1, keepdims=True)
    vocab = np.array([f"w{i}" for i in range(v)])

    def recorded(phi):
        ids, weights = top_of(phi, 10)
        return ids, [dict(zip(vocab[i], w)) for i, w in zip(ids, weights)]

    (ids1, t1), (ids2, t2) = recorded(phi1), recorded(phi2)
    _, drift = match_topics(t1, t2, list(range(k)))
    direct = np.sqrt(np.maximum(0.0, 1.0 - np.sqrt(phi1 * phi2).sum(axis=1)))
    for topic in range(k):
        cells = sorted(set(ids1[topic]) | set(ids2[topic]))
        p = np.append(phi1[topic, cells] * np.isin(cells, ids1[topic]), 1 - phi1[topic, ids1[topic]].sum())
        q = np.append(phi2[topic, cells] * np.isin(cells, ids2[topic]), 1 - phi2[topic, ids2[topic]].sum())
        assert drift[topic] == pytest.approx(np.sqrt(max(0.0, 1 - np.sqrt(p * q).sum())), abs=1e-9)
        if set(ids1[topic]) == set(ids2[topic]):
            assert drift[topic] <= direct[topic] + 1e-9
    renormalised = [hellinger_sparse({w: 2 * x / sum(a.values()) for w, x in a.items()},  # the old estimate
                                     {w: 2 * x / sum(b.values()) for w, x in b.items()}) for a, b in zip(t1, t2)]
    assert np.median(np.abs(np.asarray(renormalised) - direct)) > np.median(np.abs(np.asarray(drift) - direct))
