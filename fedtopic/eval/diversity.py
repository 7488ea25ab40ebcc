"""Topic diversity (Dieng et al. 2020): how little the topics' top words overlap."""

from __future__ import annotations

import numpy as np

from fedtopic.eval.coherence import top_word_ids


def topic_diversity(phi: np.ndarray, top_n: int = 25) -> float:
    """Unique words among the top ``top_n`` of all K topics of Φ [K,V], divided by K·top_n.

    1 when no two topics share a top word, 1/K when all topics have the same
    top words. Raises EvalError unless 1 ≤ top_n ≤ V.
    """
    ids = top_word_ids(phi, top_n)
    return float(len(np.unique(ids)) / ids.size)
