"""gFedNTM on unequal nodes is the centralised trainer (issue 46 item 14): the nodes train and validate on their
parts of the centralised split, take the centralised batches document for document, and follow the centralised
run's validation losses and stopping epoch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch", reason="NOT RUN: torch is not installed (scripts/test installs [neural])")

from fedtopic.neural.ntm_train import (  # noqa: E402
    FederatedNode,
    NTMSettings,
    pooled_split,
    split,
    train_centralised,
)
from fedtopic.neural.sync_local import train_in_process  # noqa: E402


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 300), min_size=1, max_size=5).filter(lambda s: sum(s) >= 4), st.integers(0, 2**31))
def test_the_nodes_parts_of_the_split_are_the_centralised_split(sizes, seed):
    parts = [pooled_split(sizes, seed, i) for i in range(len(sizes))]
    offsets = np.cumsum([0] + sizes[:-1])
    train, val = split(sum(sizes), seed)
    assert np.array_equal(np.concatenate([p[0] + o for p, o in zip(parts, offsets)]), train)
    assert np.array_equal(np.concatenate([p[1] + o for p, o in zip(parts, offsets)]), val)
    assert all(len(p[0]) + len(p[1]) == n for p, n in zip(parts, sizes))


def test_three_unequal_nodes_follow_the_centralised_run():
    """Nodes of 40, 80 and 120 documents: every epoch's validation loss is the centralised run's to rounding (the
    sums add in another order), the steps are the centralised ones, and W ends the same."""
    import scipy.sparse as sp

    rng = np.random.default_rng(4)
    counts = sp.csr_matrix(rng.poisson(0.3, size=(240, 60)).astype(np.float64))
    settings_ = NTMSettings(batch=16, epochs=4, patience=100, wire="float64")
    central = train_centralised(counts, None, 5, settings_, seed=3)
    cuts = [0, 40, 120, 240]
    nodes = [FederatedNode(i, counts[a:b], None, 5, settings_, 3) for i, (a, b) in enumerate(zip(cuts, cuts[1:]))]
    train_in_process(nodes, 4)
    federated = [h["validation_loss"] for h in nodes[0].history]
    np.testing.assert_allclose(federated, [h["validation_loss"] for h in central.history], rtol=1e-9)
    assert nodes[0].step == 4 * -(-len(split(240, 3)[0]) // 16)  # the centralised ⌈N / B⌉ steps an epoch
    np.testing.assert_allclose(nodes[0].flat, central.flat, rtol=1e-7, atol=1e-9)
