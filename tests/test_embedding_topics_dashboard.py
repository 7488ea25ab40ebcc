"""The dashboard on a ``fed-embedding-topics`` run (issue 63), in headless Chromium: its convergence panel charts
the Lloyd rounds' centroid shift under that name (the words round, which has no figure, does not blank it), the
privacy panel charts each party's ε under distributed DP, and the topic map and term bars show the c-TF-IDF
topics."""

from __future__ import annotations

from _browser import browser_page, dashboard, filled_text, shot
from _texts import theme_texts, write_jsonl

from fedtopic.cli.main import main


def test_every_panel_of_a_dp_run_of_the_embedding_family(tmp_path, capsys):
    write_jsonl(tmp_path / "d.jsonl", theme_texts(240, seed=3))
    assert main(["simulate", "--algorithm", "fed-embedding-topics", "--corpus", str(tmp_path / "d.jsonl"),
                 "--parties", "3", "-k", "4", "--iterations", "4", "--opt", "embedding=hashed", "--protection", "mask",
                 "--opt", "dp.distributed=true", "--opt", "dp.epsilon=50", "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    with browser_page() as page, dashboard(tmp_path / "run", tmp_path / "dash.log") as url:
        page.goto(url)
        page.wait_for_selector("#run-state")
        page.click("#tabs button[data-panel=convergence]")
        page.wait_for_function("() => document.querySelector('#chart-quality').textContent.includes('centroid')")
        chart = page.text_content("#chart-quality")
        assert "centroid shift" in chart and "no quality figure" not in chart, chart
        shot(page, tmp_path, "embedding-convergence")
        page.click("#tabs button[data-panel=privacy]")
        assert "mask" in filled_text(page, "#protection-line")
        page.wait_for_selector("#chart-epsilon path")
        assert "ε" in page.text_content("#chart-epsilon")
        shot(page, tmp_path, "embedding-privacy")
        page.click("#tabs button[data-panel=topics]")
        page.wait_for_selector("#term-bars g.term")
        assert len(page.query_selector_all("#topic-map circle")) == 4
        assert filled_text(page, "#term-title").startswith("topic 0")
        shot(page, tmp_path, "embedding-topics")
        errors = [e for e in page.errors if "Failed to load resource" not in e]  # type: ignore[attr-defined]
        assert not errors, errors
