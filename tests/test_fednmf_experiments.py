"""`fedtopic experiment fednmf-tables` / `fednmf-heterogeneity` quick forms, and `--combine` of runs that split
the k grid (Tables III/IV average over k ∈ {50, 100, 200}; one k per machine is how the full grid is affordable)."""

from __future__ import annotations

import json

import pytest

from fedtopic.cli.main import main

pytest.importorskip("torch")

from fedtopic.experiments.fednmf_paper import combine_tables, figure4_series  # noqa: E402


def _summary(k: int, f1: float, *, dataset: str = "sms-spam", seed: int = 0) -> dict:
    settings = {"topics": [k], "clients": 10, "rounds": 30, "seed": seed}
    rows = [{"method": "NMF", "topics": k, "we_coherence": 0.3, "macro_f1": f1, "accuracy": f1, "npmi": 0.0},
            {"method": "FedAvg", "topics": k, "we_coherence": 0.2, "macro_f1": f1 / 2, "accuracy": f1 / 2,
             "npmi": -0.1}]
    return {"experiment": "fednmf-tables", "dataset": dataset, "settings": settings, "rows": rows}


def test_combine_averages_over_the_union_of_the_k_and_keeps_the_paper_beside():
    settings, result = combine_tables([_summary(200, 0.9), _summary(50, 0.6)])
    assert settings["topics"] == [50, 200] and settings["rounds"] == 30
    assert list(result["means"]) == ["NMF", "FedAvg"]
    assert result["means"]["NMF"]["macro_f1"] == pytest.approx(0.75)
    assert result["means"]["FedAvg"]["accuracy"] == pytest.approx(0.375)
    assert result["means"]["NMF"]["paper"]["macro_f1"] == 0.904  # sms-spam's Table IV
    assert len(result["rows"]) == 4


@pytest.mark.parametrize(("runs", "message"), [
    ([_summary(50, 0.5), _summary(50, 0.6)], "a topic count is in two runs"),
    ([_summary(50, 0.5), _summary(100, 0.6, dataset="rt-snippets")], "different datasets"),
    ([_summary(50, 0.5), _summary(100, 0.6, seed=1)], "settings other than the topic counts"),
    ([], "nothing to combine"),
])
def test_combine_refuses_runs_that_do_not_make_one_table(runs, message):
    with pytest.raises(ValueError, match=message):
        combine_tables(runs)


@pytest.mark.slow
def test_tables_quick_run_then_combine_with_a_second_k(tmp_path, capsys):
    one = tmp_path / "k4"
    assert main(["experiment", "fednmf-tables", "--quick", "--topics", "4", "--iterations", "2", "--out", str(one),
                 "--format", "json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert list(s["means"]) == ["LDA", "NMF", "NMF+SGD", "NMF+SGD+MI", "FedLDA", "FedAvg", "FedAvg+MI",
                                "FedAdagrad", "FedAdagrad+MI", "FedAdam", "FedAdam+MI", "FedYogi", "FedYogi+MI"]
    assert all(0 <= m["macro_f1"] <= 1 and -1 <= m["npmi"] <= 1 for m in s["means"].values())
    assert (one / "tables.md").read_text().count("\n") == 15
    # a second run at another k, as another machine would write it (its rows relabelled, scores shifted)
    other = tmp_path / "k6"
    other.mkdir()
    second = json.loads((one / "summary.json").read_text())
    second["settings"]["topics"] = [6]
    for row in second["rows"]:
        row["topics"], row["macro_f1"] = 6, row["macro_f1"] / 2
    (other / "summary.json").write_text(json.dumps(second))
    both = tmp_path / "both"
    assert main(["experiment", "fednmf-tables", "--combine", f"{one},{other}", "--out", str(both),
                 "--format", "json"]) == 0
    c = json.loads(capsys.readouterr().out)
    assert c["settings"]["topics"] == [4, 6] and len(c["rows"]) == 26
    assert c["means"]["NMF"]["macro_f1"] == pytest.approx(0.75 * s["means"]["NMF"]["macro_f1"])
    assert (both / "fig2_accuracy_vs_k.png").stat().st_size > 0
    # the same run twice is refused in one line
    assert main(["experiment", "fednmf-tables", "--combine", f"{one},{one}", "--out", str(tmp_path / "x")]) != 0
    err = capsys.readouterr().err.strip()
    assert "a topic count is in two runs" in err and len(err.splitlines()) == 1
    assert main(["experiment", "fednmf-tables", "--combine", str(tmp_path / "missing"),
                 "--out", str(tmp_path / "y")]) != 0
    assert "cannot read" in capsys.readouterr().err


def test_heterogeneity_quick_covers_the_alpha_and_client_grid(tmp_path, capsys):
    out = tmp_path / "fig4"
    assert main(["experiment", "fednmf-heterogeneity", "--quick", "--topics", "5", "--iterations", "2",
                 "--out", str(out), "--format", "json"]) == 0
    s = json.loads(capsys.readouterr().out)
    grid = {(r["alpha"], r["clients"]) for r in s["rows"]}
    assert grid == {(0.1, 10), (1.0, 10), (1.0, 1)}
    assert {r["method"] for r in s["rows"]} == {"FedAvg", "FedAvg+MI", "FedAdam", "FedAdam+MI"}
    assert (out / "fig4_f1_vs_alpha.png").stat().st_size > 0 and (out / "fig4_f1_vs_clients.png").stat().st_size > 0
    by_clients = figure4_series(s, "clients")  # the K sweep at α = 1, not at the α sweep's first α
    assert by_clients["FedAvg"][0] == [1, 10]
    assert figure4_series(s, "alpha")["FedAdam"][0] == [0.1, 1.0]


def test_combine_is_refused_for_other_experiments(tmp_path, capsys):
    assert main(["experiment", "fednmf-communication", "--combine", str(tmp_path), "--out", str(tmp_path / "o")]) != 0
    assert "--combine is for fednmf-tables only" in capsys.readouterr().err
