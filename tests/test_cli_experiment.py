"""`fedtopic experiment` runs the paper's grids and writes summary.json and plots."""

from __future__ import annotations

import json

import pytest

from fedtopic.cli.main import main


@pytest.mark.parametrize(("name", "plot"), [("heterogeneity", "heterogeneity.png"), ("parties", "parties_K10.png")])
def test_quick_experiment_writes_points_and_plot(tmp_path, capsys, name, plot):
    out = tmp_path / name
    args = ["experiment", name, "--quick", "--dataset", "synthetic", "--iterations", "4", "--out", str(out), "--format", "json"]
    assert main(args) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["experiment"] == name and summary["points"]
    assert all(p["perplexity"] > 1 for p in summary["points"])
    assert (out / plot).stat().st_size > 0
    if name == "heterogeneity":
        assert {(p["method"], p["scheme"]) for p in summary["points"]} == {(m, s) for m in ("csfed", "dafed") for s in "abc"}
    else:
        methods = {p["method"] for p in summary["points"]}
        assert methods == {"standalone", "centralized", "csfed", "dafed"}


def test_unknown_experiment_is_one_line(tmp_path, capsys):
    assert main(["experiment", "nope", "--out", str(tmp_path / "x")]) == 2
    assert "unknown experiment" in capsys.readouterr().err
