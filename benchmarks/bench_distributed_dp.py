"""Distributed against local differential privacy in a masked CSFed consortium: the utility each costs at the same
noise multiplier and ε, and the ε distributed DP spends at local DP's utility.

    python benchmarks/bench_distributed_dp.py [--dataset bbc-news] [--parties 10] [--topics 10] [--iterations 30]
        [--sigma 1.0] [--seeds 0 1] [--match-local 6] [--json out.json]

Per seed, four ``fedtopic simulate --algorithm csfed-lda --protection mask`` runs through the real aggregator, with
γ = 1 (every token in every release): without DP; local DP at σ (every party adds N(0, σ²), so the sum carries P·σ²);
distributed DP at σ (``dp.distributed=true``: Skellam shares that sum to σ² once); and distributed DP at σ·√P, whose
sum carries the local run's total noise P·σ² ("equal utility"). Reported: held-out perplexity (document completion),
its gap to the run without DP, the ratio of the distributed gap to the local one (the issue's target: ≤ 1/3), and
each run's ε per party (δ = 1e-5). ``--match-local N``: then N bisection steps (on log σ, between σ·√P and 64·σ)
for the distributed σ whose median gap equals local DP's, and the ε it spends: ε at equal utility.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def simulate(dataset: str, parties: int, topics: int, iterations: int, seed: int, options: list[str]) -> dict:
    """One ``fedtopic simulate`` run's summary."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "fedtopic.cli.main", "simulate", "--algorithm", "csfed-lda", "--dataset", dataset,
               "--parties", str(parties), "-k", str(topics), "--iterations", str(iterations), "--seed", str(seed),
               "--protection", "mask", "--opt", f"alpha={50.0 / topics!r}",  # the α RESULTS recorded at (50/K)
               *[x for o in options for x in ("--opt", o)], "--out", f"{tmp}/run",
               "--format", "json"]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
        return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="bbc-news")
    parser.add_argument("--parties", type=int, default=10)
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--sigma", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--match-local", type=int, default=0, metavar="STEPS")
    parser.add_argument("--json", type=Path)
    a = parser.parse_args()
    base = ["dp.sampling_rate=1.0"]
    runs = {"no DP": [], f"local DP σ={a.sigma:g}": ["dp.noise_multiplier=" + str(a.sigma), *base],
            f"distributed DP σ={a.sigma:g}": ["dp.distributed=true", "dp.noise_multiplier=" + str(a.sigma), *base],
            f"distributed DP σ={a.sigma * math.sqrt(a.parties):.3g} (local's total noise)":
                ["dp.distributed=true", f"dp.noise_multiplier={a.sigma * math.sqrt(a.parties)}", *base]}
    rows: dict[str, list[dict]] = {name: [] for name in runs}
    for seed in a.seeds:
        for name, options in runs.items():
            s = simulate(a.dataset, a.parties, a.topics, a.iterations, seed, options)
            eps = statistics.median(p["epsilon"] for p in s["privacy"].values()) if "privacy" in s else None
            rows[name].append({"seed": seed, "perplexity": s["perplexity"], "epsilon": eps,
                               "wall_seconds": s["wall_seconds"]})
            print(f"seed {seed} {name}: perplexity {s['perplexity']:.1f}, ε {eps if eps is None else round(eps, 2)}, "
                  f"{s['wall_seconds']:.0f} s", flush=True)
    print(f"\n{a.dataset}, {a.parties} parties under mask, K = {a.topics}, {a.iterations} iterations, γ = 1, "
          f"seeds {a.seeds} (medians)")
    print(f"{'run':<48} {'perplexity':>10} {'gap':>8} {'ε/party':>8}")
    plain = statistics.median(r["perplexity"] for r in rows["no DP"])
    gaps = {}
    for name, rs in rows.items():
        ppl = statistics.median(r["perplexity"] for r in rs)
        gaps[name] = ppl / plain - 1
        eps = [r["epsilon"] for r in rs if r["epsilon"] is not None]
        print(f"{name:<48} {ppl:>10.1f} {100 * gaps[name]:>+7.2f}% "
              f"{'-' if not eps else format(statistics.median(eps), '.2f'):>8}")
    names = list(runs)
    ratio = gaps[names[2]] / gaps[names[1]] if gaps[names[1]] else float("nan")
    print(f"distributed gap / local gap at σ = {a.sigma:g}: {ratio:.3f} (target ≤ 0.333)")
    matched = match_local(a, plain, gaps[names[1]], base) if a.match_local else None
    if a.json:
        a.json.write_text(json.dumps({"settings": vars(a) | {"json": str(a.json)}, "runs": rows,
                                      "gap_ratio": ratio, "equal_utility": matched}, indent=1))


def match_local(a: argparse.Namespace, plain: float, local_gap: float, base: list[str]) -> list[dict]:
    """Bisect log σ of distributed DP until its median gap (over the seeds) meets ``local_gap``; every step's row."""
    lo, hi, steps = math.log(a.sigma * math.sqrt(a.parties)), math.log(64 * a.sigma), []
    for _ in range(a.match_local):
        sigma = math.exp((lo + hi) / 2)
        runs = [simulate(a.dataset, a.parties, a.topics, a.iterations, seed,
                         ["dp.distributed=true", f"dp.noise_multiplier={sigma}", *base]) for seed in a.seeds]
        gap = statistics.median(r["perplexity"] for r in runs) / plain - 1
        eps = statistics.median(p["epsilon"] for r in runs for p in r["privacy"].values())
        steps.append({"sigma": sigma, "gap": gap, "epsilon": eps})
        print(f"distributed DP σ = {sigma:.3g}: gap {100 * gap:+.2f} % (local {100 * local_gap:+.2f} %), "
              f"ε {eps:.2f}", flush=True)
        lo, hi = (math.log(sigma), hi) if gap < local_gap else (lo, math.log(sigma))
    best = min(steps, key=lambda r: abs(r["gap"] - local_gap))
    print(f"equal utility: distributed DP σ ≈ {best['sigma']:.3g} (gap {100 * best['gap']:+.2f} % against local's "
          f"{100 * local_gap:+.2f} %) spends ε {best['epsilon']:.2f} per party")
    return steps


if __name__ == "__main__":
    main()
