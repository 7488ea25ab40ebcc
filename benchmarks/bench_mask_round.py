"""CSFed round cost of ``mask`` vs ``none`` through the real aggregator, side by side (issue 5's 1.2x target).

    taskset -c 0 python benchmarks/bench_mask_round.py [--warmup 8] [--rounds 10] [--json out.json] [--quick]

Same machinery as Table 4 (``fedtopic.experiments.timing.csfed_round_records``): a real aggregator child process on
127.0.0.1, 20 parties × 300 docs × ~20 tokens (V = 13,155, K = 40), one Gibbs sweep per round, the parties
driven in lock-step from one thread so every phase of every party is timed alone. Round 0 (genesis, with
the key and word-ranking setup) and ``--warmup`` more rounds are not timed, then ``--rounds`` rounds are
timed for each protection. Why warm-up rounds: ``none``'s round gets cheaper for its first ~7 rounds (the
sparse N_p lose non-zero cells as the chains concentrate: critical path 100 → 42 ms), ``mask``'s is dense and
constant, so timing the first rounds flatters the ratio.

Per round: a party's total = sweep + encode + decode + submit + fetch; the round's critical path is the
largest party total (the last party's submit carries the aggregator's combine). Printed: the median over
rounds of the critical path and of the combine-carrying submit, the per-phase medians over (party, round),
bytes per party per round, and the ratio of the critical-path medians mask / none.
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
    csfed_round_records,
    timing_corpora,
)
from fedtopic.node.csfed_loop import RoundRecord  # noqa: E402

PHASES = ("sweep_seconds", "encode_seconds", "submit_seconds", "fetch_seconds", "decode_seconds")
TARGET = 1.2


def _total(r: RoundRecord) -> float:
    return sum(getattr(r, k) for k in PHASES)


def summarize(records: list[list[RoundRecord]]) -> dict[str, Any]:
    """Medians of one protection's timed rounds; ``records[p][r]`` is party p's record of timed round r."""
    rounds = range(len(records[0]))
    flat = [r for recs in records for r in recs]
    return {
        "critical_path_s": statistics.median(max(_total(recs[i]) for recs in records) for i in rounds),
        "combine_submit_s": statistics.median(max(recs[i].submit_seconds for recs in records) for i in rounds),
        "phases_median_s": {k.removesuffix("_seconds"): statistics.median(getattr(r, k) for r in flat)
                            for k in PHASES},
        "bytes_sent_per_party": statistics.mean(r.bytes_sent for r in flat),
        "bytes_received_per_party": statistics.mean(r.bytes_received for r in flat),
        "critical_path_per_round_s": [max(_total(recs[i]) for recs in records) for i in rounds],
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
            recs = [r[args.warmup:] for r in csfed_round_records(parts, s, prot, 1, Path(tmp), lambda m: None)]
            res = summarize(recs)
            out["protections"][prot] = res
            ph = res["phases_median_s"]
            print(f"{prot:6s} critical path {res['critical_path_s']:.3f} s | combine-carrying submit "
                  f"{res['combine_submit_s']:.3f} s | medians: " + " ".join(f"{k} {v:.4f}" for k, v in ph.items())
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
