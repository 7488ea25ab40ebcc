"""The four FedNMF server rules against steps computed by hand (Flower's formulas), and the client choice."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedtopic.algorithms.fednmf.server_rules import (
    RuleState,
    rule_params,
    select_clients,
    server_step,
    server_update,
    weighted_delta,
)
from fedtopic.errors import ConfigError

X = np.array([1.0, -2.0])
D1 = np.array([0.5, -0.1])
D2 = np.array([0.5, 0.3])


def step(rule: str, *deltas: np.ndarray) -> np.ndarray:
    x, state = X.copy(), RuleState.zeros(2)
    for t, d in enumerate(deltas, start=1):
        x, state = server_update(rule, x, d, state, t)
    return x


def test_fedavg_adds_the_weighted_mean_change() -> None:
    # server rate 1: x + Δ, i.e. exactly Σ (N_i/N) x_i
    assert step("avg", D1) == pytest.approx([1.5, -2.1], abs=1e-15)
    # Δ from two clients with N = 3 and 1 whose models are 2.0 and 6.0 around x = 1.0: mean (3·2 + 6)/4 = 3
    total = np.array([3 * (2.0 - 1.0) + 1 * (6.0 - 1.0)])
    assert server_update("avg", np.array([1.0]), weighted_delta(total, 4.0), RuleState.zeros(1), 1)[0] == \
        pytest.approx([3.0])


def test_fedadagrad_by_hand() -> None:
    # t=1: m = Δ, v = Δ² = [.25, .01], x + 0.1·m/√v = [1.1, -2.1]
    assert step("adagrad", D1) == pytest.approx([1.1, -2.1], abs=1e-8)
    # t=2: m = Δ2, v = [.5, .1], x += 0.1·[.5/√.5, .3/√.1] = [.0707107, .0948683]
    assert step("adagrad", D1, D2) == pytest.approx([1.1 + 0.0707107, -2.1 + 0.0948683], abs=1e-7)


def test_fedadam_by_hand() -> None:
    # m = .1Δ = [.05, -.01], v = .01Δ² = [.0025, .0001], η_t = .1·√(1-.99²)/(1-.9²) = .0742459 (Flower's t+1)
    eta_t = 0.1 * math.sqrt(1 - 0.99 ** 2) / (1 - 0.9 ** 2)
    assert eta_t == pytest.approx(0.0742459, abs=1e-7)
    assert step("adam", D1) == pytest.approx([1.0742459, -2.0742459], abs=1e-6)


def test_fedyogi_by_hand() -> None:
    # m = [.05, -.01], v = 0 - .01·Δ²·sign(0 - Δ²) = [.0025, .0001], x += .01·m/(√v + 1e-3)
    assert step("yogi", D1) == pytest.approx([1 + 0.01 * 0.05 / 0.051, -2 - 0.01 * 0.01 / 0.011], abs=1e-10)
    # t=2 with Δ2: v = v - .01·Δ2²·sign(v - Δ2²): [.0025 + .0025, .0001 + .0009] (both v < Δ2²)
    x1 = step("yogi", D1)
    m2 = 0.9 * np.array([0.05, -0.01]) + 0.1 * D2
    v2 = np.array([0.0025 + 0.01 * 0.25, 0.0001 + 0.01 * 0.09])
    assert step("yogi", D1, D2) == pytest.approx(x1 + 0.01 * m2 / (np.sqrt(v2) + 1e-3), abs=1e-12)


def test_defaults_and_override() -> None:
    assert rule_params("adam").eta == 0.1 and rule_params("yogi").tau == 1e-3 and rule_params("avg").eta == 1.0
    assert rule_params("adagrad", 0.5).eta == 0.5 and rule_params("adagrad", 0.5).tau == 1e-9
    with pytest.raises(ConfigError, match="unknown server rule 'sgd'"):
        rule_params("sgd")


def test_client_selection_is_seeded_and_sized() -> None:
    chosen = select_clients(10, 0.2, round=3, seed=7)
    assert len(chosen) == 2 and chosen == select_clients(10, 0.2, round=3, seed=7)
    assert list(chosen) == sorted(set(chosen)) and all(0 <= i < 10 for i in chosen)
    assert len(select_clients(3, 0.01, 0, 0)) == 1  # m = max(C·K, 1)
    assert select_clients(4, 1.0, 5, 0) == (0, 1, 2, 3)
    rounds = {select_clients(10, 0.3, r, 0) for r in range(20)}
    assert len(rounds) > 5  # a new draw every round
    for bad in (0.0, 1.5, -0.1):
        with pytest.raises(ConfigError, match="client fraction C must be in"):
            select_clients(10, bad, 0, 0)


def test_weighted_delta_refuses_an_empty_round() -> None:
    with pytest.raises(ConfigError, match="must be positive"):
        weighted_delta(np.zeros(3), 0.0)


def numpy_rule(rule: str, x: np.ndarray, delta: np.ndarray, m: np.ndarray, v: np.ndarray,
               t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rules' equations in numpy, one temporary per operation (the slow reference of the one-pass kernel)."""
    p = rule_params(rule)
    if rule == "avg":
        return x + p.eta * delta, m, v
    m = p.beta_1 * m + (1.0 - p.beta_1) * delta
    d2 = delta * delta
    v = {"adagrad": lambda: v + d2, "yogi": lambda: v - (1.0 - p.beta_2) * d2 * np.sign(v - d2),
         "adam": lambda: p.beta_2 * v + (1.0 - p.beta_2) * d2}[rule]()
    eta = p.eta * np.sqrt(1.0 - p.beta_2 ** (t + 1.0)) / (1.0 - p.beta_1 ** (t + 1.0)) if rule == "adam" else p.eta
    return x + eta * m / (np.sqrt(v) + p.tau), m, v


@pytest.mark.parametrize("rule", ["avg", "adagrad", "yogi", "adam"])
def test_the_one_pass_kernel_gives_numpys_bits_and_steps_in_place(rule: str) -> None:
    rng = np.random.default_rng(3)
    n = 1001
    x, m = rng.standard_normal(n), rng.standard_normal(n) * 1e-3
    v = np.abs(rng.standard_normal(n)) * 1e-6
    v[:5] = 0.0  # Yogi's sign(0) and √0
    for t in (1, 2, 9):
        delta = rng.standard_normal(n) * 1e-3
        delta[5:9] = 0.0
        v[9], delta[9] = 0.25, 0.5  # v − Δ² = 0 exactly: Yogi's sign(0)
        want = numpy_rule(rule, x, delta, m, v, t)
        got_x, got = server_update(rule, x, delta, RuleState(m, v), t)
        for a, b in zip((got_x, got.m, got.v), want):
            np.testing.assert_array_equal(a, b)
        inplace_x, state = x.copy(), RuleState(m.copy(), v.copy())
        server_step(rule, inplace_x, delta, state, t)
        for a, b in zip((inplace_x, state.m, state.v), want):
            np.testing.assert_array_equal(a, b)
        x, m, v = want


def test_server_step_refuses_what_it_cannot_step_in_place() -> None:
    state = RuleState.zeros(4)
    with pytest.raises(ValueError, match="contiguous float64 of one shape"):
        server_step("adam", np.zeros(8)[::2], np.zeros(4), state, 1)  # a strided x would be stepped in a copy
    with pytest.raises(ValueError, match="contiguous float64 of one shape"):
        server_step("adam", np.zeros(4, dtype=np.float32), np.zeros(4), state, 1)
    with pytest.raises(ConfigError, match="unknown server rule 'sgd'"):
        server_step("sgd", np.zeros(4), np.zeros(4), state, 1)
