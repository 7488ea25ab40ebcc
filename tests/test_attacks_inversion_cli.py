"""`fedtopic experiment inversion --quick` writes Fig. 9's summary.json rows and plot."""

from __future__ import annotations

import json
import math

import pytest

from fedtopic.cli.main import main


def test_quick_inversion_run_writes_rows_and_plot(tmp_path):
    out = tmp_path / "inv"
    args = ["experiment", "inversion", "--quick", "--dataset", "synthetic", "--iterations", "5", "--out", str(out), "--format", "json"]
    assert main(args) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["experiment"] == "inversion"
    assert summary["paper_figures"]["iphe"] == {"increase_percent": 203.0, "eta": 1.11}
    rows = summary["by_delta"]
    assert [r["delta_percent"] for r in rows] == [0.0, 0.1, 0.5, 1.0, 5.0]
    for key in ("iphe_eta", "uphe_eta", "iphe_known_frequencies_eta", "uphe_known_frequencies_eta", "iphe_eta_eq16"):
        assert rows[0][key] == 0.0
    for r in rows[1:]:
        assert r["iphe_hidden_words"] == r["uphe_hidden_words"] > 0
        assert r["iphe_eta"] > r["uphe_eta"]
    assert len(summary["points"]) == 5 * 2 * 2
    first = summary["points"][0]
    assert summary["uniform_model"]["perplexity"] == first["vocabulary_size"] > first["real_perplexity"]
    assert summary["uniform_model"]["eta"] == pytest.approx(math.log(first["vocabulary_size"] / first["real_perplexity"]))
    assert (out / "inversion.png").stat().st_size > 10_000
