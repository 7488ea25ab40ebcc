"""Macro-F1 of a linear SVM on θ."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score

from fedtopic.errors import EvalError
from fedtopic.eval.classify import svm_macro_f1


def _separable(n: int, seed: int):
    """θ concentrated on the label's own topic: linearly separable, 3 classes."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    alpha = np.full((n, 3), 0.3)
    alpha[np.arange(n), y] = 30.0
    return np.array([rng.dirichlet(a) for a in alpha]), y


def test_separable_data_scores_one():
    theta, y = _separable(150, 0)
    theta_test, y_test = _separable(60, 1)
    assert svm_macro_f1(theta, y, theta_test, y_test) == 1.0


def test_uninformative_theta_scores_near_chance():
    rng = np.random.default_rng(2)
    theta = rng.dirichlet(np.ones(4), size=300)
    y = rng.integers(0, 3, 300)
    score = svm_macro_f1(theta[:200], y[:200], theta[200:], y[200:])
    assert score < 0.6


def test_macro_average_weights_a_rare_class_like_a_common_one():
    theta, y = _separable(150, 7)
    # test set: 20 documents of class 0 (predicted right) and 2 of class 1 whose θ looks like class 2
    theta_test = np.vstack([theta[y == 0][:20], theta[y == 2][:2]])
    y_test = np.array([0] * 20 + [1] * 2)
    want = f1_score(y_test, np.array([0] * 20 + [2] * 2), average="macro")
    assert svm_macro_f1(theta, y, theta_test, y_test) == pytest.approx(want)
    assert want == pytest.approx(1 / 3)  # F1 = 1, 0, 0 over classes {0, 1, 2}


def test_deterministic_for_a_seed():
    theta, y = _separable(100, 3)
    noisy = np.clip(theta + np.random.default_rng(4).normal(0, 0.3, theta.shape), 0, None)
    args = (noisy[:70], y[:70], noisy[70:], y[70:])
    assert svm_macro_f1(*args, seed=5) == svm_macro_f1(*args, seed=5)


def test_bad_inputs_raise_eval_error():
    theta, y = _separable(20, 6)
    with pytest.raises(EvalError, match="fewer than 2 classes"):
        svm_macro_f1(theta, np.zeros(20, int), theta, y)
    with pytest.raises(EvalError, match="labels"):
        svm_macro_f1(theta, y[:-1], theta, y)
    with pytest.raises(EvalError, match="K="):
        svm_macro_f1(theta, y, theta[:, :2], y)
