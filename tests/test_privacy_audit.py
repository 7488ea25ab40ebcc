"""The empirical audit of a DP party's releases: its bound stays under the accountant's ε, and it catches the same
mechanism with the noise switched off. Plus the statistics it rests on."""

import math

import numpy as np
import pytest

from fedtopic.errors import PrivacyError
from fedtopic.experiments.dp_audit import AuditSettings, audit_releases, canary_corpora
from fedtopic.privacy.audit import (
    clopper_pearson_upper,
    epsilon_lower_bound,
    threshold_audit,
)

pytestmark = pytest.mark.slow


def test_audit_bound_stays_under_the_accountant_and_catches_a_noiseless_release():
    # 400 runs: a noiseless release then bounds ε below by ≈ 3.8 (0 errors in 200 a side), past the accountant's 2.5
    honest = audit_releases(AuditSettings(sampling_rate=0.5, noise_multiplier=2.0, releases=3, runs=400, seed=1))
    assert honest["runs"] == 400 and honest["holds"]
    assert 0.0 <= honest["epsilon_lower_bound"] <= honest["accountant_epsilon"]
    broken = audit_releases(AuditSettings(sampling_rate=0.5, noise_multiplier=0.0, releases=3, runs=400, seed=1))
    assert broken["epsilon_lower_bound"] > honest["accountant_epsilon"]  # it would have failed the honest claim
    assert broken["epsilon_lower_bound"] > 3.0


def test_canary_corpora_differ_in_exactly_one_token():
    with_canary, without, canary = canary_corpora(4)
    assert with_canary.n_tokens == without.n_tokens + 1
    assert (with_canary.words == canary).sum() == 1 and (without.words == canary).sum() == 0
    assert with_canary.vocab == without.vocab


def test_clopper_pearson_and_the_lower_bound():
    assert clopper_pearson_upper(0, 100, 0.05) == pytest.approx(1 - 0.05 ** (1 / 100), rel=1e-9)
    assert clopper_pearson_upper(100, 100, 0.05) == 1.0
    assert epsilon_lower_bound(0.1, 0.1, 0.0) == pytest.approx(math.log(9))
    assert epsilon_lower_bound(0.5, 0.5, 0.0) == 0.0
    rng = np.random.default_rng(0)
    same = threshold_audit(rng.normal(size=400), rng.normal(size=400), delta=1e-5)
    assert same.epsilon_lower_bound < 0.5  # indistinguishable outputs give (almost) nothing
    apart = threshold_audit(rng.normal(10, 1, 400), rng.normal(size=400), delta=1e-5)
    assert apart.epsilon_lower_bound > 3.5  # log(1/FPR⁺) with 0 errors in 200: ≈ 3.98
    with pytest.raises(PrivacyError):
        threshold_audit(np.zeros(5), np.zeros(5), delta=1e-5)
