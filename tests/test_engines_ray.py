"""The Ray engine (``fedtopic[cluster]``): a local Ray cluster runs a masked CSFed consortium's parties in a pool of
actors over the real aggregator process, to the threads engine's model bit for bit, with every party's history and
the summary naming the Ray node it ran on; what it refuses."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from fedtopic.cli.main import main

ray = pytest.importorskip("ray", reason="NOT RUN: Ray is not installed (scripts/test installs fedtopic[cluster])")

SIM = ["simulate", "--algorithm", "csfed-lda", "--dataset", "synthetic", "--parties", "3", "-k", "4",
       "--iterations", "3", "--protection", "mask", "--seed", "2"]


@pytest.mark.timeout(300)
def test_ray_trains_the_threads_model_and_names_its_nodes(tmp_path, capsys):
    for engine in ("threads", "ray"):
        assert main([*SIM, "--engine", engine, "--out", str(tmp_path / engine), "--format", "json"]) == 0
    capsys.readouterr()
    summary = json.loads((tmp_path / "ray" / "summary.json").read_text())
    with np.load(tmp_path / "threads" / "model.npz") as a, np.load(tmp_path / "ray" / "model.npz") as b:
        np.testing.assert_array_equal(a["phi"], b["phi"])
    assert summary["engine"] == "ray" and set(summary["placement"]) == {"p1", "p2", "p3"}
    nodes = {p["ray_node"] for p in summary["placement"].values()}
    assert len(nodes) == 1 and len(next(iter(nodes))) == 56  # one machine: one Ray node, its 56-hex-digit id
    for pid in ("p1", "p2", "p3"):
        rows = [json.loads(line) for line in (tmp_path / "ray" / "history" / f"{pid}.jsonl").read_text().splitlines()]
        assert [r["round"] for r in rows] == [0, 1, 2, 3] and {r["extra"]["ray_node"] for r in rows} == nodes
    assert json.loads((tmp_path / "ray" / "run-info.json").read_text())["engine"] == "ray"
    assert "placement" not in json.loads((tmp_path / "threads" / "summary.json").read_text())


@pytest.mark.timeout(300)
def test_the_embedding_family_on_ray_trains_its_threads_model(tmp_path, capsys):
    """fed-embedding-topics through the same door (issue 63): its parties as Ray actors end with the bits of the
    threads run."""
    from _texts import theme_texts, write_jsonl

    write_jsonl(tmp_path / "d.jsonl", theme_texts(120, seed=3))
    sim = ["simulate", "--algorithm", "fed-embedding-topics", "--corpus", str(tmp_path / "d.jsonl"), "--parties", "3",
           "-k", "3", "--iterations", "3", "--opt", "embedding=hashed", "--protection", "mask", "--format", "json"]
    for engine in ("threads", "ray"):
        assert main([*sim, "--engine", engine, "--out", str(tmp_path / engine)]) == 0
    capsys.readouterr()
    with np.load(tmp_path / "threads" / "model.npz") as a, np.load(tmp_path / "ray" / "model.npz") as b:
        np.testing.assert_array_equal(a["phi"], b["phi"])
    assert set(json.loads((tmp_path / "ray" / "summary.json").read_text())["placement"]) == {"p1", "p2", "p3"}


def _simulate_in_a_process(tmp_path, home):
    import os
    import subprocess

    environment = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")} | {"HOME": str(home)}
    small = ["simulate", "--algorithm", "csfed-lda", "--dataset", "synthetic", "--parties", "2", "-k", "3",
             "--iterations", "1"]
    return subprocess.run([sys.executable, "-m", "fedtopic.cli.main", *small, "--engine", "ray", "--format", "json",
                           "--out", str(tmp_path / "run")], capture_output=True, text=True, env=environment,
                          timeout=240)


@pytest.mark.timeout(300)
def test_a_local_ray_keeps_its_log_lines_out_and_its_token_in_the_run_folder(tmp_path):
    """Issue 64: without --verbose no line of Ray's own reaches the user; the local Ray's token is a fresh one in
    the run's folder (0600), said in one line, and nothing is written under ~/.ray."""
    home = tmp_path / "home"
    home.mkdir()
    quiet = _simulate_in_a_process(tmp_path, home)
    assert quiet.returncode == 0, quiet.stderr
    token = tmp_path / "run" / "ray" / "auth_token"
    assert token.stat().st_mode & 0o777 == 0o600 and len(token.read_text()) == 64
    assert f"Ray's token (a local Ray for this run): {token}" in quiet.stderr
    ours = ("aggregator ", "parties on the ray engine", "Ray's token")
    assert [line for line in quiet.stderr.splitlines() if not line.startswith(ours)] == [], quiet.stderr
    assert not (home / ".ray").exists() and json.loads(quiet.stdout)["engine"] == "ray"


def test_a_token_the_user_gives_is_used_and_none_is_made(tmp_path, monkeypatch):
    import contextlib
    import os

    from fedtopic.engines.ray_engine import _token_for

    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(tmp_path / "mine"))
    with contextlib.ExitStack() as stack:
        assert _token_for(None, tmp_path / "run", stack) == "Ray's token: as RAY_AUTH_TOKEN_PATH give it"
    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH")
    with contextlib.ExitStack() as stack:
        assert "the cluster's" in _token_for("10.0.0.1:6379", tmp_path / "run", stack)
    assert not (tmp_path / "run").exists()
    with contextlib.ExitStack() as stack:  # a local Ray: a fresh token in the run's folder, named for the block only
        said = _token_for(None, tmp_path / "run", stack)
        assert os.environ["RAY_AUTH_TOKEN_PATH"] == str(tmp_path / "run" / "ray" / "auth_token") in said
    assert "RAY_AUTH_TOKEN_PATH" not in os.environ and "RAY_AUTH_MODE" not in os.environ


@pytest.mark.parametrize(("args", "says"), [
    (["--algorithm", "dafed-lda", "--engine", "ray"], "dafed-lda is asynchronous"),
    (["--algorithm", "csfed-lda", "--address", "auto"], "the threads engine runs every party in this process"),
    (["--algorithm", "csfed-lda", "--aggregator-host", "10.1.2.3"], "with the threads engine every party runs in"),
])
def test_what_the_ray_engine_refuses(tmp_path, capsys, args, says):
    assert main(["simulate", "--dataset", "synthetic", "--parties", "2", "-k", "3", "--iterations", "1", *args,
                 "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err


def test_without_ray_the_engine_says_which_extra(monkeypatch):
    from fedtopic.engines import get_engine
    from fedtopic.errors import ConfigError

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails as it does where Ray is not installed
    with pytest.raises(ConfigError, match=r"pip install 'fedtopic\[cluster\]'"):
        get_engine("ray").run(["p1"], lambda i, s: i, slots=1)


@pytest.mark.timeout(300)
def test_an_experiments_grid_as_ray_tasks_gives_the_local_numbers(tmp_path, capsys):
    pytest.importorskip("torch", reason="NOT RUN: the neural extra is not installed")
    args = ["experiment", "gfedntm-synthetic", "--quick", "--runs", "1", "--docs", "20", "--format", "json"]
    assert main([*args, "--out", str(tmp_path / "local")]) == 0
    assert main([*args, "--engine", "ray", "--out", str(tmp_path / "ray")]) == 0
    capsys.readouterr()
    local, spread = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("local", "ray"))
    assert spread["engine"] == "ray" and local["engine"] == "threads"
    assert spread["A"] == local["A"] and spread["B"] == local["B"]  # every training seeded by itself alone


@pytest.mark.timeout(300)
def test_the_csfed_figures_grid_as_ray_tasks_gives_the_local_points(tmp_path, capsys):
    """Fig. 6's grid (stand-alone, centralised, CSFed and DAFed at two party counts) as Ray tasks: every point as
    in this process, the parties' shares sent once each."""
    args = ["experiment", "parties", "--quick", "--parties", "3", "--topics", "4", "--iterations", "3",
            "--format", "json"]
    assert main([*args, "--out", str(tmp_path / "local")]) == 0
    assert main([*args, "--engine", "ray", "--out", str(tmp_path / "ray")]) == 0
    capsys.readouterr()
    local, spread = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("local", "ray"))
    assert spread["engine"] == "ray" and local["engine"] == "threads"
    assert all(len(p["ray_node"]) == 56 for p in spread["points"])  # each ran in a Ray worker, which says where
    assert not any("ray_node" in p for p in local["points"])
    timeless = [[{k: v for k, v in p.items() if k not in ("seconds", "ray_node")} for p in s["points"]]
                for s in (local, spread)]
    assert timeless[0] == timeless[1]
    assert [p["method"] for p in local["points"]] == ["standalone"] + ["centralized", "csfed", "dafed"] * 2
    assert local["points"][0]["parties"] == 1 and local["points"][0]["averaged_over_parties"] == 3


@pytest.mark.parametrize(("args", "says"), [
    (["experiment", "sub-lda-efficiency", "--engine", "ray"], "--engine and --address are for"),
    (["experiment", "inversion", "--engine", "ray"], "--engine and --address are for parties, topics"),
    (["experiment", "timing", "--address", "auto"], "--engine and --address are for"),
    (["experiment", "gfedntm-synthetic", "--engine", "ray", "--jobs", "2"], "--jobs is this machine's processes"),
])
def test_what_an_experiment_on_ray_refuses(tmp_path, capsys, args, says):
    assert main([*args, "--out", str(tmp_path / "x")]) == 2
    assert says in capsys.readouterr().err


def test_histories_of_parties_that_ran_elsewhere_come_back_with_their_results(tmp_path):
    """A party on another machine writes its history to that machine's disk; the launcher writes the lines its
    result carried where none is here, and leaves a history that is here alone."""
    from fedtopic.runs.history import HistoryLine, read_history, write_history_rows
    from fedtopic.simulation.sync_run import _keep_histories

    rows = [HistoryLine("p1", "csfed-lda", r, 1.0 + r, bytes_up=10 * r, contributors=["p1", "p2"],
                        extra={"ray_node": "n2"}).as_dict() for r in range(3)]
    resumed = [dict(r, party="p2") for r in rows]
    write_history_rows(tmp_path / "h" / "p2.jsonl", resumed)  # p2 ran here, was killed after round 2, resumed
    kept = (tmp_path / "h" / "p2.jsonl").read_text()
    got = _keep_histories(tmp_path / "h", ["p1", "p2"], [rows, resumed[2:]])
    back = read_history(tmp_path / "h" / "p1.jsonl")
    assert [{k: r[k] for k in rows[0]} for r in back] == rows
    assert (tmp_path / "h" / "p2.jsonl").read_text() == kept and [r["round"] for r in got[1]] == [0, 1, 2]


def _descendants(root: int) -> dict[int, bytes]:
    """pid → command line of every process below ``root``."""
    from pathlib import Path

    parents, cmds = {}, {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                cmds[int(entry.name)] = (entry / "cmdline").read_bytes()
            except (OSError, IndexError, ValueError):
                continue
    found, grew = {root}, True
    while grew:
        children = {pid for pid, parent in parents.items() if parent in found} - found
        found |= children
        grew = bool(children)
    return {pid: cmds[pid] for pid in found - {root} if pid in cmds}


@pytest.mark.timeout(400)
def test_a_ray_worker_killed_mid_run_is_restarted_and_the_run_ends_with_the_threads_model(tmp_path, capsys):
    """Issue 47: a shard's actor process killed -9 mid-run; Ray restarts it, its parties resume from their
    checkpoints, and the model is the threads engine's, bit for bit."""
    import os
    import signal
    import subprocess
    import tempfile
    import time
    from pathlib import Path

    from fedtopic.ledger.local_nodes import REPO_ROOT

    args = ["simulate", "--algorithm", "csfed-lda", "--dataset", "synthetic", "--parties", "3", "-k", "4",
            "--iterations", "12", "--protection", "mask", "--seed", "5"]
    assert main([*args, "--out", str(tmp_path / "threads")]) == 0
    capsys.readouterr()
    proc = subprocess.Popen([sys.executable, "-m", "fedtopic.cli.main", *args, "--engine", "ray",
                             "--out", str(tmp_path / "ray")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "RAY_USAGE_STATS_ENABLED": "0"})
    killed, started = None, time.time() - 1
    try:
        history = tmp_path / "ray" / "history" / "p1.jsonl"
        until = time.monotonic() + 240
        while time.monotonic() < until and proc.poll() is None:
            if history.exists() and history.read_text().count("\n") >= 3:  # rounds 0..2 done
                shards = [pid for pid, cmd in _descendants(proc.pid).items() if cmd.startswith(b"ray::_Shard")]
                if shards:
                    states = [d for d in Path(tempfile.gettempdir()).glob("fedtopic-sim-*/p1")
                              if d.stat().st_mtime >= started]
                    assert states, "no checkpoint folder of this run"
                    for path in [states[0], *states[0].rglob("*")]:  # a party's state at rest: owner-only
                        assert path.stat().st_mode & 0o077 == 0, oct(path.stat().st_mode)
                    killed = shards[0]
                    os.kill(killed, signal.SIGKILL)
                    break
            time.sleep(0.05)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert killed is not None, "no shard process was found to kill"
    assert proc.returncode == 0, err[-3000:]
    with np.load(tmp_path / "threads" / "model.npz") as a, np.load(tmp_path / "ray" / "model.npz") as b:
        np.testing.assert_array_equal(a["phi"], b["phi"])
    rows = [json.loads(line) for pid in ("p1", "p2", "p3")
            for line in (tmp_path / "ray" / "history" / f"{pid}.jsonl").read_text().splitlines()]
    assert any(r.get("resumed") for r in rows)  # some party came back from its checkpoint


@pytest.mark.timeout(300)
def test_the_ray_engine_passes_the_conformance_kit():
    """``fedtopic.testing.check_engine`` on a local Ray cluster: results in party order from actors in other
    processes, a party's failure a TrainingError naming it, tasks mapped in order."""
    from fedtopic.testing import check_engine

    assert len(check_engine("ray")) == 6
