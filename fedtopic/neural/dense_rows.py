"""Rows of a CSR matrix written dense into a reused buffer (numba, no I/O): a mini-batch's counts A_b.

scipy's ``counts[idx].toarray()`` builds a sliced CSR matrix and a fresh B × V array each step (0.27 ms of an
11 ms FedNMF step at V = 15,184, B = 32); this clears and fills the rows of one buffer.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def dense_rows(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, idx: np.ndarray, out: np.ndarray) -> None:
    """out[r] ← row idx[r] of the CSR matrix (indptr, indices, data), dense, for r < len(idx); out float[≥B, V]
    (duplicate entries add up, as scipy's toarray does)."""
    for r in range(len(idx)):
        row = out[r]
        row[:] = 0
        for p in range(indptr[idx[r]], indptr[idx[r] + 1]):
            row[indices[p]] += data[p]
