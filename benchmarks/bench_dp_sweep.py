"""SUB-LDA's DP sweep against our plain dense sweep, side by side, and its time against the sampling rate γ.

    python benchmarks/bench_dp_sweep.py [--quick] [--topics 50 100] [--json out.json]

Same synthetic LDA corpus as bench_sampler.py (≈2M tokens, V=5000; --quick: ≈200k), same K, α=50/K, β=0.01,
one thread, after warm-up. Per K, the plain dense sweep (``fedtopic.models.gibbs.sweep``, the anchor) and the
DP sweep at γ = 1, σ = √(14/(2·2)) (RDP budget ε(14) = 2, the paper's §5.1 setting) are timed alternately, then
DP sweeps at γ = 0.1, 0.3, 0.5, 0.7, 0.9. Reported: medians, DP/plain at γ = 1 (target ≤ 2; the noise comes
from gauss_block's SIMD blocks) and time(γ = 1)/time(γ = 0.1) (target ≥ 5; Eq. 4 predicts 10).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sampler import synthetic_corpus  # noqa: E402

from fedtopic.models.dp_lda import DPGibbsLDA  # noqa: E402
from fedtopic.models.lda import GibbsLDA  # noqa: E402

SIGMA = math.sqrt(14 / (2 * 2.0))
RATES = (0.1, 0.3, 0.5, 0.7, 0.9)


def timed(model, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        model.sweep()
        out.append(time.perf_counter() - t)
    return out


def run(k: int, corpus, repeats: int) -> dict:
    plain = GibbsLDA(k, alpha=50.0 / k, sampler="dense", seed=0)  # the paper's α, as RESULTS records
    dp = DPGibbsLDA(k, alpha=50.0 / k, rate=1.0, sigma=SIGMA, seed=0)
    plain.initialize(corpus)
    dp.initialize(corpus)
    for m in (plain, dp):
        timed(m, 2)  # compile and warm up
    t_plain, t_dp = [], []
    for _ in range(repeats):  # alternate so both see the same load
        t_plain += timed(plain, 1)
        t_dp += timed(dp, 1)
    by_rate = {1.0: statistics.median(t_dp)}
    for rate in RATES:
        sub = DPGibbsLDA(k, alpha=50.0 / k, rate=rate, sigma=SIGMA, seed=0)
        sub.initialize(corpus)
        timed(sub, 1)
        by_rate[rate] = statistics.median(timed(sub, repeats))
    plain_s = statistics.median(t_plain)
    return {"topics": k, "tokens": corpus.n_tokens, "plain_seconds": plain_s, "dp_seconds": by_rate[1.0],
            "dp_over_plain": by_rate[1.0] / plain_s, "seconds_by_rate": {str(r): s for r, s in sorted(by_rate.items())},
            "speedup_0.1": by_rate[1.0] / by_rate[0.1]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--topics", type=int, nargs="+", default=[50, 100])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    n_docs = 1000 if args.quick else 10_000
    corpus = synthetic_corpus(n_docs, 200, 5000, 100, seed=0)
    rows = [run(k, corpus, args.repeats) for k in args.topics]
    print(f"{corpus.n_tokens:,} tokens, σ = {SIGMA:.4f}, medians of {args.repeats} sweeps")
    print("K    plain s   DP(γ=1) s  DP/plain  " + "  ".join(f"γ={r:<4}" for r in RATES) + "  t(1)/t(0.1)")
    for r in rows:
        rates = "  ".join(f"{r['seconds_by_rate'][str(x)]:6.3f}" for x in RATES)
        print(f"{r['topics']:<4} {r['plain_seconds']:8.3f}  {r['dp_seconds']:9.3f}  {r['dp_over_plain']:8.2f}  "
              f"{rates}  {r['speedup_0.1']:10.2f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
