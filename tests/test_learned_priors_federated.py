"""Learned priors in csfed-lda (issue 46 item 8): the parties' histograms travel on their own channel and add up to
the pooled corpus's; a real simulation (aggregator over HTTP, three parties) learns the same α under protection
none and mask, every party holds it, the run's model carries it; a checkpoint keeps it; DP refuses it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.cli.main import main
from fedtopic.models.hyperopt import (
    doc_topic_histogram,
    histogram_cells,
    histogram_from_cells,
    optimize_alpha,
)

pytestmark = pytest.mark.xdist_group("agg-learned_priors_federated")


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 4), st.integers(2, 5))
def test_summed_cells_of_the_parties_are_the_pooled_histograms(seed, n_parties, n_topics):
    rng = np.random.default_rng(seed)
    parts = [rng.integers(0, 30, size=(int(rng.integers(0, 12)), n_topics)) for _ in range(n_parties)]
    pooled = doc_topic_histogram(np.vstack(parts))
    width = 1 << max(int(p.sum(axis=1).max(initial=0)).bit_length() for p in parts)
    summed = histogram_from_cells(sum(histogram_cells(doc_topic_histogram(p), width) for p in parts))
    alpha = np.full(n_topics, 0.3)
    if pooled.lengths[1:].any():
        np.testing.assert_allclose(optimize_alpha(alpha, summed), optimize_alpha(alpha, pooled), rtol=1e-12)
    assert np.array_equal(summed.lengths[: pooled.lengths.shape[0]], pooled.lengths)


def test_a_document_longer_than_the_width_is_refused():
    from fedtopic.errors import ModelError

    with pytest.raises(ModelError, match="does not fit"):
        histogram_cells(doc_topic_histogram(np.array([[5, 4]])), 8)


def _simulate(out, protection, *extra):
    return main(["simulate", "--algorithm", "csfed-lda", "--protection", protection, "--dataset", "synthetic",
                 "--parties", "3", "--topics", "5", "--iterations", "12", "--opt", "optim_interval=4",
                 *extra, "--out", str(out), "--format", "json"])


def test_csfed_learns_one_alpha_for_the_consortium_exactly_under_mask(tmp_path, capsys):
    assert _simulate(tmp_path / "none", "none") == 0
    assert _simulate(tmp_path / "mask", "mask", "--opt", "optim_beta=true") == 0
    assert _simulate(tmp_path / "mask0", "mask") == 0
    capsys.readouterr()
    runs = {name: json.loads((tmp_path / name / "summary.json").read_text()) for name in ("none", "mask", "mask0")}
    alpha = np.asarray(runs["none"]["alpha"])
    assert alpha.shape == (5,) and np.ptp(alpha) > 0 and runs["none"]["parties_hold_same_phi"]
    # the masks cancel exactly, so the consortium learns the very same α and Φ as without protection
    np.testing.assert_array_equal(np.asarray(runs["mask0"]["alpha"]), alpha)
    model = np.load(tmp_path / "mask0" / "model.npz")
    np.testing.assert_array_equal(model["alpha"], alpha)
    np.testing.assert_array_equal(model["phi"], np.load(tmp_path / "none" / "model.npz")["phi"])
    assert runs["mask"]["beta"] != 0.01 and runs["none"]["beta"] == 0.01  # optim_beta learns β too


def test_a_party_checkpoint_keeps_the_learned_priors():
    from fedtopic.algorithms.lda.csfed_party import CSFedParty
    from fedtopic.algorithms.registry import get_algorithm

    corpus = _corpus()
    algo = get_algorithm("csfed-lda")
    spec = algo.spec(4, 10, 0, {"optim_interval": 2, "optim_beta": True})
    party = algo.party("p1", 0, corpus, spec)
    party.party.genesis()
    party.party.train_round([])
    party.party.learn_priors(doc_topic_histogram(party.party.model.state.n_dk), party.party.model.state.n_wk)
    party.prior_rounds, party.prior_width, party.prior_bound = 1, 64, 255
    state = {k: np.array(v, copy=True) for k, v in party.state().items()}
    again = CSFedParty(algo.channel_party("p1", 0, corpus, spec), 10)
    again.restore(state)
    np.testing.assert_array_equal(again.party.alpha, party.party.alpha)
    assert again.party.beta == party.party.beta != 0.01
    assert (again.prior_rounds, again.prior_width, again.prior_bound) == (1, 64, 255)


def _corpus():
    from _lda_synth import synthetic_lda

    return synthetic_lda(n_docs=30, doc_len=20, n_words=40, n_topics=4, seed=1)[0]


@pytest.mark.parametrize("algorithm,extra,message", [
    ("csfed-lda", ["--opt", "dp=true"], "no DP mechanism covers"),
    ("csfed-lda", ["--opt", "sampler=mh"], "sampler=dense"),
    ("dafed-lda", ["--opt", "dp=true"], "no DP mechanism covers"),
    ("dafed-lda", ["--opt", "sampler=sparse"], "sampler=dense"),
])
def test_what_cannot_learn_alpha_is_refused_in_one_line(tmp_path, capsys, algorithm, extra, message):
    assert main(["simulate", "--algorithm", algorithm, "--dataset", "synthetic", "--parties", "3", "--topics", "5",
                 "--iterations", "4", "--opt", "optim_interval=2", *extra, "--out", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "Traceback" not in err and len(err.splitlines()) == 1


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 6), st.integers(2, 64))
def test_dafed_histogram_rows_round_trip_and_clip_long_documents(seed, n_topics, width):
    from fedtopic.algorithms.lda.published_priors import clip, extra_rows, pack, unpack

    rng = np.random.default_rng(seed)
    n_dk = rng.integers(0, 25, size=(int(rng.integers(1, 15)), n_topics))
    histogram = doc_topic_histogram(n_dk)
    clipped, count = clip(histogram, width)
    assert count == int(np.count_nonzero(n_dk.sum(axis=1) >= width))
    rows = pack(clipped, width)
    assert rows.shape == (extra_rows(n_topics, width), n_topics) and rows.dtype == np.int32
    back = unpack(rows, width)
    assert np.array_equal(back.topic_counts, clipped.topic_counts) and np.array_equal(back.lengths, clipped.lengths)
    assert back.lengths.sum() == n_dk.shape[0] and (back.topic_counts.sum(axis=1) == n_dk.shape[0]).all()
    if count == 0:  # nothing clipped: the same step as from the exact histograms
        np.testing.assert_allclose(optimize_alpha(np.full(n_topics, 0.2), back),
                                   optimize_alpha(np.full(n_topics, 0.2), histogram), rtol=1e-12)


@pytest.mark.parametrize("transport", ["memory", "chain"])
def test_dafed_parties_learn_alpha_from_what_they_read(tmp_path, capsys, transport):
    out = tmp_path / "run"
    assert main(["simulate", "--algorithm", "dafed-lda", "--dataset", "synthetic", "--parties", "3", "--topics", "5",
                 "--iterations", "12", "--opt", "optim_interval=4", "--transport", transport,
                 "--out", str(out), "--format", "json"]) == 0
    capsys.readouterr()
    summary = json.loads((out / "summary.json").read_text())
    alpha = np.asarray(summary["alpha"])
    assert alpha.shape == (5,) and np.ptp(alpha) > 0
    np.testing.assert_array_equal(np.load(out / "model.npz")["alpha"], alpha)
    assert summary["optim_clipped_documents"] == {"p1": 0, "p2": 0, "p3": 0}  # synthetic documents are short


def test_a_dafed_party_publishes_its_histograms_and_keeps_alpha_in_its_checkpoint():
    from fedtopic.algorithms.asynchronous import ChannelSnapshot
    from fedtopic.algorithms.registry import get_algorithm

    corpus = _corpus()
    algo = get_algorithm("dafed-lda")
    spec = algo.spec(4, 10, 0, {"optim_interval": 1, "optim_width": 32})
    first, second = (algo.channel_party(pid, i, corpus, spec) for i, pid in enumerate(("p1", "p2")))
    shape = algo.publication_shape(spec, corpus.n_words)
    genesis = first.genesis()
    assert genesis.shape == shape and np.array_equal(genesis[: corpus.n_words], first.model.state.n_wk)
    second.genesis()
    second.train_round([ChannelSnapshot("p1", 0, genesis)])
    np.testing.assert_array_equal(second.global_counts(), first.model.state.n_wk + second.model.state.n_wk)
    assert second.alpha.shape == (4,)  # learned from both parties' histograms
    state = {k: np.array(v, copy=True) for k, v in second.state().items()}
    again = algo.channel_party("p2", 1, corpus, spec)
    again.restore(state)
    np.testing.assert_array_equal(again.alpha, second.alpha)
    assert again.optimisations == second.optimisations == 1


def test_dafed_node_processes_learn_alpha_and_a_killed_node_resumes_with_it(tmp_path, capsys):
    """Three `node run` processes over `fedtopic chain up` learn α; p2 killed after round 5 (α learned twice)
    resumes from its checkpoint with it, and every party's model carries K learned values."""
    import signal
    import subprocess
    import sys
    import time

    from fedtopic.consortium.config import load_consortium, save_consortium
    from fedtopic.consortium.init import init_consortium
    from fedtopic.ledger.local_nodes import REPO_ROOT, start_chain_up
    from fedtopic.runs.folder import load_topic_model

    init = init_consortium(3, tmp_path / "c", seed=11)
    cfg = load_consortium(init.config_path)
    algorithm = cfg.algorithm.model_copy(update={"topics": 5, "iterations": 12, "random_delay": (0.0, 0.05),
                                                 "options": {"optim_interval": 2}})
    save_consortium(cfg.model_copy(update={"algorithm": algorithm,
                                           "data": cfg.data.model_copy(update={"dataset": "synthetic"})}),
                    init.config_path)

    def node(party: str, log: Path) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "fedtopic.cli.main", "node", "run", "--config",
                                 str(init.config_path), "--party", party, "--format", "json", "--genesis-timeout",
                                 "240"], stdout=subprocess.PIPE, stderr=open(log, "w"), text=True,
                                env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"})

    chain = start_chain_up(engine="embedded")
    procs: dict[str, subprocess.Popen] = {}
    try:
        assert main(["consortium", "deploy", str(init.config_path), "--rpc", chain.url, *chain.faucet_args]) == 0
        logs = {p: tmp_path / f"{p}.log" for p in ("p1", "p2", "p3")}
        procs = {p: node(p, logs[p]) for p in logs}
        deadline = time.monotonic() + 240
        while "round 5 " not in logs["p2"].read_text():
            assert time.monotonic() < deadline, logs["p2"].read_text()[-2000:]
            time.sleep(0.2)
        procs["p2"].send_signal(signal.SIGKILL)
        procs["p2"].wait(30)
        procs["p2"] = node("p2", tmp_path / "p2-restart.log")
        outs = {p: proc.communicate(timeout=300) for p, proc in procs.items()}
        for p, (out, _) in outs.items():
            assert procs[p].returncode == 0, (tmp_path / f"{p}.log").read_text()[-2000:]
        assert "p2: resumed from" in (tmp_path / "p2-restart.log").read_text()
        for p in outs:
            alpha = np.asarray(load_topic_model(tmp_path / "c" / "state" / p / "model").alpha)
            assert alpha.shape == (5,) and np.ptp(alpha) > 0
        capsys.readouterr()
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
        chain.stop()
