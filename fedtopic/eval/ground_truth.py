"""Scores against the ground truth of synthetic LDA data (gFedNTM paper §4.1, Eqs. 4–6).

Similarity of two distributions p, q (Eq. 4): 1 − H²(p, q) = √p·√q, the
Bhattacharyya coefficient, with H² = ½ Σ (√p − √q)² the squared Hellinger
distance. It is 1 for identical distributions and 0 for disjoint supports.

* TSS (Eq. 6): Σ over the K1 true topics of the similarity to the closest
  inferred topic; K1 is perfect, and it does not depend on how the inferred
  topics are numbered. K2 may differ from K1.
* DSS (Eq. 5): how differently the inferred θ arranges documents relative to
  each other compared with the true θ: |w_ij(true) − w_ij(inferred)| over all
  ordered pairs i ≠ j. Reading chosen: the *mean* over the D(D−1) pairs, so
  the value lies in [0, 1] and compares across corpus sizes; Eq. 5 as printed
  divides the sum by D instead, i.e. (D − 1) × our value, which
  ``per_document_sum=True`` returns. 0 is perfect; it needs no topic matching
  because document-document similarities are label-free.
"""

from __future__ import annotations

import numpy as np

from fedtopic.errors import EvalError
from fedtopic.eval._checks import check_distributions

_BLOCK_ELEMENTS = 1 << 22  # rows × D similarities held at once (32 MB of float64)


def hellinger_similarity(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """float64[A,B] of 1 − H²(p_a, q_b) = √p_a·√q_b for rows of p [A,M] and q [B,M] (Eq. 4)."""
    p = check_distributions(p, "p")
    q = check_distributions(q, "q")
    if p.shape[1] != q.shape[1]:
        raise EvalError(f"hellinger similarity: rows have {p.shape[1]} vs {q.shape[1]} entries")
    return np.sqrt(p) @ np.sqrt(q).T


def tss(phi_true: np.ndarray, phi_inferred: np.ndarray) -> float:
    """Topic similarity score (Eq. 6) of Φ_inferred [K2,V] against Φ_true [K1,V]; K1 is perfect."""
    phi_true = check_distributions(phi_true, "phi_true")
    phi_inferred = check_distributions(phi_inferred, "phi_inferred")
    if phi_true.shape[1] != phi_inferred.shape[1]:
        raise EvalError(f"TSS: phi_true has V={phi_true.shape[1]} but phi_inferred has V={phi_inferred.shape[1]}")
    return float(hellinger_similarity(phi_true, phi_inferred).max(axis=1).sum())


def dss(theta_true: np.ndarray, theta_inferred: np.ndarray, *, per_document_sum: bool = False) -> float:
    """Document similarity score (Eq. 5) of θ_inferred [D,K2] against θ_true [D,K1]; 0 is perfect.

    Mean over ordered pairs i ≠ j of |w_ij(true) − w_ij(inferred)|, or Eq. 5's
    literal (1/D) Σ_i Σ_{j≠i} with ``per_document_sum``. Computed in row blocks,
    so memory stays bounded for large D.
    """
    theta_true = check_distributions(theta_true, "theta_true")
    theta_inferred = check_distributions(theta_inferred, "theta_inferred")
    n_docs = theta_true.shape[0]
    if theta_inferred.shape[0] != n_docs:
        raise EvalError(f"DSS: theta_true has {n_docs} documents but theta_inferred has {theta_inferred.shape[0]}")
    if n_docs < 2:
        raise EvalError("DSS: needs at least 2 documents")
    root_true = np.sqrt(theta_true)
    root_inferred = np.sqrt(theta_inferred)
    step = max(1, _BLOCK_ELEMENTS // n_docs)
    total = 0.0
    for lo in range(0, n_docs, step):
        hi = min(lo + step, n_docs)
        diff = np.abs(root_true[lo:hi] @ root_true.T - root_inferred[lo:hi] @ root_inferred.T)
        diff[np.arange(hi - lo), np.arange(lo, hi)] = 0.0  # j ≠ i
        total += float(diff.sum())
    return total / n_docs if per_document_sum else total / (n_docs * (n_docs - 1))
