"""The SIMD normal blocks behind SUB-LDA's noise: numba == numpy twin, standard normal, independent within a group,
uniform phases, distinct blocks and keys independent; what could go wrong in the shared-radius construction
(a wrong Dirichlet split, a lost sign bit, a biased phase) would show in one of these."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from fedtopic.errors import ModelError
from fedtopic.models.gauss_block import fill_normals, numpy_normals


def _block(key: int, block: int, n: int) -> np.ndarray:
    out = np.empty(n)
    fill_normals(np.uint64(key), block, out)
    return out


@settings(max_examples=40, deadline=None)
@given(key=st.integers(0, 2**64 - 1), block=st.integers(0, 2**40), groups=st.integers(1, 40))
def test_kernel_equals_numpy_twin(key, block, groups):
    n = 8 * groups
    assert np.allclose(_block(key, block, n), numpy_normals(key, block, n), rtol=1e-13, atol=1e-13)


@pytest.fixture(scope="module")
def draws():
    """1,048,576 draws: 64 blocks of 16,384 (group-major layout: row j of a block's (8, n/8) view is position j)."""
    return np.stack([_block(0xC0FFEE, b, 16_384).reshape(8, -1) for b in range(64)], axis=1).reshape(8, -1)


def test_draws_are_standard_normal(draws):
    x = draws.ravel()
    assert stats.kstest(x, "norm").pvalue > 1e-3
    assert abs(x.mean()) < 0.005 and abs(x.var() - 1) < 0.005
    assert abs(stats.kurtosis(x)) < 0.02 and abs(stats.skew(x)) < 0.01
    tail = (np.abs(x) > 4.0).mean()
    assert tail == pytest.approx(2 * stats.norm.sf(4.0), rel=0.35)  # 66 expected: ±3 sd


def test_every_position_of_a_group_is_normal_and_independent_of_the_others(draws):
    for row in draws:
        assert stats.kstest(row, "norm").pvalue > 1e-4
    off = ~np.eye(8, dtype=bool)
    assert np.abs(np.corrcoef(draws)[off]).max() < 0.012  # sd 0.0028 at 131,072 groups
    assert np.abs(np.corrcoef(draws**2)[off]).max() < 0.012  # a shared radius done wrong correlates the squares


def test_phases_are_uniform_and_moduli_follow_the_dirichlet_split(draws):
    phases = np.arctan2(draws[1::2], draws[0::2]).ravel()  # pairs (0,1), (2,3), (4,5), (6,7)
    assert stats.kstest(phases, stats.uniform(-np.pi, 2 * np.pi).cdf).pvalue > 1e-3
    squared = draws[0::2] ** 2 + draws[1::2] ** 2  # each pair's modulus² is χ²₂ = Exp(mean 2)
    for row in squared:
        assert stats.kstest(row, stats.expon(scale=2.0).cdf).pvalue > 1e-4


def test_blocks_and_keys_give_unrelated_draws():
    a, b, c = _block(1, 0, 4096), _block(1, 1, 4096), _block(2, 0, 4096)
    assert not np.array_equal(a, b) and not np.array_equal(a, c)
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.07 and abs(np.corrcoef(a, c)[0, 1]) < 0.07  # sd 0.016
    assert np.array_equal(a, _block(1, 0, 4096))


def test_twin_refuses_a_block_that_is_not_whole_groups():
    with pytest.raises(ModelError, match="multiple of 8"):
        numpy_normals(1, 0, 12)
