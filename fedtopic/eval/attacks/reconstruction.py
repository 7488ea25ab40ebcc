"""Reconstruction attack on a party's count matrix N_p (CSFed/DAFed paper §5.2, Def. 1).

The attacker sees, for every word w_j of a party's vocabulary, how often it
occurs (n_j, the row sum of N_p) — but not how the n_j copies are spread over
the party's m users (requirement lengths l_i are invisible).

* Eq. 11 — full reconstruction. The n_j copies of w_j can be split over m
  users in C(m + n_j − 1, m − 1) ways (stars and bars), independently per
  word, and the attacker guesses one split uniformly:
      p(r = 1) = 1 / Π_j C(m + n_j − 1, m − 1).
* Eq. 12 — partial reconstruction with every word distinct (n_j = 1) and m
  users of l words each: each of the ml words is guessed to the right user
  with probability 1/m, so the number guessed right is Binomial(ml, 1/m) and
      p(r ≥ τ) = Σ_{j=⌈τml⌉}^{ml} C(ml, j) (m − 1)^{ml−j} / m^{ml}.
  The paper's lower index is τml; when that is not an integer "at least τ"
  means the next integer, ⌈τml⌉.
* Def. 1, Eq. 3 — (τ, ε)-UP holds when Pr(r ≥ τ) ≤ e^{−ε}; the strongest ε a
  probability p certifies is ε = −ln p.

All probabilities are computed as natural logarithms (lgamma / log-sum-exp),
because they are far below the smallest float (21^−20 ≈ 3.6e−27 is still
representable, but 5^−1000 is not).

The paper's worked numbers, checked in tests/test_attacks_reconstruction.py:
  - Eq. 11, v = 20, n_j = 20, m = 2: p(r = 1) = 21^−20 ≈ 3.59e−27, "less than
    10^−9" as printed; the printed ε = 20.72 is −ln(10^−9), i.e. the ε of the
    quoted bound, while the exact value certifies ε = 20·ln 21 ≈ 60.89.
  - Eq. 12, l = 20, m = 10: printed p(r ≥ 20 %) = 0.0003 → ε = 8.11 and
    p(r ≥ 50 %) = 5.9e−31 → ε = 71.38. The ε's follow from the printed
    probabilities (8.11 = −ln 0.0003; 71.38 = −ln 10^−31, the exponent only —
    −ln 5.9e−31 would be 69.61). Eq. 12 itself at these parameters gives
    1.70e−5 (ε = 10.98) and 2.70e−46 (ε = 104.93): smaller probabilities than
    printed, so the paper's conclusion (users' privacy is well protected)
    holds a fortiori, but its two probabilities are not reproducible from
    Eq. 12 as written.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.special import gammaln, logsumexp

from fedtopic.errors import EvalError


def log_binomial(n: int | np.ndarray, k: int | np.ndarray) -> np.ndarray | float:
    """ln C(n, k) via lgamma (exact to float precision for any size)."""
    n = np.asarray(n, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    out = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)
    return float(out) if out.ndim == 0 else out


def log_full_reconstruction_probability(word_counts: Sequence[int] | np.ndarray, n_users: int) -> float:
    """ln p(r = 1) of Eq. 11: −Σ_j ln C(m + n_j − 1, m − 1), n_j = ``word_counts`` (each ≥ 1), m = ``n_users``."""
    counts = np.asarray(word_counts)
    if counts.ndim != 1 or len(counts) == 0:
        raise EvalError("Eq. 11: word_counts must be a non-empty 1-D sequence")
    if not np.issubdtype(counts.dtype, np.integer) or (counts < 1).any():
        raise EvalError("Eq. 11: every word count n_j must be an integer ≥ 1")
    _check_users(n_users, "Eq. 11")
    m = int(n_users)
    return -float(np.sum(log_binomial(m + counts.astype(np.int64) - 1, m - 1)))


def log_partial_reconstruction_probability(tau: float, n_users: int, words_per_user: int) -> float:
    """ln p(r ≥ τ) of Eq. 12 for m = ``n_users`` users of l = ``words_per_user`` distinct words each.

    Sums j = ⌈τ·ml⌉ … ml of C(ml, j)(m − 1)^{ml−j} / m^{ml} in log space. With
    m = 1 the single user is always right, so the probability is 1.
    """
    if not (0.0 <= tau <= 1.0) or not math.isfinite(tau):
        raise EvalError(f"Eq. 12: tau must be in [0, 1], got {tau}")
    _check_users(n_users, "Eq. 12")
    if int(words_per_user) != words_per_user or words_per_user < 1:
        raise EvalError(f"Eq. 12: words_per_user must be an integer ≥ 1, got {words_per_user}")
    m, total = int(n_users), int(n_users) * int(words_per_user)
    if m == 1:
        return 0.0
    first = math.ceil(tau * total - 1e-9)  # tolerate τ·ml = 39.999999… for τ = 0.2
    j = np.arange(first, total + 1, dtype=np.int64)
    terms = log_binomial(total, j) + (total - j) * math.log(m - 1) - total * math.log(m)
    return float(logsumexp(np.atleast_1d(terms)))


def up_epsilon(log_probability: float) -> float:
    """The largest ε of (τ, ε)-UP (Def. 1, Eq. 3: Pr(r ≥ τ) ≤ e^{−ε}) that ln Pr = ``log_probability`` certifies: −ln Pr."""
    if not (log_probability <= 0.0) or math.isnan(log_probability):
        raise EvalError(f"Def. 1: a log-probability must be ≤ 0, got {log_probability}")
    return -float(log_probability)


def satisfies_up(log_probability: float, epsilon: float) -> bool:
    """Whether Pr(r ≥ τ) = exp(``log_probability``) meets (τ, ε)-UP, i.e. Pr ≤ e^{−ε} (Eq. 3)."""
    return up_epsilon(log_probability) >= epsilon


def _check_users(n_users: int, where: str) -> None:
    if int(n_users) != n_users or n_users < 1:
        raise EvalError(f"{where}: the number of users m must be an integer ≥ 1, got {n_users}")
