"""FedNMF(+MI) through a real aggregator process: the paper's command, mask ≈ unprotected, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from _texts import theme_texts, write_jsonl

from fedtopic.cli.main import main

pytest.importorskip("torch")
pytestmark = pytest.mark.xdist_group("agg-fednmf_aggregator")


def _simulate(tmp_path, name: str, *extra: str) -> tuple[dict, np.ndarray]:
    corpus = tmp_path / "docs.jsonl"
    if not corpus.exists():
        write_jsonl(corpus, theme_texts(240, seed=3))
    out = tmp_path / name
    assert main(["simulate", "--algorithm", "fednmf", "--corpus", str(corpus), "--parties", "4", "-k", "4",
                 "--iterations", "6", "--opt", "local_epochs=2", "--opt", "fraction=0.5", "--opt", "mi_weight=0.1",
                 "--opt", "server_rule=adam", "--opt", "batch=16", "--out", str(out), "--format", "json",
                 *extra]) == 0
    with np.load(out / "model.npz") as npz:
        return json.loads((out / "summary.json").read_text()), npz["factors"]


def test_mask_gives_the_unprotected_model_to_fixed_point_precision(tmp_path, capsys):
    plain, w_plain = _simulate(tmp_path, "plain")
    masked, w_masked = _simulate(tmp_path, "masked", "--protection", "mask")
    assert plain["rounds"] == masked["rounds"] == 6 and plain["selected_per_round"] == [2] * 6
    assert masked["protection"] == "mask" and masked["bytes_per_client_round"] > plain["bytes_per_client_round"] / 2
    rel = np.abs(w_masked - w_plain).max() / np.abs(w_plain).max()
    assert rel < 1e-6  # fixed point (2^-60) moves the bits, not the model
    assert np.isfinite(plain["we_coherence"]) and -1 <= plain["npmi"] <= 1
    assert (tmp_path / "plain" / "aggregator.log").is_file()


def test_the_paper_command_reports_f1_accuracy_and_we_coherence(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["simulate", "--algorithm", "fednmf", "--dataset", "sms-spam", "--parties", "10", "--scheme",
                 "dirichlet", "--dirichlet-alpha", "1", "--topics", "50", "--iterations", "2", "--opt",
                 "server_rule=adam", "--opt", "mi_weight=0.1", "--opt", "local_epochs=1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "WE coherence" in printed and "macro-F1" in printed and "accuracy" in printed
    s = json.loads((out / "summary.json").read_text())
    assert s["parties"] == 10 and s["server_rule"] == "adam" and s["selected_per_round"] == [2, 2]
    assert 0 <= s["macro_f1"] <= 1 and 0.5 < s["accuracy"] <= 1 and np.isfinite(s["we_coherence"])
    assert s["vocabulary"] > 5000 and len(s["client_documents"]) == 10


@pytest.mark.parametrize(("args", "says"), [
    (["--opt", "mi_weight=-0.1"], "mi_weight must be ≥ 0"),
    (["--opt", "fraction=0"], "fraction must be > 0"),
    (["--opt", "fraction=1.5"], "fraction must be ≤ 1"),
    (["--opt", "server_rule=sgd"], "server_rule must be one of avg, adagrad, yogi, adam"),
    (["--protection", "paillier-iphe"], "fednmf sends dense, which protection 'paillier-iphe' cannot carry; it takes: none, mask"),
    (["--protection", "mask", "--opt", "fraction=0.2", "--parties", "4"], "--opt fraction=C with C·4 ≥ 2"),
])
def test_bad_input_is_one_line(tmp_path, capsys, args, says):
    assert main(["simulate", "--algorithm", "fednmf", "--dataset", "synthetic", "--parties", "2", "-k", "3",
                 "--iterations", "1", "--out", str(tmp_path / "x"), *args]) != 0
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err and "Traceback" not in err


def test_fewer_than_two_topics_is_a_usage_error(tmp_path, capsys):
    assert main(["train", "--algorithm", "nmf-sgd", "--dataset", "synthetic", "-k", "1", "--out",
                 str(tmp_path / "x")]) == 2


@pytest.mark.parametrize("command", [
    ["train", "--algorithm", "nmf-sgd", "--dataset", "synthetic", "-k", "3", "--iterations", "1"],
    ["simulate", "--algorithm", "fednmf", "--dataset", "synthetic", "--parties", "2", "-k", "3", "--iterations", "1"],
    ["train", "--algorithm", "prodlda", "--dataset", "synthetic", "-k", "3", "--iterations", "1"],
    ["simulate", "--algorithm", "gfedntm-prodlda", "--dataset", "synthetic", "--parties", "2", "-k", "3",
     "--iterations", "1"],
])
def test_without_the_neural_extra_one_line_names_it(tmp_path, command):
    code = ("import sys\n"  # an environment without torch: every import of it fails
            "class NoTorch:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] == 'torch':\n"
            "            raise ModuleNotFoundError(\"No module named 'torch'\")\n"
            "sys.meta_path.insert(0, NoTorch())\n"
            "from fedtopic.cli.main import main\n"
            f"sys.exit(main({command + ['--out', str(tmp_path / 'x')]!r}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode != 0
    err = proc.stderr.strip()
    last = err.splitlines()[-1]  # after train's progress bar
    assert last.startswith("error:") and "needs the neural extra (torch==2.13.0): pip install 'fedtopic[neural]'" in last
    assert "Traceback" not in err



def test_fednmf_node_processes_with_mask_resume_after_kill(tmp_path):
    """Three `fedtopic node run` clients under mask through a real aggregator; one is killed -9 after its first
    round and resumes from its checkpoint; every client ends with the W of a run without the kill."""
    from _csfed_setup import make_consortium
    from _node_procs import run_node_processes

    from fedtopic.consortium.config import load_consortium, save_consortium
    from fedtopic.simulation.aggregator_proc import AggregatorProcess

    results = {}
    for label, kill in (("clean", False), ("killed", True)):
        config, cfg = make_consortium(tmp_path / label, protection="mask", iterations=4)
        cfg = cfg.model_copy(update={"algorithm": cfg.algorithm.model_copy(update={
            "name": "fednmf", "topics": 4, "options": {"local_epochs": 1, "fraction": 0.67, "mi_weight": 0.1,
                                                        "server_rule": "yogi", "batch": 64}})})
        save_consortium(cfg, config)
        cfg = load_consortium(config)
        logs = {p: tmp_path / f"{label}-{p}.log" for p in cfg.party_ids}
        with AggregatorProcess(config, tmp_path / f"{label}-agg", tmp_path / f"{label}-agg.log") as agg:
            outs = run_node_processes(config, cfg.party_ids, agg.url, logs, kill="p2" if kill else None)
        summaries = {p: json.loads(out) for p, out in outs.items()}
        assert all(s["rounds"] == 4 and s["protection"] == "mask" for s in summaries.values())
        assert sum(s["rounds_selected"] for s in summaries.values()) == 4 * 2  # m = max(⌊0.67·3⌋, 1) = 2
        ws = [np.load(config.parent / "state" / p / "model" / "model.npz")["factors"] for p in cfg.party_ids]
        assert all(np.array_equal(ws[0], w) for w in ws[1:])  # one global model
        assert all((config.parent / "state" / p / "model" / "theta.npy").is_file() for p in cfg.party_ids)
        results[label] = ws[0]
        if kill:
            assert "p2: resumed at round 1" in logs["p2"].read_text()
    assert np.array_equal(results["clean"], results["killed"])


def test_experiment_fig3_writes_curves_for_the_eight_federated_methods(tmp_path, capsys):
    out = tmp_path / "fig3"
    assert main(["experiment", "fednmf-communication", "--quick", "--topics", "5", "--iterations", "2",
                 "--out", str(out), "--format", "json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert set(s["curves"]) == {"FedAvg", "FedAvg+MI", "FedAdagrad", "FedAdagrad+MI", "FedAdam", "FedAdam+MI",
                                "FedYogi", "FedYogi+MI"}
    assert all([p["round"] for p in pts] == [1, 2] and 0 <= pts[-1]["macro_f1"] <= 1 for pts in s["curves"].values())
    assert (out / "fig3_f1_vs_rounds.png").stat().st_size > 0


def test_the_default_fraction_selects_two_clients_so_mask_runs_with_three_parties(tmp_path, capsys):
    """C defaults to 0.2 raised to two clients (issue 66: 0.2 of 3 parties selected one, and mask refused)."""
    out = tmp_path / "run"
    assert main(["simulate", "--algorithm", "fednmf", "--dataset", "synthetic", "--parties", "3", "-k", "3",
                 "--iterations", "2", "--opt", "local_epochs=1", "--protection", "mask", "--out", str(out),
                 "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["selected_per_round"] == [2, 2] and summary["protection"] == "mask"
