"""`--algorithm sub-lda` end to end: the accountant's figures in summary.json, the ε budget, Eq. 9's stop, bad
options as one line, reproducibility, and HDP-LDA (γ = 1) against the plain sampler."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from fedtopic.algorithms.registry import get_algorithm
from fedtopic.algorithms.sub_lda.train import ConvergenceRule
from fedtopic.cli.main import main
from fedtopic.privacy.rdp import privacy_report, sigma_for_budget


def _train(tmp_path, name, *opts, iterations=12):
    out = tmp_path / name
    args = ["train", "--algorithm", "sub-lda", "--dataset", "synthetic", "--topics", "8", "--iterations",
            str(iterations), "--eval-every", "4", "--out", str(out), "--format", "json"]
    for o in opts:
        args += ["--opt", o]
    assert main(args) == 0
    return json.loads((out / "summary.json").read_text())


def test_summary_has_the_accountants_epsilon(tmp_path):
    s = _train(tmp_path, "a", "sampling_rate=0.5", "rdp_budget=2", "order=14")
    sigma = sigma_for_budget(2.0, 14)
    expect = privacy_report(0.5, sigma, 12, 1e-5)
    p = s["privacy"]
    assert s["algorithm"] == "sub-lda" and s["iterations_run"] == 12 and s["stopped_by"] == "iterations"
    assert p["epsilon"] == pytest.approx(expect.epsilon, rel=1e-12) and p["delta"] == 1e-5
    assert p["rdp_at_order"] == pytest.approx(12 * 1.280933550210818, rel=1e-9)
    assert p["epsilon_classic"] > p["epsilon"]
    assert s["noise_multiplier"] == pytest.approx(sigma)
    assert 0.4 * s["train_tokens"] < s["sampled_tokens_per_iteration"] < 0.6 * s["train_tokens"]
    assert s["perplexity"] < 0.6 * s["vocabulary"]  # it still learns topics


def test_same_seed_same_model_and_noise_matters(tmp_path):
    a = _train(tmp_path, "a", "noise_multiplier=3", iterations=6)
    b = _train(tmp_path, "b", "noise_multiplier=3", iterations=6)
    _train(tmp_path, "c", "noise_multiplier=30", iterations=6)
    phi = {n: np.load(tmp_path / n / "model.npz")["phi"] for n in "abc"}
    assert np.array_equal(phi["a"], phi["b"]) and a["perplexity"] == b["perplexity"]
    assert not np.array_equal(phi["a"], phi["c"])


def test_epsilon_budget_stops_before_it_is_exceeded(tmp_path):
    s = _train(tmp_path, "a", "sampling_rate=0.3", "noise_multiplier=2", "epsilon_budget=4", iterations=200)
    assert s["stopped_by"] == "epsilon_budget" and 0 < s["iterations_run"] < 200
    assert s["privacy"]["epsilon"] <= 4.0
    assert privacy_report(0.3, 2.0, s["iterations_run"] + 1, 1e-5).epsilon > 4.0


def test_convergence_rule_eq_9():
    rule = ConvergenceRule(tol=0.5, window=3)
    assert [rule.update(p) for p in (100, 90, 89.8, 89.5, 89.4)] == [False, False, False, False, True]
    rule = ConvergenceRule(tol=0.5, window=2)
    assert [rule.update(p) for p in (10, 10.1, 12, 12.1, 12.2)] == [False, False, False, False, True]


def test_converge_tol_stops_early(tmp_path):
    s = _train(tmp_path, "a", "sampling_rate=1", "noise_multiplier=1", "converge_tol=1e6", "converge_window=2",
               iterations=50)
    assert s["stopped_by"] == "converged (Eq. 9)" and s["iterations_run"] == 3


@pytest.mark.parametrize("opt", ["sampling_rate=0", "sampling_rate=1.5", "noise_multiplier=0", "noise_multiplier=-2",
                                 "delta=1", "delta=0", "order=1", "adaptive_eta=0.1",
                                 "epsilon_budget=0.001"])
def test_bad_options_are_one_line(tmp_path, capsys, opt):
    code = main(["train", "--algorithm", "sub-lda", "--dataset", "synthetic", "--topics", "4", "--iterations", "3",
                 "--opt", opt, "--out", str(tmp_path / "x")])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err and "Traceback" not in err


def test_both_noise_settings_are_refused():
    with pytest.raises(Exception, match="not both"):
        get_algorithm("sub-lda").spec(4, 3, options={"noise_multiplier": "1", "rdp_budget": "2"})


def test_hdp_lda_without_noise_is_the_plain_sampler(tmp_path):
    """γ = 1 and a negligible noise are HDP-LDA next to nothing: the model matches centralized-lda's closely."""
    s = _train(tmp_path, "a", "sampling_rate=1", "noise_multiplier=1e-9", "alpha=0.5", iterations=40)
    out = tmp_path / "plain"
    assert main(["train", "--algorithm", "centralized-lda", "--dataset", "synthetic", "--topics", "8", "--iterations",
                 "40", "--eval-every", "20", "--opt", "alpha=0.5", "--opt", "sampler=dense", "--out", str(out)]) == 0
    plain = json.loads((out / "summary.json").read_text())
    assert math.isclose(s["perplexity"], plain["perplexity"], rel_tol=0.04)  # chains differ by ~2 % across seeds


@pytest.mark.parametrize("name", ["sub-lda-efficiency", "sub-lda-speedup", "sub-lda-perplexity",
                                  "sub-lda-convergence", "sub-lda-adaptive"])
def test_paper_experiments_write_summary_and_plots(tmp_path, capsys, name):
    out = tmp_path / name
    assert main(["experiment", name, "--quick", "--dataset", "synthetic", "--topics", "4,6", "--iterations", "6",
                 "--out", str(out), "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["experiment"] == name and (out / "summary.json").is_file()
    assert summary["plots"] and all(Path(p).stat().st_size > 0 for p in summary["plots"])
    if name == "sub-lda-efficiency":
        assert summary["increasing_everywhere"] and set(summary["gamma0"].values()) == {1.0}
    if name == "sub-lda-convergence":
        by_rate = {row["sampling_rate"]: row for row in summary["rows"]}
        assert by_rate[1.0]["epsilon_subsample"] == pytest.approx(2.0)
        assert by_rate[0.1]["epsilon_subsample"] == pytest.approx(0.0465, abs=1e-3)
        assert by_rate[0.1]["paper_epsilon_subsample"] == 0.05
    if name in ("sub-lda-speedup", "sub-lda-perplexity"):
        assert {row["topics"] for row in summary["rows"]} == {4, 6}
