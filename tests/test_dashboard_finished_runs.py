"""What the dashboard says about finished runs is what they did (issue 46 item 4), in headless Chromium: the demo's
DAFed ran on an embedded chain (not "an in-process board", not "no chain"), its ledger lists its publications in
a scrolling box with their count, its convergence headline carries the centralised and stand-alone baselines; a
`train` run shows its held-out perplexity curve, and says it kept no per-round history instead of "yet"; the static
report says when each party was last seen, not "… ago" at the time it was written."""

from __future__ import annotations

import subprocess
import sys

from _browser import browser_page, dashboard, filled_text, shot
from _texts import theme_texts, write_jsonl

from fedtopic.cli.main import main
from fedtopic.corpus.readers import read_corpus
from fedtopic.corpus.training_data import split_corpus
from fedtopic.experiments.demo import DemoOptions, run_demo


def test_a_finished_demo_and_train_run_say_what_they_did(tmp_path, capsys):
    corpus = write_jsonl(tmp_path / "d.jsonl", theme_texts(120, seed=4))
    data = split_corpus("themes", read_corpus(corpus), n_parties=2, scheme="a", seed=0)
    demo = tmp_path / "demo"
    demo.mkdir()
    run_demo(data, DemoOptions(dataset="themes", parties=2, topics=3, iterations=4, max_delay=0.0), demo)
    train = tmp_path / "train"
    assert main(["train", "--corpus", str(corpus), "-k", "3", "--iterations", "20", "--eval-every", "5",
                 "--out", str(train)]) == 0
    report = tmp_path / "report.html"
    subprocess.run([sys.executable, "-m", "fedtopic.cli.main", "report", str(demo), "--out", str(report)],
                   check=True, capture_output=True, timeout=120)
    capsys.readouterr()
    with browser_page() as page:
        with dashboard(demo, tmp_path / "dash-demo.log") as url:
            page.goto(url)
            page.wait_for_selector("#run-state")
            page.click("#tabs button[data-panel=privacy]")
            assert "on a chain" in filled_text(page, "#protection-line")
            page.click("#tabs button[data-panel=ledger]")
            page.wait_for_selector("#ledger-table tbody tr")
            assert "demo's chain is embedded" in filled_text(page, "#audit-line")
            assert "publications" in filled_text(page, "#ledger-count")
            assert page.eval_on_selector("#ledger-box", "e => getComputedStyle(e).overflowY") == "auto"
            shot(page, tmp_path, "demo-ledger")
            page.click("#tabs button[data-panel=convergence]")
            headline = filled_text(page, "#headline")
            assert "centralised" in headline and "stand-alone" in headline, headline
            # pyLDAvis's view (issue 46 item 13): term bars of the selected topic, a bubble click selects a topic,
            # hovering a word sizes every bubble by that word's weight in it
            page.click("#tabs button[data-panel=topics]")
            page.wait_for_selector("#term-bars g.term")
            assert filled_text(page, "#term-title").startswith("topic 0")
            page.click("#topic-map circle[data-topic='2']")
            assert filled_text(page, "#term-title").startswith("topic 2")
            terms = page.eval_on_selector_all("#term-bars g.term", "gs => gs.map(g => g.getAttribute('data-word'))")
            assert 1 <= len(terms) <= 30
            page.hover(f"#term-bars g.term[data-word='{terms[0]}']")
            shares = dict(page.eval_on_selector_all(
                "#topic-map circle", "cs => cs.map(c => [c.getAttribute('data-topic'), Number(c.getAttribute('data-word-share'))])"))
            assert abs(sum(shares.values()) - 1.0) < 1e-3 and shares["2"] > 0, shares
            assert terms[0] in page.inner_text("#map-note")
            shot(page, tmp_path, "demo-topics-term-bars")
        with dashboard(train, tmp_path / "dash-train.log") as url:
            page.goto(url)
            page.wait_for_selector("#tabs button.active[data-panel=convergence]")  # opens on its curve, no click
            page.wait_for_timeout(300)
            assert page.is_visible("#panel-convergence") and not page.is_visible("#panel-parties")
            chart = page.text_content("#chart-quality")
            assert "no quality figure yet" not in chart and "held-out perplexity" in chart, chart
            shot(page, tmp_path, "train-convergence")
            page.click("#tabs button[data-panel=time]")
            assert "kept no per-round history" in page.text_content("#chart-time-totals")
        page.goto(report.as_uri())
        page.wait_for_selector("#party-table tbody tr td")
        seen = page.eval_on_selector_all("#party-table tbody tr", "rows => rows.map(r => r.cells[3].innerText)")
        assert seen and not any("ago" in s or s == "now" for s in seen), seen
        errors = [e for e in page.errors if "Failed to load resource" not in e]  # type: ignore[attr-defined]
        assert not errors, errors  # (the live pages' event streams end as their dashboards stop)
