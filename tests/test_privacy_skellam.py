"""The distributed Skellam accountant (Agarwal, Kairouz & Liu 2021, Thm. 3.5; Zhu & Wang 2019, Thm. 6): the
formula by hand, its Gaussian part composed against dp-accounting's zCDP accountant to 1e-9, the subsampling bound
against a direct evaluation and above the exact subsampled Gaussian, and shares that sum to the planned noise."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dpa
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.errors import PrivacyError
from fedtopic.privacy.rdp import DEFAULT_ORDERS
from fedtopic.privacy.skellam import (
    composed_rdp,
    distributed_round_rdp,
    share_bound,
    share_lambda,
    skellam_rdp,
    skellam_shares,
    subsampled_rdp_general,
)

ORDERS = (2, 3, 4, 8, 16, 32, 64)


def test_thm_3_5_by_hand():
    v, l1, l2 = 9.0, 2.0, math.sqrt(2.0)
    got = skellam_rdp(v, l1, l2, [2, 10])
    assert got[0] == pytest.approx(2 * 2 / 18 + min((3 * 2 + 12) / (4 * 81), 6 / 18), rel=1e-15)
    assert got[1] == pytest.approx(10 * 2 / 18 + min((19 * 2 + 12) / (4 * 81), 6 / 18), rel=1e-15)
    with pytest.raises(PrivacyError):
        skellam_rdp(0.0, 1, 1, [2])


@settings(max_examples=25, deadline=None)
@given(variance=st.floats(1.0, 1e8), steps=st.integers(1, 500), sens=st.floats(0.5, 50.0))
def test_the_gaussian_term_composes_as_dp_accounting_composes_zcdp(variance, steps, sens):
    ours = composed_rdp([(1.0, variance)] * steps, sens, sens, ORDERS)
    integer = steps * np.minimum(((2 * np.array(ORDERS) - 1) * sens**2 + 6 * sens) / (4 * variance**2),
                                 3 * sens / (2 * variance))
    acc = dpa.RdpAccountant(list(ORDERS))
    acc.compose(dp_accounting.ZCDpEvent(sens**2 / (2 * variance)), steps)
    np.testing.assert_allclose(ours - integer, acc._rdp, rtol=1e-9, atol=0)


def _direct(gamma: float, alpha: int, eps) -> float:
    """Zhu & Wang Thm. 6 summed in plain floats (small α only)."""
    total = (1 - gamma) ** (alpha - 1) * (alpha * gamma - gamma + 1)
    total += math.comb(alpha, 2) * gamma**2 * (1 - gamma) ** (alpha - 2) * math.exp(eps(2))
    total += sum(3 * math.comb(alpha, ell) * (1 - gamma) ** (alpha - ell) * gamma**ell * math.exp((ell - 1) * eps(ell))
                 for ell in range(3, alpha + 1))
    return math.log(total) / (alpha - 1)


@pytest.mark.parametrize(("gamma", "variance"), [(0.1, 4.0), (0.5, 1.0), (0.9, 25.0)])
def test_the_subsampling_bound_by_direct_sum_and_above_the_exact_gaussian(gamma, variance):
    base = skellam_rdp(variance, 1, 1, np.arange(2, 13))
    for alpha in (2, 5, 12):
        assert subsampled_rdp_general(gamma, alpha, base) == pytest.approx(
            _direct(gamma, alpha, lambda ell: float(base[ell - 2])), rel=1e-12)
    gauss = np.arange(2, 65) / (2 * variance)  # the Gaussian base: Thm. 6 must bound its exact amplification
    acc = dpa.RdpAccountant(list(range(2, 65)))
    acc.compose(dp_accounting.PoissonSampledDpEvent(gamma, dp_accounting.GaussianDpEvent(math.sqrt(variance))))
    ours = np.array([subsampled_rdp_general(gamma, a, gauss) for a in range(2, 65)])
    assert np.all(ours >= acc._rdp - 1e-12)
    np.testing.assert_allclose(distributed_round_rdp(1.0, variance, 1, 1, ORDERS),
                               skellam_rdp(variance, 1, 1, ORDERS), rtol=0)


def test_shares_of_the_planned_parties_sum_to_the_central_noise():
    rng = np.random.default_rng(0)
    sigma, delta_s, planned = 1.3, 256.0, 7
    lam = share_lambda(sigma, delta_s, planned)
    total = sum(skellam_shares(lam, (200_000,), rng) for _ in range(planned))
    assert total.dtype == np.int64
    assert np.var(total) == pytest.approx((sigma * delta_s) ** 2, rel=0.02)
    assert abs(np.mean(total)) < 5 * sigma * delta_s / math.sqrt(200_000)
    assert share_bound(0.0) >= 40
    t = share_bound(lam)  # Bernstein's tail at the bound: below 1e-30
    assert 2 * math.exp(-t**2 / (2 * (2 * lam + t / 3))) <= 1e-30


def test_the_accountant_goes_up_with_rounds_and_down_with_contributors():
    few = composed_rdp([(1.0, 2.0 * 3 * 100.0)] * 10, 1, 1, DEFAULT_ORDERS)
    more = composed_rdp([(1.0, 2.0 * 5 * 100.0)] * 10, 1, 1, DEFAULT_ORDERS)
    longer = composed_rdp([(1.0, 2.0 * 3 * 100.0)] * 11, 1, 1, DEFAULT_ORDERS)
    assert np.all(more < few) and np.all(longer > few)
