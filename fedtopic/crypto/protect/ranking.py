"""The global word-frequency ranking without revealing anyone's counts (paper §6.4).

IPHE encrypts the most frequent words *of the whole consortium*, but no party
may reveal its own frequencies. Each party encrypts its word-frequency vector
f_p (int[V]) with packed Paillier; the aggregator sums the ciphertexts (it is
the ``paillier-packed`` combiner on a V x 1 matrix, session meta from
``ranking_meta``); the parties decrypt Σ_p f_p and sort it. Parties learn the
global frequencies (they hold the secret key anyway), the aggregator nothing.
Ties are broken by word id, so every party derives the same ranking.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from fedtopic.crypto.protect.base import ProtectionContext, ProtectionError
from fedtopic.crypto.protect.paillier_rows import PACKED


def _ranking_ctx(ctx: ProtectionContext) -> ProtectionContext:
    return replace(ctx, shape=(ctx.shape[0], 1))


def ranking_meta(ctx: ProtectionContext) -> dict[str, Any]:
    """Session meta for the ranking exchange: ``paillier-packed`` on shape [V, 1] (combiner "paillier-packed")."""
    return PACKED.session_meta(_ranking_ctx(ctx))


def encode_word_frequencies(frequencies: np.ndarray, ctx: ProtectionContext) -> bytes:
    """A party's encrypted, packed word-frequency vector f_p (shape (V,), counts in [0, ctx.max_value])."""
    freq = np.asarray(frequencies)
    if freq.shape != (ctx.shape[0],):
        raise ProtectionError(f"word frequencies must have shape ({ctx.shape[0]},), got {freq.shape}")
    return PACKED.encode_update(freq.reshape(-1, 1), _ranking_ctx(ctx))


def decode_word_frequencies(blob: bytes, ctx: ProtectionContext) -> np.ndarray:
    """Σ_p f_p (int64, shape (V,)) from the aggregate of the ranking exchange."""
    return PACKED.decode_aggregate(blob, _ranking_ctx(ctx)).reshape(-1)


def rank_words(global_frequencies: np.ndarray) -> np.ndarray:
    """Word ids by descending global frequency, ties by ascending id (int64, shape (V,))."""
    freq = np.asarray(global_frequencies)
    if freq.ndim != 1 or not np.issubdtype(freq.dtype, np.integer):
        raise ProtectionError(f"global frequencies must be a 1-D integer vector, got {freq.shape} {freq.dtype}")
    return np.lexsort((np.arange(freq.size), -freq.astype(np.int64))).astype(np.int64)
