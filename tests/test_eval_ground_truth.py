"""TSS and DSS (gFedNTM Eqs. 4–6) against per-pair loops."""

from __future__ import annotations

import time

import numpy as np
import pytest

import fedtopic.eval.ground_truth as gt
from fedtopic.errors import EvalError
from fedtopic.eval.ground_truth import dss, hellinger_similarity, tss


def _hellinger_sq(p, q):
    return 0.5 * np.sum((np.sqrt(p) - np.sqrt(q)) ** 2)


def test_similarity_is_one_minus_squared_hellinger():
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(7), size=3), rng.dirichlet(np.ones(7), size=4)
    want = [[1 - _hellinger_sq(a, b) for b in q] for a in p]
    np.testing.assert_allclose(hellinger_similarity(p, q), want, rtol=1e-12)
    disjoint = np.array([[0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5]])
    np.testing.assert_allclose(hellinger_similarity(disjoint, disjoint), np.eye(2))


def test_tss_is_k_for_identical_phi_and_ignores_topic_order():
    rng = np.random.default_rng(1)
    phi = rng.dirichlet(np.full(50, 0.1), size=6)
    assert tss(phi, phi) == pytest.approx(6.0)
    assert tss(phi, phi[rng.permutation(6)]) == pytest.approx(6.0)
    other = rng.dirichlet(np.full(50, 0.1), size=6)
    assert tss(phi, other) < 6.0


def test_tss_matches_loop_with_different_topic_counts():
    rng = np.random.default_rng(2)
    true, inferred = rng.dirichlet(np.ones(20), size=3), rng.dirichlet(np.ones(20), size=5)
    want = sum(max(1 - _hellinger_sq(t, i) for i in inferred) for t in true)
    assert tss(true, inferred) == pytest.approx(want, rel=1e-12)


def test_dss_zero_for_identical_theta_and_for_relabelled_topics():
    theta = np.random.default_rng(3).dirichlet(np.ones(4), size=30)
    assert dss(theta, theta) == pytest.approx(0.0, abs=1e-14)
    assert dss(theta, theta[:, ::-1]) == pytest.approx(0.0, abs=1e-14)


def test_dss_matches_pair_loop_and_block_boundaries(monkeypatch):
    rng = np.random.default_rng(4)
    true, inferred = rng.dirichlet(np.ones(4), size=23), rng.dirichlet(np.ones(6), size=23)
    total = sum(
        abs((1 - _hellinger_sq(true[i], true[j])) - (1 - _hellinger_sq(inferred[i], inferred[j])))
        for i in range(23)
        for j in range(23)
        if i != j
    )
    monkeypatch.setattr(gt, "_BLOCK_ELEMENTS", 23 * 5)  # force 5 blocks, last one partial
    assert dss(true, inferred) == pytest.approx(total / (23 * 22), rel=1e-12)
    assert dss(true, inferred, per_document_sum=True) == pytest.approx(total / 23, rel=1e-12)


def test_dss_for_5000_documents_is_quick():
    rng = np.random.default_rng(5)
    true, inferred = rng.dirichlet(np.ones(20), size=5000), rng.dirichlet(np.ones(20), size=5000)
    start = time.perf_counter()
    value = dss(true, inferred)
    assert time.perf_counter() - start < 15
    assert 0 < value < 1


def test_bad_inputs_raise_eval_error():
    theta = np.full((3, 2), 0.5)
    with pytest.raises(EvalError, match="3 documents"):
        dss(theta, theta[:2])
    with pytest.raises(EvalError, match="at least 2"):
        dss(theta[:1], theta[:1])
    with pytest.raises(EvalError, match="sum to 1"):
        tss(theta * 2, theta)
    with pytest.raises(EvalError, match="V="):
        tss(theta, np.full((3, 4), 0.25))
