"""Consortium size: setup time, round time, the aggregator's peak RSS and bytes of `fedtopic simulate` with P parties.

    python benchmarks/bench_consortium.py --parties 10 100 200 --protections none mask [--json out.json]

Each case runs ``fedtopic simulate --algorithm csfed-lda --protection X --dataset D --parties P --topics 10
--iterations 3`` as a subprocess (the parties are threads of that process, the aggregator its child process on
127.0.0.1). The wall time of rounds and the bytes come from the run's summary.json; setup = the whole command
minus the rounds (dataset split, party keys, aggregator start, sessions, vocabulary alignment, secrets); the
aggregator's peak RSS is its VmHWM, sampled from /proc every 0.2 s while it runs. A case that does not end
within ``--timeout`` seconds is stopped (its process group killed) and reported as such.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _children(pid: int) -> list[int]:
    """Every descendant of pid (from /proc's PPid fields)."""
    parent_of: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("PPid:"):
                    parent_of[int(entry.name)] = int(line.split()[1])
                    break
    out, frontier = [], {pid}
    while frontier:
        nxt = {c for c, p in parent_of.items() if p in frontier}
        out.extend(nxt)
        frontier = nxt
    return out


def _aggregator_hwm_kib(pid: int) -> int:
    """Largest VmHWM (KiB) among pid's descendants running the aggregator, 0 if none."""
    best = 0
    for child in _children(pid):
        try:
            cmd = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ")
            if b"aggregator" not in cmd:
                continue
            for line in Path(f"/proc/{child}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    best = max(best, int(line.split()[1]))
        except OSError:
            continue
    return best


def run_case(parties: int, protection: str, dataset: str, iterations: int, timeout: float) -> dict:
    out = Path(tempfile.mkdtemp(prefix=f"consortium-{parties}-{protection}-"))
    cmd = [sys.executable, "-m", "fedtopic.cli.main", "simulate", "--algorithm", "csfed-lda", "--protection",
           protection, "--dataset", dataset, "--parties", str(parties), "--topics", "10", "--iterations",
           str(iterations), "--out", str(out / "run")]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    with open(out / "output.log", "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        hwm, deadline = 0, t0 + timeout
        while proc.poll() is None and time.perf_counter() < deadline:
            hwm = max(hwm, _aggregator_hwm_kib(proc.pid))
            time.sleep(0.2)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return {"parties": parties, "protection": protection, "finished": False, "timeout_s": timeout,
                    "aggregator_peak_rss_mib": round(hwm / 1024, 1), "log": str(out / "output.log")}
    total = time.perf_counter() - t0
    row: dict = {"parties": parties, "protection": protection, "finished": proc.returncode == 0,
                 "exit": proc.returncode, "total_s": round(total, 1), "aggregator_peak_rss_mib": round(hwm / 1024, 1)}
    summary_path = out / "run" / "summary.json"
    if summary_path.exists():
        s = json.loads(summary_path.read_text())
        rounds = max(int(s.get("rounds", 1)), 1)
        row |= {"setup_s": round(total - s["wall_seconds"], 1), "rounds": rounds,
                "round_s": round(s["wall_seconds"] / rounds, 2), "bytes_sent": s.get("bytes_sent"),
                "bytes_received": s.get("bytes_received")}
    else:
        row["log"] = str(out / "output.log")
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parties", type=int, nargs="+", default=[10, 100, 200])
    ap.add_argument("--protections", nargs="+", default=["none", "mask"])
    ap.add_argument("--dataset", default="bbc-news")
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds before a case is stopped")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
    rows = []
    for parties in args.parties:
        for protection in args.protections:
            row = run_case(parties, protection, args.dataset, args.iterations, args.timeout)
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
