"""DAFed's live table says what the synchronous bar says (issue 46 item 6): elapsed time, an ETA from the fastest
party's sweeps, and each party's quality figure, in the redrawn table and in the redirected lines."""

from __future__ import annotations

import json

from _texts import theme_texts, write_jsonl

from fedtopic.cli.main import main


def test_redirected_dafed_lines_carry_quality_elapsed_and_eta(tmp_path, capsys):
    corpus = write_jsonl(tmp_path / "d.jsonl", theme_texts(90, seed=2))
    assert main(["simulate", "--algorithm", "dafed-lda", "--corpus", str(corpus), "--parties", "3", "-k", "3",
                 "--iterations", "4", "--out", str(tmp_path / "run")]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if " sweeps), staleness " in line]
    assert lines and all("loglik_per_token " in line and " s elapsed" in line for line in lines), lines
    assert any("ETA" in line for line in lines)
    history = [json.loads(x) for x in (tmp_path / "run" / "history" / "p1.jsonl").read_text().splitlines()]
    last_p1 = [line for line in lines if line.startswith(f"p1 round {history[-1]['round']} ")][-1]
    assert f"loglik_per_token {history[-1]['quality']:.4g}" in last_p1  # the history's figure


def test_the_redrawn_table_has_a_quality_column_and_times_in_its_title():
    from fedtopic.algorithms.asynchronous import PartyLog, RoundReport
    from fedtopic.cli.live import PartyBoard

    board = PartyBoard(["p1", "p2"], 10, title="dafed-lda")
    board._live = None  # draw nothing; the table is what a terminal would show
    log = PartyLog("p1", quality=-7.25, quality_name="loglik_per_token")
    board.on_round("p1", RoundReport(5, 5, None, {"p2": 1}), log)  # type: ignore[arg-type]
    table = board._table()
    headers = [c.header for c in table.columns]
    assert "loglik_per_token" in headers and "elapsed, ETA" in str(table.title)
    assert list(table.columns[headers.index("loglik_per_token")].cells) == ["-7.25", "-"]
