"""Which kernel samples a block of an exact Gibbs sweep (the ``dense`` sampler), and the one-shard entry point.

K ≤ ``_dense.RUNS_UP_TO``: the branch-free dense kernel; above, the buckets (``_buckets``) when the sweep's word
lists are given (``gibbs.sweep`` lists them where the words hold few topics, ``_buckets.takes_buckets``),
otherwise the dense kernel with ``locate``'s early exit. All three draw from Eq. 10 exactly.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fedtopic.models._buckets import bucket_block
from fedtopic.models._dense import RUNS_UP_TO, runs_block, scan_block


@njit(cache=True, nogil=True)
def dense_block(words, tok, starts, ends, doc_ptr, d0, d1, z, n_dk, tot_wk, tot_k, lists, alpha, beta, vbeta, rng,
                stream):
    """One exact Gibbs pass over the tokens doc_ptr[d] + tok[starts[d]:ends[d]] of documents d0..d1-1 (tok
    uint16|int32[N], offsets within the document: ``_parallel.word_chunks``; None: the positions
    starts[d]..ends[d]-1 themselves), in place: a block of a word-partitioned sweep
    (``_parallel.partitioned_dense``: one word chunk's tokens of each document), or, with doc_ptr's bounds and no
    tok, a shard. doc_ptr int64[D+1] bounds the documents' whole token ranges; lists: ``_buckets.word_lists`` of
    tot_wk (the buckets) or ``_buckets.no_lists``. tok=None compiles its own kernels, without the indirection
    (numba prunes ``tok is None``)."""
    ptr, top, cnt = lists
    if tot_k.shape[0] <= RUNS_UP_TO:
        runs_block(words, tok, starts, ends, doc_ptr, d0, d1, z, n_dk, tot_wk, tot_k, alpha, beta, vbeta, rng, stream)
    elif ptr.shape[0] > 0:
        bucket_block(words, tok, starts, ends, doc_ptr, d0, d1, z, n_dk, tot_wk, tot_k, ptr, top, cnt, alpha, beta,
                     vbeta, rng, stream)
    else:
        scan_block(words, tok, starts, ends, doc_ptr, d0, d1, z, n_dk, tot_wk, tot_k, alpha, beta, vbeta, rng, stream)


@njit(cache=True, nogil=True)
def dense_shard(
    words: np.ndarray,  # int32[N]
    doc_ptr: np.ndarray,  # int64[D+1]
    d0: int,
    d1: int,  # documents [d0, d1) form this shard
    z: np.ndarray,  # int32[N], updated
    n_dk: np.ndarray,  # int32[D,K], updated
    tot_wk: np.ndarray,  # int32[V,K] total word-topic counts, updated
    tot_k: np.ndarray,  # int64[K] total topic counts, updated
    lists,  # _buckets.word_lists of tot_wk, or _buckets.no_lists
    alpha,  # float α, or float64[K] α_k (models.prior)
    beta: float,
    vbeta: float,  # V·β
    rng: np.ndarray,  # uint64[S,2]
    stream: int,
) -> None:
    """One sweep of exact collapsed Gibbs over the tokens of documents d0..d1-1, in place."""
    dense_block(words, None, doc_ptr[:-1], doc_ptr[1:], doc_ptr, d0, d1, z, n_dk, tot_wk, tot_k, lists, alpha, beta,
                vbeta, rng, stream)
