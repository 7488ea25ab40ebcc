"""NNLS topic weights (infer for NMF models) against scipy's per-document active-set NNLS."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import nnls

from fedtopic.algorithms.nmf.model import nmf_topic_model
from fedtopic.models.nnls import nnls_weights


def test_matches_scipy_nnls_per_document() -> None:
    rng = np.random.default_rng(0)
    w = rng.random((40, 5)) * (rng.random((40, 5)) < 0.4)
    a = sp.csr_matrix(rng.poisson(0.4, (25, 40)).astype(float))
    got = nnls_weights(a, w)
    want = np.array([nnls(w, row)[0] for row in a.toarray()])
    assert got.min() >= 0
    np.testing.assert_allclose(got, want, atol=1e-6)
    assert np.array_equal(nnls_weights(sp.csr_matrix((0, 40)), w), np.zeros((0, 5)))


def test_the_model_transform_uses_nnls_and_round_trips(tmp_path) -> None:
    rng = np.random.default_rng(1)
    w = rng.random((6, 3))
    model = nmf_topic_model(w, ["apple", "banana", "cherry", "grape", "lemon", "mango"], "nmf")
    np.testing.assert_allclose(model.phi.sum(axis=1), 1.0)
    model.save(tmp_path)
    loaded = type(model).load(tmp_path)
    assert loaded.factors is not None and np.array_equal(loaded.factors, model.factors)
    theta = loaded.transform(["apple apple grape", "nothing known"])
    assert theta.shape == (2, 3) and np.all(theta[1] == 0)
    np.testing.assert_allclose(theta[0], nnls(w, np.array([2, 0, 0, 1, 0, 0.0]))[0], atol=1e-6)
