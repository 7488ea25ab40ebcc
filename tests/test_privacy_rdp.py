"""The Rényi-DP accountant: cross-checked against Google's dp-accounting, the paper's Table 3 from Eq. 3,
log-space stability, conversions, the efficiency-privacy function, the running budget, and the CLI."""

import json
import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dpa

from fedtopic.cli.main import main
from fedtopic.errors import BudgetExhausted, PrivacyError
from fedtopic.privacy.accountant import RdpAccountant
from fedtopic.privacy.efficiency import (
    adaptive_subsampling_dp,
    efficiency_privacy_argmax,
    log_efficiency_privacy,
    uniform_subsampling_dp,
)
from fedtopic.privacy.rdp import (
    epsilon_from_rdp,
    privacy_report,
    sigma_for_budget,
    subsampled_gaussian_rdp,
)

ORDERS = list(range(2, 65)) + [80, 128, 256]


def _theirs(gamma, sigma, steps, orders):
    acc = dpa.RdpAccountant(orders)
    acc.compose(dp_accounting.PoissonSampledDpEvent(gamma, dp_accounting.GaussianDpEvent(sigma)), steps)
    return acc


@pytest.mark.parametrize("gamma", [1e-4, 0.01, 0.1, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("sigma", [0.7, 1.0, 2.5, 8.0])
@pytest.mark.parametrize("steps", [1, 100, 10_000])
def test_matches_dp_accounting(gamma, sigma, steps):
    """1e-9 relative; where the RDP is so small (< 1e-7 per step) that dp-accounting's log A, a log of a number
    within 1e-7 of 1, has lost those digits to double rounding, an absolute 2.3e-16 (one ulp of log A) per step."""
    theirs = _theirs(gamma, sigma, steps, ORDERS)
    ours = privacy_report(gamma, sigma, steps, 1e-5, ORDERS)
    np.testing.assert_allclose(ours.rdp, theirs._rdp, rtol=1e-9, atol=2.3e-16 * steps)
    eps, order = theirs.get_epsilon_and_optimal_order(1e-5)
    assert ours.epsilon == pytest.approx(eps, rel=1e-9, abs=1e-12)
    if eps > 0:
        assert ours.best_order == order


@pytest.mark.parametrize(("gamma", "sigma", "order"), [(1e-4, 8.0, 2), (1e-4, 8.0, 64), (0.01, 1.1, 9), (0.3, 0.6, 40),
                                                       (0.9, 2.0, 256), (1e-4, 0.3, 256)])
def test_matches_a_50_digit_evaluation_of_eq_3(gamma, sigma, order):
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(50):
        g, s = mpmath.mpf(gamma), mpmath.mpf(sigma)
        a = mpmath.fsum(mpmath.binomial(order, ell) * (1 - g) ** (order - ell) * g**ell
                        * mpmath.exp(ell * (ell - 1) / (2 * s**2)) for ell in range(order + 1))
        exact = float(mpmath.log(a) / (order - 1))
    assert subsampled_gaussian_rdp(gamma, sigma, [order])[0] == pytest.approx(exact, rel=1e-12)


def test_table_3_follows_from_eq_3_not_the_printed_values():
    sigma = sigma_for_budget(2.0, 14)
    got = [float(subsampled_gaussian_rdp(g, sigma, [14])[0]) for g in (0.1, 0.3, 0.5, 0.7, 0.9, 1.0)]
    assert got == pytest.approx([0.046, 0.772, 1.281, 1.627, 1.889, 2.0], abs=6e-4)


def test_log_space_holds_at_extreme_orders_and_rates():
    r = subsampled_gaussian_rdp(1e-4, 0.3, [256])[0]
    assert math.isfinite(r) and r > 0
    assert subsampled_gaussian_rdp(1e-4, 50.0, [2])[0] == pytest.approx(1e-8 * (math.exp(1 / 2500) - 1), rel=1e-6)
    rdp = subsampled_gaussian_rdp(0.3, 1.0, ORDERS)
    assert np.all(np.diff(rdp) > 0)  # RDP grows with the order
    assert np.all(rdp <= np.array(ORDERS) / 2.0)  # amplification never hurts


def test_balle_conversion_is_tighter_than_the_classic_one():
    rdp = 50 * subsampled_gaussian_rdp(0.1, 1.2, ORDERS)
    balle, _ = epsilon_from_rdp(rdp, ORDERS, 1e-6, "balle")
    classic, _ = epsilon_from_rdp(rdp, ORDERS, 1e-6, "classic")
    assert 0 < balle < classic
    with pytest.raises(PrivacyError):
        epsilon_from_rdp(rdp, ORDERS, 1e-6, "nope")


@pytest.mark.parametrize("bad", [dict(gamma=0.0), dict(gamma=1.01), dict(sigma=0.0), dict(sigma=-1.0),
                                 dict(delta=0.0), dict(delta=1.0), dict(orders=[1, 2]), dict(orders=[2.5])])
def test_bad_parameters_are_privacy_errors(bad):
    args = dict(gamma=0.5, sigma=1.0, steps=3, delta=1e-5, orders=ORDERS) | bad
    with pytest.raises(PrivacyError):
        privacy_report(args["gamma"], args["sigma"], args["steps"], args["delta"], args["orders"])


def test_efficiency_privacy_function_is_increasing_for_the_gaussian_mechanism():
    """Eq. 6's I = γ·exp((α−1)ε_sub) is a product of two increasing functions of γ: Lemma 4.1's interior γ₀ does
    not exist for the Gaussian mechanism, and the search says so (γ₀ = 1)."""
    for order, sigma in [(14, sigma_for_budget(2, 14)), (4, 1.0), (32, 6.0)]:
        values = [log_efficiency_privacy(g, sigma, order) for g in np.linspace(0.01, 1, 60)]
        assert np.all(np.diff(values) > 0)
        assert efficiency_privacy_argmax(sigma, order) == 1.0


def test_lemma_5_1_bounds_hold():
    for eps, gamma, eta, q in [(1.0, 0.1, 1.0, 0.5), (3.0, 0.2, 0.8, 0.5), (0.2, 0.05, 2.0, 0.25)]:
        out = adaptive_subsampling_dp(eps, 1e-5, gamma, eta, q)
        assert out["epsilon"] <= out["epsilon_bound"] + 1e-12 and out["delta"] <= out["delta_bound"] * (1 + 1e-12)
        assert out["epsilon"] >= uniform_subsampling_dp(eps, 1e-5, gamma)[0]  # higher rate, less amplification
    with pytest.raises(PrivacyError):
        adaptive_subsampling_dp(1.0, 1e-5, 0.6, 1.0, 0.5)  # v = 1/(ηq) = 2 > 1/γ


def test_running_accountant_refuses_the_step_that_would_exceed_its_budget():
    acc = RdpAccountant(0.5, 2.0, 1e-5, budget=3.0)
    taken = 0
    while acc.can_step() and taken < 10_000:
        acc.step()
        taken += 1
    assert 0 < taken < 10_000
    assert acc.report().epsilon <= 3.0 < acc.report(taken + 1).epsilon
    with pytest.raises(BudgetExhausted):
        acc.step()
    assert acc.steps == taken
    with pytest.raises(BudgetExhausted):
        RdpAccountant(0.5, 2.0, 1e-5, budget=3.0, steps=taken + 5)  # a budget already spent


def test_cli_rdp_json_and_one_line_errors(capsys):
    assert main(["privacy", "rdp", "--sampling-rate", "0.5", "--rdp-budget", "2", "--order", "14", "--steps", "70",
                 "--orders", "2-32", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rdp_at_order"] == pytest.approx(70 * 1.280933550, rel=1e-8)
    assert set(out["rdp"]) == {str(a) for a in range(2, 33)}
    for bad in (["--sampling-rate", "0"], ["--sampling-rate", "1.2"], ["--noise-multiplier", "-1"],
                ["--delta", "1.5"], ["--orders", "x"], ["--rdp-budget", "2"]):
        args = ["privacy", "rdp", "--sampling-rate", "0.5", "--noise-multiplier", "1", "--steps", "5", *bad]
        if bad == ["--rdp-budget", "2"]:
            args.remove("--noise-multiplier"), args.remove("1")
        capsys.readouterr()
        assert main(args) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error:") and "\n" not in err and "Traceback" not in err
