"""Topic weights of documents under a fixed NMF basis: non-negative least squares (FedNMF+MI §IV, ``infer``).

h_j = argmin_{h ≥ 0} ‖a_j − W h‖² for every document a_j (a row of the counts), W float64[V,k] fixed: the
paper's Eq. 1 with W frozen. Solved for all documents at once by scikit-learn's coordinate-descent NMF solver
with the basis held fixed (``non_negative_factorization(update_H=False)``), which works on the k×k Gram matrix
and never densifies the counts; ``tests/test_nnls.py`` checks it against scipy's per-document active-set NNLS.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.decomposition import non_negative_factorization
from sklearn.exceptions import ConvergenceWarning

from fedtopic.corpus.types import Corpus


def counts_matrix(corpus: Corpus) -> sp.csr_matrix:
    """The corpus as float64[D,V] sparse counts (a row per document, empty documents as zero rows)."""
    rows = np.repeat(np.arange(corpus.n_docs), np.diff(corpus.doc_ptr))
    data = np.ones(len(corpus.words))
    return sp.csr_matrix((data, (rows, corpus.words)), shape=(corpus.n_docs, corpus.n_words))


def nnls_weights(counts: sp.csr_matrix, w: np.ndarray, *, max_iter: int = 1000, tol: float = 1e-8) -> np.ndarray:
    """H float64[D,k] ≥ 0 minimising ‖A − H Wᵀ‖² with W float64[V,k] fixed (a zero document gets zeros)."""
    a = sp.csr_matrix(counts, dtype=np.float64)
    if a.shape[0] == 0:
        return np.zeros((0, w.shape[1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        h, _, _ = non_negative_factorization(a, H=np.ascontiguousarray(w.T), n_components=w.shape[1],
                                             init="custom", update_H=False, solver="cd", beta_loss="frobenius",
                                             max_iter=max_iter, tol=tol, alpha_W=0.0, alpha_H=0.0)
    return np.asarray(h, dtype=np.float64)
