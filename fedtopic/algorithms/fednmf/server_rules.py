"""Server aggregation rules of FedNMF (paper Alg. 1 line 9-11): FedAvg and FedOpt (Reddi et al. 2021), pure.

Every rule maps (current global x, the round's pseudo-gradient Δ, its state,
the 1-based server round t) to (new x, new state). Δ is the weighted mean of
the selected clients' changes, Δ = Σ_i N_i (x_i − x) / Σ_i N_i, so FedAvg with
server rate 1 is exactly the paper's weighted average Σ_i (N_i/N) x_i.

The FedOpt rules follow Flower's ``strategy.fedadagrad / fedyogi / fedadam``
(flwr 1.x), element-wise, with m_0 = v_0 = 0:

    m_t = β1·m_{t-1} + (1 − β1)·Δ
    Adagrad: v_t = v_{t-1} + Δ²
    Yogi:    v_t = v_{t-1} − (1 − β2)·Δ²·sign(v_{t-1} − Δ²)
    Adam:    v_t = β2·v_{t-1} + (1 − β2)·Δ²
    x_{t} = x_{t-1} + η_t·m_t / (√v_t + τ)

with η_t = η, except Adam, whose bias-corrected η_t = η·√(1 − β2^(t+1)) / (1 − β1^(t+1)) (Flower's exponent is
``server_round + 1``; we keep it so the figures compare with Flower's). Defaults (Flower's, from Reddi et al.'s
Table; η_l is the client rate Flower suggests, our ``lr`` option sets the client rate):

    rule      η       η_l     β1    β2     τ
    avg       1       —       —     —      —
    adagrad   0.1     0.1     0     —      1e-9
    yogi      0.01    0.0316  0.9   0.99   1e-3
    adam      0.1     0.1     0.9   0.99   1e-9

Every party applies the same rule to the same public aggregate in float64, so all hold bit-identical x and state
without the aggregator keeping any (it stays a summing service, which ``mask`` protection needs: it never sees
the sum in the clear).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedtopic.errors import ConfigError

SERVER_RULES = ("avg", "adagrad", "yogi", "adam")


@dataclass(frozen=True)
class RuleParams:
    """One rule's hyper-parameters (the table above)."""

    eta: float
    eta_l: float | None
    beta_1: float
    beta_2: float
    tau: float


DEFAULTS: dict[str, RuleParams] = {
    "avg": RuleParams(eta=1.0, eta_l=None, beta_1=0.0, beta_2=0.0, tau=0.0),
    "adagrad": RuleParams(eta=0.1, eta_l=0.1, beta_1=0.0, beta_2=0.0, tau=1e-9),
    "yogi": RuleParams(eta=0.01, eta_l=0.0316, beta_1=0.9, beta_2=0.99, tau=1e-3),
    "adam": RuleParams(eta=0.1, eta_l=0.1, beta_1=0.9, beta_2=0.99, tau=1e-9),
}


@dataclass(frozen=True)
class RuleState:
    """m_t and v_t float64[n] (zeros before the first round)."""

    m: np.ndarray
    v: np.ndarray

    @classmethod
    def zeros(cls, n: int) -> RuleState:
        return cls(np.zeros(n), np.zeros(n))


def rule_params(rule: str, eta: float | None = None) -> RuleParams:
    """The defaults of ``rule``, with the server rate η overridden when given."""
    if rule not in DEFAULTS:
        raise ConfigError(f"unknown server rule {rule!r}: choose one of {', '.join(SERVER_RULES)}")
    p = DEFAULTS[rule]
    return p if eta is None else RuleParams(eta, p.eta_l, p.beta_1, p.beta_2, p.tau)


def weighted_delta(total: np.ndarray, weight: float) -> np.ndarray:
    """Δ = Σ N_i (x_i − x) / Σ N_i from the summed weighted changes float64[n] and Σ N_i (> 0)."""
    if not weight > 0:
        raise ConfigError(f"the round's total client weight must be positive, got {weight}")
    return np.asarray(total, dtype=np.float64) / float(weight)


def server_update(rule: str, x: np.ndarray, delta: np.ndarray, state: RuleState, t: int,
                  params: RuleParams | None = None) -> tuple[np.ndarray, RuleState]:
    """(x_t, state_t) from x_{t-1} float64[n], Δ float64[n], state_{t-1} and the server round t ≥ 1 (inputs
    untouched)."""
    x, m, v = (np.array(a, dtype=np.float64) for a in (x, state.m, state.v))
    server_step(rule, x, delta, RuleState(m, v), t, params)
    return x, RuleState(m, v)


def server_step(rule: str, x: np.ndarray, delta: np.ndarray, state: RuleState, t: int,
                params: RuleParams | None = None) -> None:
    """``server_update`` in place: x float64[n] becomes x_t and ``state``'s arrays state_t (one pass, no
    temporaries: a party's x is millions of values)."""
    from fedtopic.algorithms.fednmf.rule_kernel import rule_step

    if rule not in SERVER_RULES:
        raise ConfigError(f"unknown server rule {rule!r}: choose one of {', '.join(SERVER_RULES)}")
    p = params or rule_params(rule)
    delta = np.ascontiguousarray(delta, dtype=np.float64)
    if any(a.dtype != np.float64 or not a.flags.c_contiguous or a.shape != x.shape for a in (x, state.m, state.v)) \
            or delta.shape != x.shape:
        raise ValueError(f"x, Δ and the state must be contiguous float64 of one shape: x {x.shape} {x.dtype}, "
                         f"Δ {delta.shape}, state {state.m.shape}")
    if t < 1:
        raise ValueError(f"server rounds count from 1, got {t}")
    eta = p.eta
    if rule == "adam":
        eta = p.eta * np.sqrt(1.0 - p.beta_2 ** (t + 1.0)) / (1.0 - p.beta_1 ** (t + 1.0))
    rule_step(SERVER_RULES.index(rule), x.reshape(-1), delta.reshape(-1), state.m.reshape(-1), state.v.reshape(-1),
              float(eta), p.beta_1, p.beta_2, p.tau)


def select_clients(n_clients: int, fraction: float, round: int, seed: int) -> tuple[int, ...]:
    """G_t (Alg. 1 lines 4-5): m = max(⌊C·K⌋, 1) client indices, sorted, drawn without replacement from a
    generator seeded by (seed, round), so every party computes the same set without asking anyone."""
    if not 0.0 < fraction <= 1.0:
        raise ConfigError(f"client fraction C must be in (0, 1], got {fraction}")
    m = max(int(fraction * n_clients + 1e-9), 1)
    rng = np.random.default_rng([seed, round, 0x46454E4D])
    return tuple(sorted(int(i) for i in rng.choice(n_clients, size=m, replace=False)))
