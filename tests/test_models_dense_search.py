"""The dense kernel's branch-free search (block_runs, locate_runs) against searchsorted over the cumulative sums."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.models._dense import (
    RUNS_UP_TO,
    block_runs,
    dense_scratch,
    locate,
    locate_runs,
)


def _padded(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = dense_scratch(weights.size)
    p[: weights.size] = weights
    return p, np.zeros(p.size // 8 + 1)


def _expected(weights: np.ndarray, t: float) -> int:
    return min(int(np.searchsorted(np.cumsum(weights), t, side="right")), weights.size - 1)


weights_st = st.lists(
    st.one_of(st.just(0.0), st.floats(1e-6, 1e3)), min_size=2, max_size=RUNS_UP_TO
).filter(lambda w: sum(w) > 0)


@settings(max_examples=300, deadline=None)
@given(weights=weights_st, u=st.floats(0.0, 1.0, exclude_max=True))
def test_locate_runs_is_searchsorted_away_from_bucket_edges(weights, u):
    w = np.array(weights)
    p, run = _padded(w)
    total = block_runs(p, run)
    assert np.isclose(total, w.sum(), rtol=1e-12) and run[0] == 0.0
    t = u * total
    k = locate_runs(p, run, w.size, t)
    assert 0 <= k < w.size
    edges = np.cumsum(w)
    if np.min(np.abs(edges - t)) > 1e-9 * total:  # rounding may move a draw only within a few ulps of an edge
        assert k == _expected(w, t)
        assert k == locate(p, w.size, t)  # the branching search of the larger K agrees
        assert w[k] > 0  # never a topic of zero weight


def test_zero_weight_topics_and_the_ends():
    w = np.zeros(37)
    w[[0, 9, 17, 36]] = [1.0, 2.0, 3.0, 4.0]
    p, run = _padded(w)
    total = block_runs(p, run)
    assert total == 10.0
    for t, k in [(0.0, 0), (0.999, 0), (1.0, 9), (2.999, 9), (3.0, 17), (6.0, 36), (9.999, 36)]:
        assert locate_runs(p, run, w.size, t) == k, t
    assert locate_runs(p, run, w.size, 10.0 + 1e-9) == 36  # past the end by rounding: the last topic
