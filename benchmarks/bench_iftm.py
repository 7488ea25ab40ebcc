"""iFTM's private MH sampler: at ε = ∞ against tomotopy's LDAModel and our dense sampler, side by side; with
privatisation on, tokens/s against the paper's O(V / (2e^(τε))) entries per token; and the master's merge.

    python benchmarks/bench_iftm.py [--quick] [--topics 50 200 1000] [--json out.json]

Same synthetic corpus as bench_sampler.py (≈2M tokens, V = 5000; --quick ≈200k), α = 50/K, β = 0.01, one thread,
after warm-up; sweeps of the three samplers timed alternately; medians. Privatised sweeps at ε ∈ {8, 11},
τ = 0.2 on a 10 % slice (they cost ~V/18 entries per token). The merge: 3 parties × K = 1,000 random topics.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sampler import synthetic_corpus, tomotopy_model  # noqa: E402

from fedtopic.models.gibbs import sweep  # noqa: E402
from fedtopic.models.private_mh import PrivateMHLDA  # noqa: E402
from fedtopic.models.privatize import expected_entries  # noqa: E402
from fedtopic.models.state import init_state  # noqa: E402
from fedtopic.models.topic_merge import integrate_all, normalize_topics  # noqa: E402


def compare(corpus, k: int, repeats: int) -> dict:
    alpha = 50.0 / k
    mh = PrivateMHLDA(k, alpha=alpha, beta=0.01, epsilon=math.inf, seed=1)
    mh.initialize(corpus)
    dense = init_state(corpus.words, corpus.doc_ptr, corpus.n_words, k, seed=1)
    tomo = tomotopy_model(corpus, k, alpha, seed=1)
    times: dict[str, list[float]] = {"mh": [], "dense": [], "tomotopy": []}
    for i in range(repeats + 1):
        t = time.perf_counter()
        mh.sweep()
        t1 = time.perf_counter()
        sweep(dense, corpus.words, corpus.doc_ptr, alpha, 0.01, sampler="dense")
        t2 = time.perf_counter()
        tomo.train(1, workers=1)
        t3 = time.perf_counter()
        if i:
            times["mh"].append(t1 - t)
            times["dense"].append(t2 - t1)
            times["tomotopy"].append(t3 - t2)
    med = {n: statistics.median(v) for n, v in times.items()}
    return {"topics": k, "seconds": med, "mtok_per_s": {n: corpus.n_tokens / s / 1e6 for n, s in med.items()},
            "mh_over_tomotopy_speed": med["tomotopy"] / med["mh"]}


def private(corpus, eps: float, repeats: int) -> dict:
    model = PrivateMHLDA(50, beta=0.01, epsilon=eps, tau=0.2, seed=1)
    model.initialize(corpus)
    model.sweep()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        model.sweep()
        times.append(time.perf_counter() - t)
    s = statistics.median(times)
    return {"epsilon": eps, "tau": 0.2, "tokens": corpus.n_tokens, "seconds": s, "tokens_per_s": corpus.n_tokens / s,
            "entries_per_token": expected_entries(corpus.n_words, eps, 0.2),
            "paper_entries_per_token": corpus.n_words / (2 * math.exp(0.2 * eps))}


def merge(k: int, v: int) -> dict:
    rng = np.random.default_rng(0)
    parts = [(normalize_topics(rng.dirichlet(np.full(v, 0.05), size=k)), 1000.0 * (i + 1)) for i in range(3)]
    t = time.perf_counter()
    model = integrate_all(parts, xi=0.5, top=20)
    return {"parties": 3, "topics_each": k, "vocabulary": v, "seconds": time.perf_counter() - t,
            "global_topics": int(model.topics.shape[0])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--topics", type=int, nargs="+", default=[50, 200, 1000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    n_docs = 1000 if args.quick else 10_000
    corpus = synthetic_corpus(n_docs, 200, 5000, 100, seed=0)
    rows = [compare(corpus, k, args.repeats) for k in args.topics]
    slice_ = corpus.subset(np.arange(n_docs // 10))
    privs = [private(slice_, eps, args.repeats) for eps in (8.0, 11.0)]
    out = {"tokens": corpus.n_tokens, "epsilon_inf": rows, "privatised": privs, "merge": merge(1000, 5000),
           "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
