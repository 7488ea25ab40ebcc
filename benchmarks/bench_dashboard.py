"""The dashboard's speed (issue 27): a history of 20 parties × 1,000 rounds, and a run watched against the same run
unwatched.

1. ``/api/state`` and ``/api/history`` latency over HTTP on a run folder of 20 parties × 1,000 rounds (K 20, top
   words every 10 rounds, a topic snapshot per party), written by the real history writer: the first request
   (cold: every file read) and the median of 50 after it.
2. Page usable: headless Chromium (Debian's) opens the page until the party table holds all 20 parties and the
   round counter shows 999: the first page of a dashboard that has read nothing yet, then the median of 5 fresh
   pages.
3. Watching costs training: ``fedtopic simulate`` (csfed-lda, bbc-news, 3 parties, K 20) alone and with a
   dashboard and an open page on it, 7 pairs alternating: the medians of the runs' ``wall_seconds``
   (summary.json), the median ratio within a pair, and the CPU seconds the watchers (dashboard process and
   Chromium) spent per second of the watched run, their start included; and in a steady state (15 s of a
   running simulation, once the page has loaded) the share of one core each takes, which bounds what watching
   can take from a CPU-bound run.

Run from the repository root: PYTHONPATH=. python benchmarks/bench_dashboard.py [--quick] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import numpy as np

from fedtopic.runs.folder import write_run_info
from fedtopic.runs.history import HistoryLine, HistoryWriter
from fedtopic.runs.topic_snapshot import build_snapshot, snapshot_path, write_snapshot

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def write_history(run: Path, parties: int, rounds: int, k: int = 20, v: int = 2_000) -> None:
    """A finished-looking run folder of ``parties`` histories of ``rounds`` lines each."""
    (run / "history").mkdir(parents=True)
    ids = [f"p{i + 1}" for i in range(parties)]
    write_run_info(run, {"kind": "simulate", "algorithm": "csfed-lda", "mode": "sync", "topics": k,
                         "iterations": rounds, "parties": ids, "protection": "mask", "options": {}})
    rng = np.random.default_rng(0)
    vocab = [f"word{i}" for i in range(v)]
    phi = rng.dirichlet(np.full(v, 0.05), size=k)
    top = np.argsort(-phi, axis=1)[:, :10]
    t0 = time.time() - rounds
    for pid in ids:
        w = HistoryWriter(run / "history" / f"{pid}.jsonl")
        lines = []
        for r in range(rounds):
            due = r % 10 == 0
            lines.append(HistoryLine(
                party=pid, algorithm="csfed-lda", round=r, time=t0 + r, compute_s=0.5, exchange_s=0.1, wait_s=0.2,
                bytes_up=20_000, bytes_down=30_000, contributors=ids, quality=-8.0 + r * 1e-4,
                quality_name="loglik_per_token",
                top_words=[[vocab[i] for i in row] for row in top] if due else None,
                top_weights=[[float(phi[j, i]) for i in top[j]] for j in range(k)] if due else None,
                prevalence=[1.0 / k] * k if due else None).to_json())
        with open(w.path, "w", encoding="utf-8") as fh:  # one write: the benchmark measures reading, not fsync
            fh.write("\n".join(lines) + "\n")
        write_snapshot(snapshot_path(w.path), build_snapshot(phi, None, vocab, party=pid, algorithm="csfed-lda",
                                                             round=rounds - 1))


class Dashboard:
    """``fedtopic dashboard PATH --port 0`` as a child process; stopped by its PID."""

    def __init__(self, path: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "fedtopic.cli.main", "dashboard", str(path), "--port",
                                      "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in self.proc.stdout], daemon=True).start()  # type: ignore[union-attr]
        self.url = lines.get(timeout=60).strip().split(": ", 1)[1]

    def stop(self) -> None:
        os.kill(self.proc.pid, signal.SIGTERM)
        self.proc.wait(10)


def api_latency(url: str, path: str, n: int) -> dict[str, float]:
    with httpx.Client(timeout=30) as client:
        t = time.perf_counter()
        first = client.get(url + path)
        cold = time.perf_counter() - t
        times = []
        for _ in range(n):
            t = time.perf_counter()
            client.get(url + path).raise_for_status()
            times.append(time.perf_counter() - t)
    return {"cold_ms": 1e3 * cold, "median_ms": 1e3 * statistics.median(times), "bytes": len(first.content)}


def page_usable(url: str, parties: int, last_round: int, n: int) -> list[float]:
    from playwright.sync_api import sync_playwright

    out = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for _ in range(n):
            page = browser.new_context().new_page()
            t = time.perf_counter()
            page.goto(url)
            while not (page.locator("#party-table tbody tr").count() == parties
                       and page.inner_text("#round-counter") == str(last_round)):  # the page's CSP forbids eval
                if time.perf_counter() - t > 60:
                    raise SystemExit("the page did not show the run within 60 s")
                time.sleep(0.01)
            out.append(time.perf_counter() - t)
            page.context.close()
        browser.close()
    return out


def simulate_seconds(out: Path, iterations: int) -> float:
    proc = subprocess.run([sys.executable, "-m", "fedtopic.cli.main", "simulate", "--algorithm", "csfed-lda",
                           "--dataset", "bbc-news", "--parties", "3", "--topics", "20", "--iterations", str(iterations),
                           "--out", str(out), "--format", "json"], capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-2000:])
    return float(json.loads(proc.stdout)["wall_seconds"])


def _cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (0 if it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return 0.0
    fields = stat[stat.rfind(b")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _browser_pids() -> set[int]:
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                name = (entry / "comm").read_text().strip()
            except OSError:
                continue
            if "chrom" in name or "headless" in name:
                out.add(int(entry.name))
    return out


def _start_simulation(out: Path, iterations: int) -> subprocess.Popen:
    """The benchmark's simulation in the background (its JSON summary on stdout), once its run folder exists."""
    sim = subprocess.Popen([sys.executable, "-m", "fedtopic.cli.main", "simulate", "--algorithm", "csfed-lda",
                            "--dataset", "bbc-news", "--parties", "3", "--topics", "20", "--iterations",
                            str(iterations), "--out", str(out), "--format", "json"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
    until = time.monotonic() + 600
    while not (out / "history").exists():
        if time.monotonic() > until or sim.poll() is not None:
            raise SystemExit("the simulation did not start")
        time.sleep(0.05)
    return sim


@contextmanager
def _watching(out: Path) -> Iterator[tuple[Dashboard, Callable[[], set[int]]]]:
    """A dashboard on ``out`` and one Chromium page open on it; yields the dashboard and a function giving the
    browser's processes."""
    from playwright.sync_api import sync_playwright

    before = _browser_pids()
    dash = Dashboard(out)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            browser.new_page().goto(dash.url)
            yield dash, lambda: _browser_pids() - before
            browser.close()
    finally:
        dash.stop()


def watched_seconds(out: Path, iterations: int) -> tuple[float, float]:
    """The same simulation with a dashboard on its run folder and a page open on it the whole time; its wall
    seconds and the CPU seconds the watchers (dashboard process, Chromium) spent meanwhile."""
    sim = _start_simulation(out, iterations)
    with _watching(out) as (dash, browser_pids):
        stdout, _ = sim.communicate(timeout=3600)
        watchers = _cpu_seconds(dash.proc.pid) + sum(_cpu_seconds(q) for q in browser_pids())
    return float(json.loads(stdout)["wall_seconds"]), watchers


def steady_cpu(out: Path, iterations: int, settle: float = 4.0, window: float = 15.0) -> dict[str, float]:
    """While a simulation runs with a page open on its dashboard: the CPU the dashboard process and Chromium
    spend per second over ``window`` seconds once the page has loaded (``settle``), as a share of one core."""
    sim = _start_simulation(out, iterations)
    try:
        with _watching(out) as (dash, browser_pids):
            time.sleep(settle)
            pids = browser_pids()
            d0, b0, t0 = _cpu_seconds(dash.proc.pid), sum(_cpu_seconds(q) for q in pids), time.monotonic()
            time.sleep(window)
            d1, b1, t1 = _cpu_seconds(dash.proc.pid), sum(_cpu_seconds(q) for q in pids), time.monotonic()
            still = sim.poll() is None
    finally:
        sim.kill()
        sim.wait(30)
    if not still:
        raise SystemExit("the simulation ended inside the window: give it more iterations")
    return {"dashboard_core_share": (d1 - d0) / (t1 - t0), "chromium_core_share": (b1 - b0) / (t1 - t0),
            "window_s": t1 - t0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 parties × 200 rounds, 1 pair of runs")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--no-training", action="store_true", help="only the history-reading figures")
    args = parser.parse_args()
    parties, rounds = (5, 200) if args.quick else (20, 1_000)
    pairs, iterations = (1, 60) if args.quick else (7, 200)
    results: dict[str, object] = {"parties": parties, "rounds": rounds}
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "history-run"
        write_history(run, parties, rounds)
        dash = Dashboard(run)
        try:  # the first page on a dashboard that has read nothing yet, then the API warm, then more pages
            results["page_usable_first_s"] = page_usable(dash.url, parties, rounds - 1, 1)[0]
        finally:
            dash.stop()
        dash = Dashboard(run)
        try:
            results["api_state"] = api_latency(dash.url, "api/state", 50)
            results["api_history"] = api_latency(dash.url, "api/history", 10)
            usable = page_usable(dash.url, parties, rounds - 1, 5)
            results["page_usable_s"] = {"median": statistics.median(usable), "all": usable}
        finally:
            dash.stop()
        print(json.dumps(results, indent=2), flush=True)
        if args.no_training:
            return
        results["steady_watchers"] = steady_cpu(Path(tmp) / "steady", 2_000)
        print(json.dumps(results["steady_watchers"], indent=2), flush=True)
        alone, watched, cpu = [], [], []
        for i in range(pairs):  # alternating, so drift in the machine's load hits both alike
            alone.append(simulate_seconds(Path(tmp) / f"alone{i}", iterations))
            seconds, watchers = watched_seconds(Path(tmp) / f"watched{i}", iterations)
            watched.append(seconds)
            cpu.append(watchers)
        ratios = [w / a for a, w in zip(alone, watched)]
        results["training"] = {"iterations": iterations, "alone_s": alone, "watched_s": watched,
                               "median_alone_s": statistics.median(alone),
                               "median_watched_s": statistics.median(watched),
                               "slowdown": statistics.median(watched) / statistics.median(alone) - 1.0,
                               "median_pair_ratio": statistics.median(ratios),
                               "watcher_cpu_s": cpu,
                               "watcher_cpu_share": statistics.median(c / w for c, w in zip(cpu, watched))}
    print(json.dumps(results, indent=2))
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
