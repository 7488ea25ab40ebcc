"""Distributed DP inside the masks (``dp.distributed``): csfed-lda through the real aggregator with every party
adding a Skellam share, accounted round by round at the contributors that came; the configurations it refuses; an
aggregator that releases no round with fewer contributors than planned; and the audit that catches the mechanism
with its noise switched off."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fedtopic.algorithms.lda.ddp_party import DistributedDPLDAParty, noise_scale
from fedtopic.algorithms.lda.dp_options import DPSettings
from fedtopic.algorithms.lda.options import LDAHyper
from fedtopic.cli.main import main
from fedtopic.corpus.synthetic import generate_synthetic
from fedtopic.crypto.codec import encode_counts
from fedtopic.network.errors import Rejection
from fedtopic.network.schemas import SessionCreate
from fedtopic.network.service import Aggregator
from fedtopic.network.store import Store
from fedtopic.privacy.rdp import DEFAULT_ORDERS, epsilon_from_rdp
from fedtopic.privacy.skellam import composed_rdp, share_lambda

SIM = ["simulate", "--algorithm", "csfed-lda", "--dataset", "synthetic", "--parties", "3", "-k", "4",
       "--iterations", "4", "--seed", "1"]


def _run(tmp_path, capsys, name: str, *args: str) -> dict:
    assert main([*SIM, *args, "--out", str(tmp_path / name), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_masked_consortium_with_distributed_dp_accounts_every_round_at_its_contributors(tmp_path, capsys):
    ddp = _run(tmp_path, capsys, "ddp", "--protection", "mask", "--opt", "dp.distributed=true",
               "--opt", "dp.noise_multiplier=1.5", "--opt", "dp.sampling_rate=0.5")
    for pid, spent in ddp["privacy"].items():
        d = spent["distributed"]
        assert d["planned_contributors"] == 3 and d["contributors_per_round"] == [3] * 5 and d["scale"] == 256
        lam = share_lambda(1.5 * 256, 1.0, 3)
        rounds = [(0.5, 2 * 3 * lam)] * 5 + [(1.0, 2 * 3 * lam)]  # genesis + 4 rounds, and the frequency release
        expected = epsilon_from_rdp(composed_rdp(rounds, 256, 256, DEFAULT_ORDERS), DEFAULT_ORDERS, 1e-5)[0]
        assert spent["epsilon"] == pytest.approx(expected, rel=1e-12)
        assert "colluders" in d["colluders_tolerated"]
    history = [json.loads(line) for line in (tmp_path / "ddp" / "history" / "p1.jsonl").read_text().splitlines()]
    assert [r["epsilon"] for r in history] == sorted(r["epsilon"] for r in history)  # ε per round, growing
    info = json.loads((tmp_path / "ddp" / "run-info.json").read_text())
    assert info["privacy"]["dp"] is True


@pytest.mark.parametrize(("args", "says"), [
    (["--protection", "none"], "dp.distributed adds only a share of the noise to each update"),
    (["--protection", "paillier-iphe"], "under 'paillier-iphe' it would see each update"),
    (["--protection", "mask", "--opt", "dp.min_contributors=4"], "dp.min_contributors must be between 2"),
])
def test_distributed_dp_is_refused_where_no_secure_sum_could_carry_it(tmp_path, capsys, args, says):
    assert main([*SIM, "--opt", "dp.distributed=true", *args, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err and not (tmp_path / "x" / "history").exists()


def test_an_asynchronous_consortium_has_no_distributed_dp(tmp_path, capsys):
    assert main(["simulate", "--algorithm", "dafed-lda", "--dataset", "synthetic", "--parties", "2", "-k", "3",
                 "--iterations", "1", "--opt", "dp.distributed=true", "--out", str(tmp_path / "x")]) == 2
    assert "dafed-lda has no option 'dp.distributed'" in capsys.readouterr().err


def test_the_aggregator_releases_no_round_with_fewer_contributors_than_planned(tmp_path):
    clock = [1000.0]
    agg = Aggregator(Store(tmp_path), {p: f"0x{i:040x}" for i, p in enumerate("abc", start=1)}, protection="none",
                     default_deadline=10.0, clock=lambda: clock[0])
    with pytest.raises(Rejection) as err:
        agg.open_session(SessionCreate(session_id="s", parties=["a", "b", "c"], combiner="none",
                                       meta={"shape": [2, 2], "min_contributors": 4}), "a")
    assert err.value.code == "invalid_meta"
    agg.open_session(SessionCreate(session_id="s", parties=["a", "b", "c"], combiner="none",
                                   meta={"shape": [2, 2], "min_contributors": 3}), "a")
    for p in "ab":
        agg.submit("s", 0, p, encode_counts(np.ones((2, 2), dtype=np.int32)))
    clock[0] += 11.0  # the straggler deadline passes without c
    agg.tick()
    with pytest.raises(Rejection) as err:
        agg.aggregate("s", 0, "a")
    assert err.value.code == "round_failed" and "never releases a sum of fewer than 3" in err.value.reason


def test_the_released_sum_decodes_to_the_noisy_counts_exactly():
    corpus = generate_synthetic(n_parties=3, n_topics=4, n_shared=1, n_words=40, docs_per_party=10, doc_length=12,
                                seed=3).parties
    dp = DPSettings(rate=1.0, sigma=0.0, order=14, clip=None, delta=1e-5, epsilon_budget=None, adaptive=None,
                    distributed=True)
    hyper = LDAHyper(n_topics=3, iterations=1, alpha=0.5, beta=0.1, sampler="dense")
    parties = [DistributedDPLDAParty(f"p{i}", c, hyper, dp, seed=i) for i, c in enumerate(corpus)]
    releases = []
    for p in parties:
        p.plan(3)
        releases.append(p.genesis())
    total = np.sum(releases, axis=0)
    others = parties[0].others_from_aggregate(total, 0, contributed=True, contributors=3)
    true = sum(p.model.state.n_wk.astype(np.int64) for p in parties[1:])
    np.testing.assert_array_equal(others.n_wk, true)  # σ = 0: the offsets and the scale come off exactly
    assert noise_scale(1.0) == 256 and noise_scale(100.0) == 2


def test_without_subsampling_the_same_noise_multiplier_costs_what_local_dp_costs():
    """At γ = 1 the scaled Skellam sum's ε is the Gaussian's to within the integer noise's 1 %; local DP pays the
    same ε for P times the noise in the sum."""
    from fedtopic.algorithms.lda.dp_party import DPLDAParty

    corpus = generate_synthetic(n_parties=1, n_topics=3, n_shared=1, n_words=30, docs_per_party=5, doc_length=10,
                                seed=1).parties[0]
    hyper = LDAHyper(n_topics=3, iterations=1, alpha=0.5, beta=0.1, sampler="dense")
    for sigma in (0.7, 1.0, 3.0):
        common = dict(rate=1.0, sigma=sigma, order=14, clip=None, delta=1e-5, epsilon_budget=None, adaptive=None)
        ddp = DistributedDPLDAParty("p", corpus, hyper, DPSettings(**common, distributed=True))
        ddp.plan(10)
        local = DPLDAParty("p", corpus, hyper, DPSettings(**common))
        for releases in (1, 31):
            assert ddp.privacy(releases).epsilon == pytest.approx(local.privacy(releases).epsilon, rel=0.02)
            assert ddp.privacy(releases).epsilon >= local.privacy(releases).epsilon * (1 - 1e-9)


@pytest.mark.slow
def test_the_audit_holds_for_distributed_dp_and_catches_it_without_noise():
    from fedtopic.experiments.dp_audit import AuditSettings, audit_releases

    # σ = 3 (accountant ε 2.5) and 240 runs: the noiseless release still scores ε_lb 3.5, above it
    honest = audit_releases(AuditSettings(sampling_rate=1.0, noise_multiplier=3.0, releases=3, runs=240, seed=2,
                                          distributed=3))
    assert honest["holds"] and honest["epsilon_lower_bound"] <= honest["accountant_epsilon"]
    broken = audit_releases(AuditSettings(sampling_rate=1.0, noise_multiplier=0.0, releases=3, runs=240, seed=2,
                                          distributed=3))
    assert broken["epsilon_lower_bound"] > honest["accountant_epsilon"]  # it would have failed the honest claim


def test_the_aggregator_refuses_a_session_weaker_than_the_consortiums_protection(tmp_path):
    """A member of a mask consortium cannot open a session that would show the aggregator each update."""
    parties = {p: f"0x{i:040x}" for i, p in enumerate("abc", start=1)}
    agg = Aggregator(Store(tmp_path / "mask"), parties, protection="mask", default_deadline=10.0)
    for combiner, meta in (("none", {"shape": [2, 2]}), ("dense-sum", {"shape": [4]}),
                           ("topic-merge", {"vocabulary": 4})):
        with pytest.raises(Rejection) as err:
            agg.open_session(SessionCreate(session_id=f"s-{combiner}", parties=["a", "b", "c"], combiner=combiner,
                                           meta=meta), "a")
        assert err.value.code == "weaker_than_consortium" and "'mask'" in err.value.reason
    agg.open_session(SessionCreate(session_id="v", parties=["a", "b", "c"], combiner="vocabulary", meta={}), "a")
    with pytest.raises(Rejection) as err:  # a vocabulary rendezvous carries no updates
        agg.submit("v", 0, "a", b"\x00" * 8)
    assert err.value.status == 422
    plain = Aggregator(Store(tmp_path / "none"), parties, protection="none", default_deadline=10.0)
    plain.open_session(SessionCreate(session_id="s", parties=["a", "b"], combiner="none", meta={"shape": [2, 2]}), "a")


def test_a_dp_runs_last_line_says_what_it_spent(tmp_path, capsys):
    assert main([*SIM, "--protection", "mask", "--opt", "dp.distributed=true", "--opt", "dp.noise_multiplier=2",
                 "--out", str(tmp_path / "run")]) == 0
    last = [line for line in capsys.readouterr().out.splitlines() if line.startswith("csfed-lda")][-1]
    assert "ε ≤ " in last and "per party (δ = 1e-05)" in last
