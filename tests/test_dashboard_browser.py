"""`fedtopic dashboard` in a real browser (headless Chromium from Debian, driven by Playwright): a live `simulate`
through the aggregator and DAFed over the embedded chain, every panel opened and screenshotted, the λ slider, a
label saved beside the run, the static report opened with the network cut off; and a consortium of separate
`node run` processes where a party killed with kill -9 shows as stopped on the other parties' pages."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import pytest
from _browser import (
    browser_page,
    browser_pages,
    child_env,
    dashboard,
    fedtopic,
    shot,
    stop,
    wait_until,
)
from _csfed_setup import make_consortium
from _node_procs import node_process

from fedtopic.runs.history import latest_per_round, read_history
from fedtopic.simulation.aggregator_proc import AggregatorProcess

PANELS = ("parties", "convergence", "time", "privacy", "topics", "ledger")


def _page_round(page) -> int | None:
    text = page.inner_text("#round-counter")
    return int(text) if text.strip().isdigit() else None


def _file_round(run) -> int | None:
    rounds = [latest_per_round(read_history(p))[-1]["round"] for p in (run / "history").glob("*.jsonl")
              if read_history(p)]
    return max(rounds) if rounds else None


def _open_every_panel(page, tmp_path, prefix: str) -> None:
    for panel in PANELS:
        page.click(f"#tabs button[data-panel={panel}]")
        page.wait_for_selector(f"#panel-{panel}.active")
        page.wait_for_timeout(300)
        assert shot(page, tmp_path, f"{prefix}-{panel}").stat().st_size > 10_000


def _simulate(tmp_path, *args: str) -> tuple[subprocess.Popen, object]:
    run = tmp_path / "run"
    proc = fedtopic(["simulate", "--out", str(run), "--format", "json", *args], tmp_path / "simulate.log")
    wait_until(lambda: (run / "history").is_dir() and any((run / "history").glob("*.jsonl")) or proc.poll() is not None,
               240, "the simulation's first history line")
    assert proc.poll() is None, (tmp_path / "simulate.log").read_text()[-2000:]
    return proc, run


def test_live_sync_simulation_every_panel_lambda_labels_and_report(tmp_path):
    sim, run = _simulate(tmp_path, "--algorithm", "csfed-lda", "--dataset", "bbc-news", "--parties", "3",
                         "--topics", "8", "--iterations", "150", "--protection", "none")
    try:
        with dashboard(run, tmp_path / "dashboard.log") as url, browser_page() as page:
            page.goto(url)
            page.wait_for_selector("#party-table tbody tr[data-party=p3]")
            first = wait_until(lambda: _page_round(page), 30, "a round on the page")
            # a round shows within 2 s of its history line, without a reload
            on_disk = wait_until(lambda: (r := _file_round(run)) is not None and r > first and r, 60,
                                 "a later round on disk")
            wait_until(lambda: (_page_round(page) or -1) >= on_disk, 2.0, f"round {on_disk} on the page", every=0.05)
            assert page.inner_text("#run-state") == "running"
            assert page.get_attribute("#party-table tr[data-party=p1] .badge", "data-status") == "alive"
            _open_every_panel(page, tmp_path, "sync")
            page.click("#tabs button[data-panel=topics]")
            page.wait_for_selector("#topic-table tbody tr[data-topic]")
            assert page.locator("#topic-map circle").count() == 8
            words_at_1 = page.inner_text("#topic-table tbody tr[data-topic='0'] td.words")
            page.fill("#lambda", "0")
            page.dispatch_event("#lambda", "input")
            assert page.inner_text("#lambda-value") == "0.00"
            words_at_0 = page.inner_text("#topic-table tbody tr[data-topic='0'] td.words")
            assert words_at_0 != words_at_1  # λ = 0 ranks by lift, not by probability
            box = page.locator("input.label-input[data-topic='3']")
            box.fill("sport")
            page.click("#topic-table tbody tr[data-topic='5'] td:first-child")  # rebuilds the table, as new topics do
            assert box.input_value() == "sport"  # typed, not yet saved: kept across the rebuild
            box.dispatch_event("change")
            page.wait_for_selector("input.label-input[data-topic='3'][data-saved='1']")
            assert json.loads((run / "topic-labels.json").read_text()) == {"3": "sport"}
            page.click("#topic-table tbody tr[data-topic='5'] td:first-child")  # redraws the map too
            wait_until(lambda: page.text_content("#topic-map text[data-topic='3']") == "sport", 5, "the label on the map")
            boxes = page.evaluate("[...document.querySelectorAll('#topic-map text')].map((t) => {"
                                  "const b = t.getBBox(); return [b.x, b.y, b.width, b.height]; })")
            overlaps = [(i, j) for i, a in enumerate(boxes) for j, b in enumerate(boxes) if i < j and
                        a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]]
            assert len(boxes) == 8 and not overlaps, (boxes, overlaps)  # names never hide each other
            shot(page, tmp_path, "sync-topics-lambda0")
            assert sim.wait(300) == 0, (tmp_path / "simulate.log").read_text()[-2000:]
            wait_until(lambda: page.inner_text("#run-state") == "finished", 10, "the page says the run finished")
            page.click("#tabs button[data-panel=convergence]")
            wait_until(lambda: "held-out perplexity" in page.inner_text("#headline"), 10, "the final perplexity")
            assert not page.errors, page.errors  # type: ignore[attr-defined]
        report = tmp_path / "report.html"
        out = subprocess.run([sys.executable, "-m", "fedtopic.cli.main", "report", str(run), "--out", str(report)],
                             capture_output=True, text=True, timeout=120, env=child_env())
        assert out.returncode == 0, out.stderr
        with browser_page() as page:
            fetched: list[str] = []

            def offline(route):  # the report must need nothing but its own file
                fetched.append(route.request.url)
                route.abort()

            page.route("http://*/**", offline)
            page.route("https://*/**", offline)
            page.goto(report.as_uri())
            page.wait_for_selector("#party-table tbody tr[data-party=p3]")
            assert page.inner_text("#run-state") == "finished" and page.inner_text("#live") == "report (static)"
            _open_every_panel(page, tmp_path, "report")
            page.click("#tabs button[data-panel=topics]")
            assert page.input_value("input.label-input[data-topic='3']") == "sport"
            assert fetched == [] and not page.errors, (fetched, page.errors)  # type: ignore[attr-defined]
    finally:
        stop(sim)


def test_live_dafed_over_the_chain_shows_staleness_and_publications(tmp_path):
    sim, run = _simulate(tmp_path, "--algorithm", "dafed-lda", "--dataset", "synthetic", "--parties", "3",
                         "--topics", "5", "--iterations", "60", "--transport", "chain", "--max-delay", "0.2",
                         "--opt", "dp.noise_multiplier=2", "--opt", "dp.epsilon_budget=80")
    try:
        with dashboard(run, tmp_path / "dashboard.log") as url, browser_page() as page:
            page.goto(url)
            first = wait_until(lambda: _page_round(page), 60, "a round on the page")
            wait_until(lambda: (_page_round(page) or -1) > first, 60, "the round counter advances")
            page.click("#tabs button[data-panel=ledger]")
            page.wait_for_selector("#ledger-table tbody tr")
            cells = page.locator("#ledger-table tbody tr").first.locator("td").all_inner_texts()
            assert cells[0].isdigit() and cells[1] in {"p1", "p2", "p3"} and cells[5].replace(",", "").isdigit()
            _open_every_panel(page, tmp_path, "dafed")
            page.click("#tabs button[data-panel=parties]")
            wait_until(lambda: ":" in page.inner_text("#party-table tbody tr[data-party=p1] td:nth-child(5)"), 20,
                       "staleness per peer")
            page.click("#tabs button[data-panel=privacy]")
            seen = page.inner_text("#seen-line")
            assert "sizes and times" in seen and "differentially private" in seen
            assert page.locator("#chart-epsilon path.series").count() == 3  # ε spent per party
            assert "budget ε = 80" in page.text_content("#chart-epsilon")
            assert not page.errors, page.errors  # type: ignore[attr-defined]
        assert sim.wait(300) == 0, (tmp_path / "simulate.log").read_text()[-2000:]
    finally:
        stop(sim)


@pytest.mark.xdist_group("agg-dashboard_browser")
def test_a_killed_node_shows_stopped_on_the_other_parties_pages(tmp_path):
    config, _ = make_consortium(tmp_path / "c", protection="none", iterations=2_000)
    logs = {p: tmp_path / f"{p}.log" for p in ("p1", "p2", "p3")}
    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as agg:
        nodes = {p: node_process(config, p, agg.url, logs[p]) for p in logs}
        try:
            wait_until(lambda: all("round 1" in logs[p].read_text() for p in logs)
                       or any(n.poll() is not None for n in nodes.values()), 180, "every node past round 1")
            assert all(n.poll() is None for n in nodes.values()), {p: logs[p].read_text()[-1500:] for p in logs}
            with dashboard(config, tmp_path / "d1.log", "--party", "p1", "--url", agg.url) as url1, \
                    dashboard(config, tmp_path / "d2.log", "--party", "p2", "--url", agg.url) as url2, \
                    browser_pages(2) as (page1, page2):
                for page, url in ((page1, url1), (page2, url2)):
                    page.goto(url)
                    page.wait_for_selector("#party-table tr[data-party=p3] .badge[data-status=alive]", timeout=30_000)
                _open_every_panel(page1, tmp_path, "sync-consortium")
                page1.click("#tabs button[data-panel=parties]")
                os.kill(nodes["p3"].pid, signal.SIGKILL)

                def status(page, party):
                    return page.get_attribute(f"#party-table tr[data-party={party}] .badge", "data-status")

                wait_until(lambda: status(page1, "p3") == status(page2, "p3") == "stopped", 10.0,
                           "p3 stopped on p1's and p2's pages within 10 s of the kill, without a reload", every=0.1)
                assert status(page1, "p1") == status(page2, "p2") == "alive"
                shot(page1, tmp_path, "consortium-p1-sees-p3-stopped")
                assert "seen as p1" in page1.inner_text("#run-line")
                assert not page1.errors and not page2.errors  # type: ignore[attr-defined]
            report = tmp_path / "p1.html"  # a party's report carries what the aggregator says of the others
            out = subprocess.run([sys.executable, "-m", "fedtopic.cli.main", "report", str(config), "--party", "p1",
                                  "--url", agg.url, "--out", str(report)], capture_output=True, text=True, timeout=120,
                                 env=child_env())
            assert out.returncode == 0, out.stderr
            data = json.loads(re.search(r"window\.FEDTOPIC_REPORT = (.*?);</script>", report.read_text(), re.S)[1])
            rounds = {p["party"]: p["round"] for p in data["state"]["parties"]}
            assert rounds["p2"] is not None and rounds["p2"] >= 1 and rounds["p3"] is not None
        finally:
            for n in nodes.values():
                stop(n)



@pytest.mark.xdist_group("node-processes")
def test_a_dafed_consortium_over_chain_up_every_panel_as_a_party_sees_it(tmp_path):
    from fedtopic.cli.main import main
    from fedtopic.consortium.config import load_consortium, save_consortium
    from fedtopic.consortium.init import init_consortium
    from fedtopic.ledger.local_nodes import start_chain_up

    init = init_consortium(3, tmp_path / "c", seed=11)
    cfg = load_consortium(init.config_path)
    algorithm = cfg.algorithm.model_copy(update={"topics": 5, "iterations": 400, "random_delay": (0.05, 0.1)})
    save_consortium(cfg.model_copy(update={"algorithm": algorithm,
                                           "data": cfg.data.model_copy(update={"dataset": "synthetic"})}),
                    init.config_path)
    chain = start_chain_up(engine="embedded")
    logs = {p: tmp_path / f"{p}.log" for p in ("p1", "p2", "p3")}
    nodes: dict[str, subprocess.Popen] = {}
    try:
        assert main(["consortium", "deploy", str(init.config_path), "--rpc", chain.url, *chain.faucet_args]) == 0
        nodes = {p: fedtopic(["node", "run", "--config", str(init.config_path), "--party", p, "--rpc", chain.url,
                              "--format", "json"], logs[p]) for p in logs}
        wait_until(lambda: all("round 3 " in logs[p].read_text() for p in logs)
                   or any(n.poll() is not None for n in nodes.values()), 240, "every node past round 3")
        assert all(n.poll() is None for n in nodes.values()), {p: logs[p].read_text()[-1500:] for p in logs}
        assert main(["ledger", "audit", "--config", str(init.config_path), "--rpc", chain.url]) == 0
        with dashboard(init.config_path, tmp_path / "d1.log", "--party", "p1", "--rpc", chain.url) as url, \
                browser_page() as page:
            page.goto(url)
            for p in ("p2", "p3"):  # the others, from their channel heads on chain
                page.wait_for_selector(f"#party-table tr[data-party={p}] .badge[data-status=alive]", timeout=30_000)
            first = wait_until(lambda: _page_round(page), 30, "a round on the page")
            wait_until(lambda: (_page_round(page) or -1) > first, 30, "the round counter advances")
            _open_every_panel(page, tmp_path, "chain-consortium")
            page.click("#tabs button[data-panel=ledger]")
            wait_until(lambda: {"p2", "p3"} <= set(page.locator("#ledger-table tbody td:nth-child(2)").all_inner_texts()),
                       20, "publications of p2 and p3 read from the chain")
            gas = page.locator("#ledger-table tbody tr").first.locator("td").nth(5).inner_text()
            assert gas.replace(",", "").isdigit()
            assert "ledger audit has verified" in page.inner_text("#audit-line")
            page.click("#tabs button[data-panel=topics]")
            page.wait_for_selector("#topic-table tbody tr[data-topic]")
            page.click("#tabs button[data-panel=parties]")
            os.kill(nodes["p3"].pid, signal.SIGKILL)
            wait_until(lambda: page.get_attribute("#party-table tr[data-party=p3] .badge", "data-status") == "stopped",
                       10.0, "p3 stopped on p1's page within 10 s of the kill", every=0.1)
            shot(page, tmp_path, "chain-consortium-p3-stopped")
            assert not page.errors, page.errors  # type: ignore[attr-defined]
    finally:
        for n in nodes.values():
            stop(n)
        chain.stop()
