"""CSFed round cost of ``mask`` vs ``none`` through the real aggregator, side by side (issue 5's 1.2x target).

    taskset -c 0 python benchmarks/bench_mask_round.py [--warmup 8] [--rounds 10] [--json out.json] [--quick]

Same machinery as Table 4 (``fedtopic.experiments.timing.csfed_round_history``): a real aggregator child process on
127.0.0.1, 20 parties × 300 docs × ~20 tokens (V = 13,155, K = 40), one Gibbs sweep per round, the parties on the
party runtime with one computing at a time (``serialize_compute``) so every phase of every party is timed alone. Round 0 (genesis, with
the key and word-ranking setup) and ``--warmup`` more rounds are not timed, then ``--rounds`` rounds are
timed for each protection. Why warm-up rounds: ``none``'s round gets cheaper for its first ~7 rounds (the
sparse N_p lose non-zero cells as the chains concentrate: critical path 100 → 42 ms), ``mask``'s is dense and
constant, so timing the first rounds flatters the ratio.

Per round: a party's total = compute (the sweep) + exchange (encode + decode) + wait (its request: sending, the
aggregator's combine, waiting for the others); the round's critical path is the largest party total. Printed:
the median over rounds of the critical path, the per-phase medians over (party, round), bytes per party per
round, and the ratio of the critical-path medians mask / none. (Before the runtime move the phases were sweep,
encode, submit, fetch and decode, and the critical path excluded the waiting of serialised parties; figures
recorded then are not comparable to the wait column.)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fedtopic.experiments.timing import (  # noqa: E402
    TimingSettings,
    csfed_round_history,
    timing_corpora,
)

PHASES = ("compute_s", "exchange_s", "wait_s")
TARGET = 1.2


def _total(r: dict[str, Any]) -> float:
    return sum(r[k] for k in PHASES)


def summarize(rows: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Medians of one protection's timed rounds; ``rows[p][r]`` is party p's history row of timed round r."""
    rounds = range(len(rows[0]))
    flat = [r for party in rows for r in party]
    return {
        "critical_path_s": statistics.median(max(_total(party[i]) for party in rows) for i in rounds),
        "phases_median_s": {k.removesuffix("_s"): statistics.median(r[k] for r in flat) for k in PHASES},
        "bytes_sent_per_party": statistics.mean(r["bytes_up"] for r in flat),
        "bytes_received_per_party": statistics.mean(r["bytes_down"] for r in flat),
        "critical_path_per_round_s": [max(_total(party[i]) for party in rows) for i in rounds],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warmup", type=int, default=8, help="untimed rounds after round 0")
    ap.add_argument("--rounds", type=int, default=10, help="timed rounds per protection (after the warm-up)")
    ap.add_argument("--protections", nargs="+", default=["none", "mask"])
    ap.add_argument("--quick", action="store_true", help="smoke scale (3 parties, V = 1,000, K = 10)")
    ap.add_argument("--json", type=Path, help="write the figures here as JSON")
    args = ap.parse_args(argv)
    if not 1 <= args.rounds <= 50 or not 0 <= args.warmup <= 50:
        ap.error("--rounds must be in [1, 50] and --warmup in [0, 50]")
    base = TimingSettings.quick() if args.quick else TimingSettings()
    s = TimingSettings(**{**vars(base), "timed_rounds": args.warmup + args.rounds})
    parts = timing_corpora(s)
    out: dict[str, Any] = {"parties": s.parties, "words": s.words, "topics": s.topics, "warmup": args.warmup,
                           "rounds": args.rounds, "protections": {}}
    with tempfile.TemporaryDirectory(prefix="bench-mask-") as tmp:
        for prot in args.protections:
            t0 = time.perf_counter()
            recs = [r[args.warmup:] for r in csfed_round_history(parts, s, prot, 1, Path(tmp), lambda m: None)]
            res = summarize(recs)
            out["protections"][prot] = res
            ph = res["phases_median_s"]
            print(f"{prot:6s} critical path {res['critical_path_s']:.3f} s | medians: " + " ".join(f"{k} {v:.4f}" for k, v in ph.items())
                  + f" | bytes/party sent {res['bytes_sent_per_party']:,.0f} received "
                  f"{res['bytes_received_per_party']:,.0f} | run {time.perf_counter() - t0:.0f} s", flush=True)
    if "none" in out["protections"] and "mask" in out["protections"]:
        ratio = out["protections"]["mask"]["critical_path_s"] / out["protections"]["none"]["critical_path_s"]
        out["ratio_mask_over_none"] = ratio
        print(f"critical path mask / none = {ratio:.2f} (target <= {TARGET})", flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
