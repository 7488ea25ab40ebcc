"""Fixed-point encoding of FedNMF's updates: round trips, sums, overflow (property tests)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from fedtopic.crypto.fixedpoint import FixedPoint, FixedPointOverflow

FP = FixedPoint()
values = arrays(np.float64, st.integers(1, 40), elements=st.floats(-FP.bound, FP.bound, allow_nan=False))


@given(st.lists(values, min_size=1, max_size=6).filter(lambda xs: len({len(x) for x in xs}) == 1))
@settings(max_examples=60, deadline=None)
def test_sum_decodes_within_the_stated_precision(xs: list[np.ndarray]) -> None:
    encoded = [FP.encode(x) for x in xs]
    assert all(e.shape == (FP.cells(len(xs[0])),) and e.min() >= 0 and e.max() <= FP.max_value for e in encoded)
    got = FP.decode_sum(np.sum(encoded, axis=0), len(xs))
    exact = np.array([math.fsum(column) for column in zip(*xs)])
    # each value is off by at most 2^-(f+1); the float64 result adds a relative 2^-52
    tol = len(xs) * 2.0 ** -(FP.frac_bits + 1) + 2.0 ** -52 * np.abs(exact)
    assert np.all(np.abs(got - exact) <= tol)


def test_tiny_values_keep_their_precision() -> None:
    x = np.array([3e-15, -7.5e-13, 1e-18, 0.0])
    np.testing.assert_allclose(FP.decode_sum(FP.encode(x), 1), x, rtol=0, atol=2.0 ** -60)


def test_out_of_bound_and_non_finite_values_are_refused() -> None:
    with pytest.raises(FixedPointOverflow, match="at index 1 is outside the fixed-point bound"):
        FP.encode(np.array([0.0, FP.bound * 2]))
    with pytest.raises(FixedPointOverflow, match="nan"):
        FP.encode(np.array([np.nan]))
    with pytest.raises(ValueError):
        FixedPoint(frac_bits=80, bound=2.0 ** 20)  # the high word would not fit
