"""Reconstruction-attack calculator (CSFed/DAFed paper §5.2, Eqs. 11–12, Def. 1) against exact references."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest
from scipy.stats import binom

from fedtopic.errors import EvalError
from fedtopic.eval.attacks import (
    log_full_reconstruction_probability,
    log_partial_reconstruction_probability,
    satisfies_up,
    up_epsilon,
)


def _splits(n: int, m: int) -> int:
    """Ways to spread n copies of a word over m users, by enumeration."""
    return sum(1 for c in itertools.product(range(n + 1), repeat=m) if sum(c) == n)


@pytest.mark.parametrize(("counts", "m"), [([1, 2, 3], 2), ([4, 1], 3), ([2, 2, 2], 4), ([5], 1)])
def test_eq11_matches_enumerated_splits(counts, m):
    ways = math.prod(_splits(n, m) for n in counts)
    assert log_full_reconstruction_probability(counts, m) == pytest.approx(-math.log(ways), abs=1e-12)


def test_eq12_is_the_exact_binomial_tail():
    # exact rational evaluation of Eq. 12 as printed, for small m·l
    for m, l, tau in [(3, 4, 0.5), (2, 5, 0.2), (4, 3, 1.0), (5, 2, 0.0)]:
        n = m * l
        exact = sum(Fraction(math.comb(n, j) * (m - 1) ** (n - j), m**n) for j in range(math.ceil(tau * n), n + 1))
        assert math.exp(log_partial_reconstruction_probability(tau, m, l)) == pytest.approx(float(exact), rel=1e-12)
    # large m·l: against scipy's binomial survival function (Binomial(ml, 1/m))
    for m, l, tau in [(10, 20, 0.2), (10, 20, 0.5), (50, 40, 0.1)]:
        n = m * l
        ref = binom.logsf(math.ceil(tau * n) - 1, n, 1 / m)
        assert log_partial_reconstruction_probability(tau, m, l) == pytest.approx(ref, rel=1e-9)


def test_paper_eq11_worked_example():
    """§5.2: v = 20, n_i = 20, m = 2 ⇒ p(r = 1) < 10^-9, "corresponding to (1, 20.72)-UP"."""
    log_p = log_full_reconstruction_probability([20] * 20, 2)
    assert math.exp(log_p) == pytest.approx(21.0**-20, rel=1e-12)
    assert math.exp(log_p) < 1e-9
    assert round(up_epsilon(math.log(1e-9)), 2) == 20.72  # the printed ε is that of the quoted bound 10^-9
    assert satisfies_up(log_p, 20.72)
    assert round(up_epsilon(log_p), 2) == 60.89  # what the exact probability certifies


def test_paper_eq12_worked_example():
    """§5.2: l = 20, m = 10, printed p(r ≥ 20 %) = 0.0003 → (0.2, 8.11)-UP and 5.9e-31 → (0.5, 71.38)-UP."""
    assert round(up_epsilon(math.log(0.0003)), 2) == 8.11
    assert round(up_epsilon(math.log(1e-31)), 2) == 71.38  # printed ε = −ln 10^−31 (the exponent of 5.9e−31)
    # Eq. 12 evaluated exactly at the printed parameters: smaller probabilities than printed
    p20 = math.exp(log_partial_reconstruction_probability(0.2, 10, 20))
    p50 = math.exp(log_partial_reconstruction_probability(0.5, 10, 20))
    assert p20 == pytest.approx(1.7007333e-5, rel=1e-6) and p20 < 0.0003
    assert p50 == pytest.approx(2.7015804e-46, rel=1e-6) and p50 < 5.9e-31
    assert satisfies_up(math.log(p20), 8.11) and satisfies_up(math.log(p50), 71.38)


def test_epsilon_grows_with_users_as_in_fig2():
    eps = [up_epsilon(log_partial_reconstruction_probability(0.2, m, 20)) for m in (2, 5, 10, 20, 50)]
    assert all(a < b for a, b in itertools.pairwise(eps))


def test_single_user_is_always_reconstructed():
    assert log_partial_reconstruction_probability(0.7, 1, 20) == 0.0
    assert log_full_reconstruction_probability([3, 9], 1) == 0.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: log_full_reconstruction_probability([], 2), "non-empty"),
        (lambda: log_full_reconstruction_probability([0, 2], 2), "≥ 1"),
        (lambda: log_full_reconstruction_probability([1.5], 2), "integer"),
        (lambda: log_full_reconstruction_probability([2], 0), "users"),
        (lambda: log_partial_reconstruction_probability(1.5, 2, 3), "tau"),
        (lambda: log_partial_reconstruction_probability(0.5, 2, 0), "words_per_user"),
        (lambda: up_epsilon(0.1), "≤ 0"),
    ],
)
def test_bad_input_is_an_eval_error(call, message):
    with pytest.raises(EvalError, match=message):
        call()
