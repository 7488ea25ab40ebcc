"""Wall time to tomotopy's held-out perplexity: fedtopic's O(1) MH sampler (sampler="mh") vs tomotopy 0.14.

    taskset -c 1 python benchmarks/bench_mh.py --topics 1000 [--doc-length 200] [--json out.json]

A synthetic corpus with as many true topics as K (Φ ~ Dir(0.01) over V words, θ ~ Dir(3/K),
Poisson document lengths), ~1M training tokens, held-out documents for document completion.
tomotopy trains ``--sweeps`` sweeps on one thread (``train(step, workers=1)``), its held-out
perplexity recorded at checkpoints (the curve is printed: the target means something only if
it is still falling between 100 and 200 sweeps). Ours (sampler="mh", or each of ``--samplers``) trains on
one thread in turns with tomotopy, ``--eval-every`` sweeps each, so that both see the same load, and goes on
until its perplexity reaches tomotopy's final one (or ``--max-seconds``, default twice tomotopy's time); the figure is
the training wall time (evaluation and numba's compilation excluded) and the ratio tomotopy / ours. Same Φ
evaluation for both (fedtopic.eval.perplexity.completion_perplexity). Shares the corpus
generator and tomotopy setup of bench_sampler.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sampler import BETA, tomotopy_model, tomotopy_phi, used_vocabulary  # noqa: E402
from corpus_family import SHAPES, family_corpus  # noqa: E402

from fedtopic.corpus.types import Corpus  # noqa: E402
from fedtopic.eval.perplexity import completion_perplexity  # noqa: E402
from fedtopic.models.gibbs import sweep  # noqa: E402
from fedtopic.models.state import init_state  # noqa: E402


def topic_corpus(n_docs: int, mean_len: int, n_words: int, n_topics: int, seed: int, doc_topics: float = 3.0) -> Corpus:
    """LDA generative process with sparse topics and sparse documents: Φ ~ Dir(0.01) (≈ 50 words carry a topic),
    θ ~ Dir(doc_topics / K) (a document draws on a few topics, whatever K)."""
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(n_words, 0.01), size=n_topics)
    cum_phi = np.cumsum(phi, axis=1)
    lengths = np.maximum(rng.poisson(mean_len, size=n_docs), 2)
    words = np.empty(int(lengths.sum()), dtype=np.int32)
    pos = 0
    for d in range(n_docs):
        theta = rng.dirichlet(np.full(n_topics, doc_topics / n_topics))
        z = np.searchsorted(np.cumsum(theta), rng.random(lengths[d]) * theta.sum()).clip(0, n_topics - 1)
        u = rng.random(lengths[d])
        words[pos:pos + lengths[d]] = [min(int(np.searchsorted(cum_phi[k], x * cum_phi[k, -1])), n_words - 1)
                                       for k, x in zip(z, u)]
        pos += lengths[d]
    ptr = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    return Corpus(words=words, doc_ptr=ptr, vocab=tuple(f"w{v}" for v in range(n_words)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--tokens", type=int, default=1_000_000, help="training tokens (default 1M)")
    ap.add_argument("--doc-length", type=int, default=200, help="mean tokens per document (default 200)")
    ap.add_argument("--vocabulary", type=int, default=5000)
    ap.add_argument("--shape", choices=sorted(SHAPES), default=None,
                    help="a corpus of corpus_family.py's family instead (--vocabulary and --doc-length then unused)")
    ap.add_argument("--sweeps", type=int, default=200, help="tomotopy's sweeps (default 200)")
    ap.add_argument("--mh-steps", type=int, default=None, help="(word, document) MH cycles per token (default 4)")
    ap.add_argument("--samplers", nargs="+", default=["mh"], choices=["mh", "sparse", "dense"],
                    help="our samplers to race to tomotopy's perplexity (default mh)")
    ap.add_argument("--mh-exact-below", type=int, default=None,
                    help="mh: the exact-document move for documents of at most this many topics (default 256)")
    ap.add_argument("--max-seconds", type=float, default=None, help="stop ours after this much training")
    ap.add_argument("--eval-every", type=int, default=10, help="our sweeps between perplexity checks")
    ap.add_argument("--goal", type=float, default=None,
                    help="skip tomotopy: race to this perplexity (tomotopy's, from an earlier run of the same corpus)")
    ap.add_argument("--corpus-seed", type=int, default=7, help="the generated corpus's seed (default 7)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    k = args.topics
    alpha = 50.0 / k
    if args.shape is None:
        n_docs = args.tokens // args.doc_length
        full = topic_corpus(n_docs + max(n_docs // 20, 50), args.doc_length, args.vocabulary, k, seed=args.corpus_seed)
    else:
        full = family_corpus(SHAPES[args.shape], args.tokens * 21 // 20, k, seed=args.corpus_seed)
        n_docs = full.n_docs * 20 // 21
    train, test = used_vocabulary(full.subset(np.arange(n_docs)), full.subset(np.arange(n_docs, full.n_docs)))
    score = lambda phi: completion_perplexity(phi, test, alpha, iterations=20, seed=0)  # noqa: E731
    print(f"corpus: {train.n_tokens:,} tokens, {train.n_docs:,} docs, V={train.n_words}, K={k}; held-out "
          f"{test.n_tokens:,} tokens; load average {os.getloadavg()[0]:.2f}", flush=True)
    result: dict = {"K": k, "tokens": int(train.n_tokens), "doc_length": args.doc_length, "shape": args.shape,
                    "corpus_seed": args.corpus_seed,
                    "tomotopy": [], "mh_exact_below": args.mh_exact_below}

    tomo = tomotopy_model(train, k, alpha, seed=1) if args.goal is None else None
    racers = {}
    for sampler in args.samplers:
        warm = train.subset(np.arange(min(20, train.n_docs)))  # numba compiles (or loads) the kernel: not timed
        sweep(init_state(warm.words, warm.doc_ptr, train.n_words, k, seed=1), warm.words, warm.doc_ptr, alpha, BETA,
              sampler=sampler, mh_steps=args.mh_steps, mh_exact_below=args.mh_exact_below)
        racers[sampler] = {"state": init_state(train.words, train.doc_ptr, train.n_words, k, seed=1), "done": 0,
                           "trained": 0.0, "curve": []}

    def run_ours(sampler: str) -> float:
        """eval_every sweeps of one sampler, timed; its perplexity after them (not timed)."""
        racer = racers[sampler]
        t0 = time.perf_counter()
        for _ in range(args.eval_every):
            sweep(racer["state"], train.words, train.doc_ptr, alpha, BETA, sampler=sampler, mh_steps=args.mh_steps,
                  mh_exact_below=args.mh_exact_below)
        racer["trained"] += time.perf_counter() - t0
        racer["done"] += args.eval_every
        state = racer["state"]
        perplexity = score((state.n_wk + BETA).T / (state.n_k + train.n_words * BETA)[:, None])
        racer["curve"].append({"sweeps": racer["done"], "seconds": racer["trained"], "perplexity": perplexity})
        print(f"ours {sampler:6s} sweeps {racer['done']:4d} train {racer['trained']:7.1f} s perplexity "
              f"{perplexity:9.1f}", flush=True)
        return perplexity

    # tomotopy and ours take turns, eval_every sweeps each, so that both see the same load on this shared machine;
    # ours keeps its curve until tomotopy's final perplexity (the goal) is known
    done, trained = 0, 0.0
    checkpoints = {10, 20, 50, 100, 150, args.sweeps}
    while tomo is not None and done < args.sweeps:
        step = min(args.eval_every, args.sweeps - done)
        t0 = time.perf_counter()
        tomo.train(step, workers=1)
        trained += time.perf_counter() - t0
        done += step
        if done in checkpoints:
            perplexity = score(tomotopy_phi(tomo, train.vocab))
            result["tomotopy"].append({"sweeps": done, "seconds": trained, "perplexity": perplexity})
            print(f"tomotopy sweeps {done:4d} train {trained:7.1f} s perplexity {perplexity:9.1f}", flush=True)
        for sampler in racers:
            run_ours(sampler)
    goal = result["tomotopy"][-1]["perplexity"] if tomo is not None else args.goal
    cap = args.max_seconds if args.max_seconds is not None else 2.0 * trained if tomo is not None else 600.0
    result["goal_perplexity"] = goal
    result["tomotopy_seconds"] = result["tomotopy"][-1]["seconds"] if tomo is not None else None
    for sampler, racer in racers.items():
        reached = next((point["seconds"] for point in racer["curve"] if point["perplexity"] <= goal), None)
        while reached is None and racer["trained"] < cap:
            if run_ours(sampler) <= goal:
                reached = racer["trained"]
        row = {"curve": racer["curve"], "seconds_to_goal": reached}
        if reached is None:
            print(f"ours {sampler} did not reach tomotopy's {goal:.1f} within {cap:.0f} s", flush=True)
        elif tomo is None:
            print(f"{sampler}: {goal:.1f} reached in {reached:.1f} s", flush=True)
        else:
            row["ratio"] = result["tomotopy_seconds"] / reached
            print(f"{sampler}: time to tomotopy's perplexity after {args.sweeps} sweeps ({goal:.1f}): tomotopy "
                  f"{result['tomotopy_seconds']:.1f} s, ours {reached:.1f} s: {row['ratio']:.2f}x sooner", flush=True)
        result[sampler] = row
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
