"""gFedNTM's union batches (issue 46 item 14): ``batch`` is the union's, each node gives its share of it, an epoch
has the centralised trainer's steps, and every node uses each of its documents once an epoch."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch", reason="NOT RUN: torch is not installed (scripts/test installs [neural])")

from fedtopic.neural.ntm_train import union_first, union_takes  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 500), min_size=1, max_size=6), st.integers(2, 128))
def test_union_batches_split_the_centralised_batches_by_the_nodes_data(sizes, batch):
    total = sum(sizes)
    steps = max(1, -(-total // batch))  # FederatedNode.steps_per_epoch: the centralised trainer's
    takes = [union_takes(sizes, s, batch) for s in range(steps)]
    assert [sum(t[i] for t in takes) for i in range(len(sizes))] == sizes  # each document once an epoch
    for s, step in enumerate(takes):
        union = sum(step)
        assert abs(union - min(batch, total - s * batch)) < len(sizes)  # the centralised batch, ± the floors
        for i, n in enumerate(sizes):  # every node its share of the batch (within one document)
            assert abs(step[i] - union * n / max(total, 1)) < len(sizes) + 1
    assert [union_first(sizes, s, batch) for s in (0, steps)] == [[0] * len(sizes), sizes]


@given(st.integers(1, 700), st.integers(2, 100))
def test_one_node_takes_exactly_the_centralised_batches(n, batch):
    steps = -(-n // batch)
    assert [union_takes([n], s, batch)[0] for s in range(steps)] == [min(batch, n - s * batch) for s in range(steps)]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 300), min_size=1, max_size=5).filter(lambda s: sum(s) >= 4), st.integers(0, 2**31))
def test_the_nodes_parts_of_the_split_are_the_centralised_split(sizes, seed):
    """Every node trains and validates on its part of the centralised trainer's split of the pooled documents."""
    import numpy as np

    from fedtopic.neural.ntm_train import pooled_split, split

    parts = [pooled_split(sizes, seed, i) for i in range(len(sizes))]
    offsets = np.cumsum([0] + sizes[:-1])
    train, val = split(sum(sizes), seed)
    assert np.array_equal(np.concatenate([p[0] + o for p, o in zip(parts, offsets)]), train)
    assert np.array_equal(np.concatenate([p[1] + o for p, o in zip(parts, offsets)]), val)
    assert all(len(p[0]) + len(p[1]) == n for p, n in zip(parts, sizes))
