"""Readable topics: the top words of each topic as strings."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedtopic.errors import EvalError
from fedtopic.eval.coherence import top_word_ids


def top_words(phi: np.ndarray, vocab: Sequence[str], n: int = 10) -> list[list[str]]:
    """For each topic of Φ [K,V], its n most probable words, most probable first."""
    phi = np.asarray(phi)
    if phi.ndim != 2 or len(vocab) != phi.shape[1]:
        raise EvalError(f"top words: vocabulary has {len(vocab)} words but phi has shape {phi.shape}")
    return [[vocab[i] for i in row] for row in top_word_ids(phi, n)]
