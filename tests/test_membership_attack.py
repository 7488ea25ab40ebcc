"""The membership-inference audit (``fedtopic privacy attack``): LiRA on released csfed-lda models finds every
canary of a run without DP, and stays within what (ε, δ)-DP allows for local and distributed DP at the same ε; its
ROC statistics against hand-made cases."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from fedtopic.cli.main import main
from fedtopic.experiments.membership import (
    AttackSettings,
    attack_table,
    lira,
    roc,
    within_dp_bound,
)


@pytest.mark.slow
def test_lira_finds_every_canary_without_dp_and_stays_within_the_dp_bound_with_it():
    rows = {r["mode"]: r for r in attack_table(AttackSettings(noise_multiplier=8.0, models=32, seed=1))}
    plain, local, distributed = rows["none"], rows["local"], rows["distributed"]
    assert local["epsilon"] == pytest.approx(distributed["epsilon"], rel=0.02) and local["epsilon"] < 2.5
    assert plain["tpr_at_fpr_0.01"] > math.exp(local["epsilon"]) * 0.01 + 1e-5  # the bound a DP run must meet
    assert plain["within_dp_bound"] == {"0.001": False, "0.01": False} and plain["auc"] > 0.95
    for dp in (local, distributed):
        assert dp["within_dp_bound"] == {"0.001": True, "0.01": True}, dp
        assert dp["auc"] < 0.65


def test_the_roc_and_the_bound_by_hand():
    score = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.0])
    label = np.array([True, True, False, True, False, False])
    at, auc = roc(score, label)
    assert at[0.001] == (2 / 3, 2, 0) and at[0.01] == (2 / 3, 2, 0)
    assert auc == pytest.approx(8 / 9)
    assert within_dp_bound(0, 100, 0, 100, 1.0, 1e-5)
    assert not within_dp_bound(100, 100, 0, 1000, 1.0, 1e-5)  # every member found, no false alarm in 1,000
    assert within_dp_bound(100, 100, 0, 1000, 8.0, 1e-5)  # … which ε = 8 allows
    inside = (np.arange(8)[:, None] + np.arange(4)[None, :]) % 2 == 0  # every canary in half the runs
    scores = np.where(inside, 1.0, 0.0) + np.random.default_rng(0).normal(0, 0.1, (8, 4))
    lr = lira(scores, inside)
    assert lr.shape == (8, 4) and lr[inside].min() > lr[~inside].max()  # members separated from the others
    rare = lira(scores, np.eye(8, 4, dtype=bool))  # canary c is in run c only: left out, its in-side is empty
    assert np.isfinite(rare).all() and np.all(np.diag(rare[:4]) == 0.0)


def test_the_command_prints_the_table_and_refuses_no_noise(capsys):
    assert main(["privacy", "attack", "--models", "8", "--canaries", "4", "--rounds", "2", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["mode"] for r in rows] == ["none", "local", "distributed"] and rows[0]["epsilon"] is None
    assert main(["privacy", "attack", "--noise-multiplier", "0"]) == 2
    assert "the DP runs need noise" in capsys.readouterr().err
