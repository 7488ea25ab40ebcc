"""One count of rounds everywhere (issue 46, item 5): a csfed-lda run of 6 sweeps at 2 a round says 3 rounds in its
progress lines, its summary and its dashboard, and its history keeps the genesis as round 0 ("setup")."""

from __future__ import annotations

import json

from fedtopic.algorithms.registry import get_algorithm
from fedtopic.cli.main import main
from fedtopic.dashboard.board import Board
from fedtopic.dashboard.sources import RunFolder
from fedtopic.runs.round_count import round_label, training_round


def test_the_rule():
    assert [training_round(r, 1) for r in range(4)] == [0, 1, 2, 3]
    assert [training_round(r, 0) for r in range(3)] == [1, 2, 3]
    assert round_label(0, 1, 3) == "setup" and round_label(3, 1, 3) == "round 3/3" and round_label(0, 0, 5) == "round 1/5"
    csfed, fednmf = get_algorithm("csfed-lda"), get_algorithm("fednmf")
    spec = csfed.spec(2, 6, 0, {"steps": 2})
    assert (csfed.rounds(spec), csfed.setup_rounds(spec)) == (3, 1)
    spec = fednmf.spec(2, 6, 0, {})
    assert (fednmf.rounds(spec), fednmf.setup_rounds(spec)) == (6, 0)


def test_progress_summary_history_and_dashboard_say_the_same_rounds(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["simulate", "--algorithm", "csfed-lda", "--dataset", "synthetic", "--parties", "3", "-k", "3",
                 "--iterations", "6", "--opt", "steps=2", "--out", str(out), "--format", "json"]) == 0
    captured = capsys.readouterr()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rounds"] == 3 and summary["setup_exchanges"] == 1
    progress = [line for line in captured.err.splitlines() if ": round " in line]
    assert progress and progress[-1].split(": round ")[1].startswith("3/3"), captured.err
    rows = [json.loads(x) for x in (out / "history" / "p1.jsonl").read_text().splitlines()]
    assert sorted({r["round"] for r in rows}) == [0, 1, 2, 3]
    board = Board(RunFolder(out))
    try:
        state = board.state()
    finally:
        board.close()
    assert state["run"]["rounds"] == 3 and state["run"]["setup_rounds"] == 1
    assert {p["training_round"] for p in state["parties"]} == {3}
