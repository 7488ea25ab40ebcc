"""FedNMF with distributed DP (DP-SGD across the consortium, Skellam shares under mask): the clipped gradients
against a slow reference, the release's decoding and noise, its accountant, and a run through the real
aggregator whose summary says what each party spent."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from _texts import theme_texts, write_jsonl

from fedtopic.algorithms.dp_sgd import DPSGD, SCALE, decode_sum, privacy, release
from fedtopic.algorithms.fednmf.ddp import clipped_gradient_sum, nmf_dp
from fedtopic.algorithms.fednmf.learned_little import learned_little
from fedtopic.cli.main import main
from fedtopic.errors import ConfigError
from fedtopic.privacy.rdp import DEFAULT_ORDERS
from fedtopic.privacy.skellam import skellam_rdp

pytest.importorskip("torch")
pytestmark = pytest.mark.xdist_group("agg-fednmf_ddp")

DP = DPSGD(sigma=1.0, rate=0.5, clip=2.0, delta=1e-5, min_contributors=None, max_batch=64)


def test_clipped_gradients_match_a_per_document_reference():
    rng = np.random.default_rng(0)
    a, w, h = rng.poisson(1.0, (7, 12)).astype(float), rng.random((12, 3)), rng.random((7, 3))
    ref = np.zeros_like(w)
    for j in range(7):
        g = -2.0 * np.outer(a[j] - w @ h[j], h[j])
        ref += g * min(1.0, DP.clip / np.linalg.norm(g))
    assert np.allclose(clipped_gradient_sum(a, w, h, DP.clip), ref, rtol=1e-12, atol=1e-12)


def test_releases_sum_to_the_clipped_gradients_and_count_plus_the_central_noise():
    rng = np.random.default_rng(1)
    shape, parties = (40, 5), 3
    grads = [rng.normal(0, 1, shape) for _ in range(parties)]
    counts = [10, 20, 30]
    total = sum(release(g, n, DP, parties, np.random.default_rng(10 + i))
                for i, (g, n) in enumerate(zip(grads, counts)))
    assert total.min() >= 0 and total.max() <= parties * DP.max_value(parties)
    g_sum, n_sum = decode_sum(total, parties, DP, parties, shape)
    noise = (g_sum - sum(grads)) / DP.clip  # in units of one document's clipped part
    assert abs(noise.std() - DP.sigma) < 0.15
    assert abs(n_sum - 60) < 6 * DP.sigma / 0.1


def test_the_accountant_composes_one_subsampled_skellam_release_per_round_trained():
    cells = 40 * 5 + 1
    one = privacy(DP, [3], 3, cells)
    three = privacy(DP, [3, 3, 3], 3, cells)
    assert three.epsilon > one.epsilon > 0
    l1, l2 = DP.sensitivities(cells)
    assert l2 == SCALE + math.sqrt(cells)
    full = DPSGD(1.0, 1.0, 2.0, 1e-5, None, 64)
    direct = skellam_rdp(2 * 3 * full.lam(3), l1, l2, DEFAULT_ORDERS)  # γ = 1: the bound itself
    assert np.allclose(privacy(full, [3], 3, cells).rdp, direct)
    assert privacy(DP, [2], 3, cells).epsilon > one.epsilon  # fewer contributors: less noise in the sum


def test_distributed_dp_refuses_the_smile_term_and_a_protection_without_a_secure_sum(tmp_path, capsys):
    with pytest.raises(ConfigError, match="mi_weight=0"):
        nmf_dp({"dp.distributed": True, "mi_weight": 0.1})
    corpus = write_jsonl(tmp_path / "d.jsonl", theme_texts(60, seed=2))
    assert main(["simulate", "--algorithm", "fednmf", "--corpus", str(corpus), "--parties", "3", "-k", "2",
                 "--iterations", "2", "--opt", "dp.distributed=true", "--out", str(tmp_path / "x")]) == 2
    assert "needs a protection under which the aggregator sees only the sum" in capsys.readouterr().err


def test_fednmf_with_distributed_dp_through_the_aggregator_reports_each_partys_epsilon(tmp_path, capsys):
    corpus = write_jsonl(tmp_path / "d.jsonl", theme_texts(240, seed=3))
    out = tmp_path / "run"
    assert main(["simulate", "--algorithm", "fednmf", "--corpus", str(corpus), "--parties", "3", "-k", "4",
                 "--iterations", "8", "--protection", "mask", "--opt", "fraction=1.0", "--opt", "dp.distributed=true",
                 "--opt", "dp.sampling_rate=0.5", "--opt", "dp.clip=5", "--opt", "lr=1.0", "--out", str(out),
                 "--format", "json"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    spent = summary["privacy"]
    assert set(spent) == {"p1", "p2", "p3"}
    for pid, p in spent.items():
        assert p["releases"] == 8 and p["contributors"] == [3] * 8 and p["planned_contributors"] == 3
        dp = DPSGD(p["noise_multiplier"], p["sampling_rate"], p["clip"], 1e-5, None, 4096)
        vk = len(json.loads((out / "vocab.json").read_text())["words"]) * 4
        assert p["epsilon"] == pytest.approx(privacy(dp, [3] * 8, 3, vk + 1).epsilon)
    assert np.isfinite(summary["npmi"]) and summary["protection"] == "mask"
    assert summary["warnings"] == []  # lr 1 on half the documents a step: the loss falls


def test_a_dp_run_that_barely_moves_its_loss_says_so_and_names_the_levers(tmp_path, capsys):
    corpus = write_jsonl(tmp_path / "d.jsonl", theme_texts(240, seed=3))
    out = tmp_path / "run"
    assert main(["simulate", "--algorithm", "fednmf", "--corpus", str(corpus), "--parties", "3", "-k", "4",
                 "--iterations", "6", "--protection", "mask", "--opt", "fraction=1.0", "--opt", "dp.distributed=true",
                 "--opt", "lr=0.0001", "--out", str(out)]) == 0  # sms-spam's 7,000 words stay as stuck at lr 0.1
    err = capsys.readouterr().err
    assert "warning: every party's loss fell less than 1 % from its start in 6 rounds" in err
    assert "dp.sampling_rate" in err and "dp.noise_multiplier" in err
    assert json.loads((out / "summary.json").read_text())["warnings"] == [
        next(line[len("warning: "):] for line in err.splitlines() if line.startswith("warning: every party"))]
    rows = [json.loads(line) for line in (out / "history" / "p1.jsonl").read_text().splitlines()]
    assert rows[0]["extra"]["loss_at_start"] > rows[-1]["quality"] > 0.99 * rows[0]["extra"]["loss_at_start"]


def test_a_run_that_learnt_converged_in_its_first_round_or_predates_the_start_loss_does_not_warn():
    learnt = [[{"extra": {"loss_at_start": 9.0}, "quality": 8.0}, {"extra": {}, "quality": 7.99}]]
    assert learned_little(learnt, dp=True) == []  # the fall is measured from the start, not from round 0
    assert learned_little([[{"extra": {}, "quality": 8.0}, {"quality": 8.0}]], dp=False) == []
    stuck = [[{"extra": {"loss_at_start": 9.0}, "quality": 8.99}, {"quality": 8.98}],
             [{"extra": {"loss_at_start": 5.0}, "quality": 5.0}, {"quality": 4.98}]]
    (line,) = learned_little(stuck, dp=False)
    assert "at most 0.40 %: 5 → 4.98" in line and "raise lr, local_epochs or the rounds" in line
    assert learned_little(stuck + learnt, dp=False) == []  # one party that learnt: the consortium did
