"""Document classification on topic mixtures: macro-F1 of a linear SVM on θ.

scikit-learn is imported when a classifier is fitted, not with this module: a run without labels never needs it,
and it is 140 MB of a process's memory (a `train` of an unlabelled corpus would carry it for nothing)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from fedtopic.errors import EvalError


def _fitted_svm(x: np.ndarray, y: np.ndarray, seed: int) -> Any:
    """A LinearSVC (C = 1, squared hinge) fitted on (x, y), its convergence warnings silenced."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    model = LinearSVC(C=1.0, max_iter=20_000, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(x, y)
    return model


def _macro_f1(y_true: np.ndarray, y_predicted: np.ndarray) -> float:
    from sklearn.metrics import f1_score

    return float(f1_score(y_true, y_predicted, average="macro"))


def _features_and_labels(theta: np.ndarray, labels: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    theta = np.asarray(theta, dtype=np.float64)
    labels = np.asarray(labels)
    if theta.ndim != 2 or theta.shape[0] < 1:
        raise EvalError(f"SVM F1: {name} θ must be a non-empty [D,K] matrix, got shape {theta.shape}")
    if labels.shape != (theta.shape[0],):
        raise EvalError(f"SVM F1: {name} has {theta.shape[0]} documents but {labels.shape} labels")
    if not np.all(np.isfinite(theta)):
        raise EvalError(f"SVM F1: {name} θ has non-finite entries")
    return theta, labels


def svm_macro_f1(
    theta_train: np.ndarray,
    y_train: np.ndarray,
    theta_test: np.ndarray,
    y_test: np.ndarray,
    *,
    seed: int = 0,
) -> float:
    """Macro-F1 on the test documents of a LinearSVC (C=1, squared hinge) fitted on θ_train [D1,K].

    θ is used as is (it is already on a common [0,1] scale). Macro-F1 averages
    F1 over the classes present in y_test or predicted, so rare classes count
    as much as common ones. Raises EvalError if the training labels hold fewer
    than 2 classes or the shapes disagree.
    """
    theta_train, y_train = _features_and_labels(theta_train, y_train, "train")
    theta_test, y_test = _features_and_labels(theta_test, y_test, "test")
    if theta_train.shape[1] != theta_test.shape[1]:
        raise EvalError(f"SVM F1: train θ has K={theta_train.shape[1]} but test θ has K={theta_test.shape[1]}")
    if len(np.unique(y_train)) < 2:
        raise EvalError("SVM F1: the training labels hold fewer than 2 classes")
    return _macro_f1(y_test, _fitted_svm(theta_train, y_train, seed).predict(theta_test))


def svm_f1_accuracy(features: np.ndarray, labels: np.ndarray, *, seed: int = 0,
                    test_fraction: float = 0.2) -> tuple[float, float]:
    """(macro-F1, accuracy) of a linear SVM on a seeded random ``1 − test_fraction`` / ``test_fraction`` split
    of the documents' features [D,K] (FedNMF+MI §IV-D: topic weights of all documents, 80/20).

    Features are standardised on the training part first: NMF weights are unnormalised and their scale
    varies by topic, which a linear SVM with C = 1 is sensitive to.
    """
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    x, y = _features_and_labels(features, labels, "all")
    if len(np.unique(y)) < 2:
        raise EvalError("SVM: the labels hold fewer than 2 classes")
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=test_fraction, random_state=seed)
    if len(np.unique(y_tr)) < 2:
        raise EvalError("SVM: the training part holds fewer than 2 classes")
    scaler = StandardScaler().fit(x_tr)
    predicted = _fitted_svm(scaler.transform(x_tr), y_tr, seed).predict(scaler.transform(x_te))
    return _macro_f1(y_te, predicted), float(np.mean(predicted == y_te))
