"""Topic diversity edge cases and top words as strings."""

from __future__ import annotations

import numpy as np
import pytest

from fedtopic.errors import EvalError
from fedtopic.eval.diversity import topic_diversity
from fedtopic.eval.topics import top_words


def _disjoint_phi(k: int, block: int) -> np.ndarray:
    phi = np.full((k, k * block), 1e-6)
    for t in range(k):
        phi[t, t * block : (t + 1) * block] = 1.0
    return phi / phi.sum(axis=1, keepdims=True)


def test_disjoint_topics_have_diversity_one():
    assert topic_diversity(_disjoint_phi(4, 25)) == 1.0


def test_identical_topics_have_diversity_one_over_k():
    phi = np.tile(np.random.default_rng(0).dirichlet(np.ones(60)), (5, 1))
    assert topic_diversity(phi) == pytest.approx(1 / 5)


def test_partial_overlap_counts_unique_words():
    # two topics, top-3 = {0,1,2} and {2,3,4}: 5 unique of 6
    phi = np.array([[0.3, 0.3, 0.3, 0.05, 0.05, 0.0], [0.0, 0.05, 0.3, 0.3, 0.3, 0.05]])
    assert topic_diversity(phi, top_n=3) == pytest.approx(5 / 6)


def test_top_n_equal_to_v_covers_the_vocabulary_once_per_topic():
    phi = np.random.default_rng(1).dirichlet(np.ones(10), size=3)
    assert topic_diversity(phi, top_n=10) == pytest.approx(1 / 3)


def test_top_n_out_of_range_raises():
    with pytest.raises(EvalError, match="n must be"):
        topic_diversity(_disjoint_phi(2, 5), top_n=11)
    with pytest.raises(EvalError, match="n must be"):
        topic_diversity(_disjoint_phi(2, 5), top_n=0)


def test_top_words_as_strings():
    phi = np.array([[0.1, 0.6, 0.3], [0.5, 0.2, 0.3]])
    assert top_words(phi, ["a", "b", "c"], n=2) == [["b", "c"], ["a", "c"]]
    with pytest.raises(EvalError, match="vocabulary has 2 words"):
        top_words(phi, ["a", "b"])
