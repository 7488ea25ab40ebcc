"""Ctrl-C (SIGINT to the command's process, as a terminal sends it): `train` and `simulate` stop within seconds
with exit code 130 and one line saying what they kept; `train` keeps its model of the last sweep, which
`--continue-from` continues; `simulate` stops its aggregator (its own session: the terminal's Ctrl-C reaches
only the command) and its parties do not wait out their patience."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from fedtopic.cli.main import main


def _interrupt(args: list[str], tmp_path, ready) -> tuple[int, str, float]:
    """Run `fedtopic ARGS`, SIGINT it once ``ready()`` holds (at most 60 s); (exit code, stderr, seconds to exit)."""
    proc = subprocess.Popen([sys.executable, "-m", "fedtopic.cli.main", *args], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        until = time.monotonic() + 60
        while not ready() and time.monotonic() < until and proc.poll() is None:
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()[1].decode()[-1000:]
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        return proc.returncode, err.decode(), time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_ctrl_c_in_train_keeps_the_last_sweeps_model_and_continue_from_takes_it(tmp_path, capsys):
    started = time.monotonic()
    code, err, took = _interrupt(["train", "--dataset", "synthetic", "-k", "4", "--iterations", "100000",
                                  "--eval-every", "100000", "--out", "run"], tmp_path,
                                 lambda: time.monotonic() - started > 12)
    last = err.strip().splitlines()[-1]
    assert code == 130 and took < 10, (code, took, err[-500:])
    assert last.startswith("interrupted: the model after sweep ") and "--continue-from" in last, last
    assert "Traceback" not in err
    assert (tmp_path / "run" / "model.npz").is_file() and (tmp_path / "run" / "topics.json").is_file()
    assert main(["train", "--dataset", "synthetic", "-k", "4", "--iterations", "2", "--continue-from",
                 str(tmp_path / "run"), "--out", str(tmp_path / "more"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["continued_from"] == str(tmp_path / "run")


def test_ctrl_c_in_simulate_stops_it_and_its_aggregator_within_seconds(tmp_path):
    history = tmp_path / "sim" / "history" / "p1.jsonl"
    code, err, took = _interrupt(["simulate", "--algorithm", "csfed-lda", "--dataset", "synthetic", "--parties",
                                  "3", "-k", "4", "--iterations", "100000", "--out", "sim"], tmp_path,
                                 lambda: history.is_file() and history.read_text().count("\n") >= 3)
    last = err.strip().splitlines()[-1]
    assert code == 130 and took < 8, (code, took, err[-800:])
    assert last == f"interrupted: the parties' histories so far in {os.path.join('sim', 'history')}", last
    assert "retrying" not in err and "Traceback" not in err, err[-800:]
    log = (tmp_path / "sim" / "aggregator.log").read_text()
    pid = int(next(line for line in err.splitlines() if "(pid " in line).split("(pid ")[1].split(")")[0])
    with pytest.raises(ProcessLookupError):  # the aggregator is gone, not left behind
        os.kill(pid, 0)
    assert log
