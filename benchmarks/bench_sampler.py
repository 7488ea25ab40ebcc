"""Sampler throughput and held-out perplexity: fedtopic's numba Gibbs vs tomotopy 0.14, side by side.

    python benchmarks/bench_sampler.py [--quick] [--json out.json] [--skip-perplexity]

Same synthetic LDA corpus (≈2M tokens, V=5000; --quick: ≈200k), same K, same α=50/K and
β=0.01, one thread, after warm-up. Sweeps of ours and tomotopy's ``train(1, workers=1)``
are timed alternately so that both see the same load on a shared machine; we report the
median of the timed sweeps and the ratio ours/tomotopy. Then ours with 2 threads (speed-up
over 1 thread), and held-out document-completion perplexity after ``--iterations`` sweeps
(fedtopic.eval.perplexity.completion_perplexity, same Φ-evaluation for both models).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fedtopic.corpus.types import Corpus  # noqa: E402
from fedtopic.models.gibbs import resolve_sampler, sweep  # noqa: E402
from fedtopic.models.state import init_state  # noqa: E402

BETA = 0.01


def synthetic_corpus(n_docs: int, mean_len: int, n_words: int, n_topics: int, seed: int | np.random.Generator,
                     alpha: np.ndarray | None = None) -> Corpus:
    """LDA generative process (θ ~ Dir(α), α = 0.1 unless given as float64[K]; Φ ~ Dir(0.05)), Poisson document
    lengths; ``seed`` may be a Generator to draw on from."""
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(n_words, 0.05), size=n_topics)
    theta = rng.dirichlet(np.full(n_topics, 0.1) if alpha is None else alpha, size=n_docs)
    lengths = np.maximum(rng.poisson(mean_len, size=n_docs), 2)
    doc_of = np.repeat(np.arange(n_docs), lengths)
    z = (rng.random(len(doc_of))[:, None] > np.cumsum(theta, axis=1)[doc_of]).sum(axis=1).clip(0, n_topics - 1)
    words = np.empty(len(z), dtype=np.int32)
    for k in range(n_topics):
        idx = np.flatnonzero(z == k)
        words[idx] = rng.choice(n_words, size=len(idx), p=phi[k])
    ptr = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    return Corpus(words=words, doc_ptr=ptr, vocab=tuple(f"w{v}" for v in range(n_words)))


def used_vocabulary(train: Corpus, test: Corpus) -> tuple[Corpus, Corpus]:
    """Both corpora re-indexed to the words seen in training (tomotopy drops unseen words)."""
    used = np.flatnonzero(np.bincount(train.words, minlength=train.n_words))
    remap = np.full(train.n_words, -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    vocab = tuple(train.vocab[v] for v in used)
    keep = remap[test.words] >= 0
    test_ptr = np.concatenate([[0], np.cumsum(np.add.reduceat(keep, test.doc_ptr[:-1]))]).astype(np.int64)
    return (
        Corpus(words=remap[train.words].astype(np.int32), doc_ptr=train.doc_ptr, vocab=vocab),
        Corpus(words=remap[test.words[keep]].astype(np.int32), doc_ptr=test_ptr, vocab=vocab),
    )


def tomotopy_model(corpus: Corpus, k: int, alpha: float, seed: int):
    import tomotopy as tp

    model = tp.LDAModel(k=k, alpha=alpha, eta=BETA, seed=seed)
    model.optim_interval = 0
    vocab = np.array(corpus.vocab)
    for d in range(corpus.n_docs):
        model.add_doc(vocab[corpus.words[corpus.doc_ptr[d] : corpus.doc_ptr[d + 1]]].tolist())
    return model


def tomotopy_phi(model, vocab: tuple[str, ...]) -> np.ndarray:
    """Tomotopy's Φ [K,V] in our vocabulary order."""
    position = {w: i for i, w in enumerate(model.used_vocabs)}
    order = np.array([position[w] for w in vocab])
    return np.array([model.get_topic_word_dist(k) for k in range(model.k)], dtype=np.float64)[:, order]


def timed_sweeps(corpus: Corpus, k: int, sampler: str, threads: int, n: int, warmup: int, tomo=None):
    """(median s per sweep of ours, median s per tomotopy train(1) or None), timed alternately."""
    alpha = 50.0 / k
    state = init_state(corpus.words, corpus.doc_ptr, corpus.n_words, k, seed=1)
    ours, theirs = [], []
    for i in range(warmup + n):
        t0 = time.perf_counter()
        sweep(state, corpus.words, corpus.doc_ptr, alpha, BETA, sampler=sampler, threads=threads)
        t1 = time.perf_counter()
        if tomo is not None:
            tomo.train(1, workers=1)
        t2 = time.perf_counter()
        if i >= warmup:
            ours.append(t1 - t0)
            theirs.append(t2 - t1)
    return statistics.median(ours), (statistics.median(theirs) if tomo is not None else None)


def perplexities(train: Corpus, test: Corpus, k: int, sampler: str, iterations: int) -> dict:
    """Held-out completion perplexity of ours and tomotopy after `iterations` sweeps each."""
    try:
        from fedtopic.eval.perplexity import completion_perplexity
    except ImportError:
        return {"skipped": "fedtopic.eval.perplexity not available in this checkout"}
    from fedtopic.models.lda import GibbsLDA

    alpha = 50.0 / k
    t0 = time.perf_counter()
    ours = GibbsLDA(k, alpha=alpha, beta=BETA, sampler=sampler, seed=1).fit(train, iterations)
    t1 = time.perf_counter()
    tomo = tomotopy_model(train, k, alpha, seed=1)
    t2 = time.perf_counter()
    tomo.train(iterations, workers=1)
    t3 = time.perf_counter()
    score = lambda phi: completion_perplexity(phi, test, alpha, iterations=50, seed=0)  # noqa: E731
    p_ours, p_tomo = score(ours.phi()), score(tomotopy_phi(tomo, train.vocab))
    return {
        "ours": p_ours, "tomotopy": p_tomo, "ratio": p_ours / p_tomo,
        "ours_train_s": t1 - t0, "tomotopy_train_s": t3 - t2,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="≈200k tokens, 3 timed sweeps, 30 iterations")
    ap.add_argument("--topics", type=int, nargs="+", default=[50, 200, 1000])
    ap.add_argument("--iterations", type=int, default=None, help="sweeps before perplexity (default 200)")
    ap.add_argument("--doc-length", type=int, default=200, help="mean tokens per document (default 200)")
    ap.add_argument("--vocabulary", type=int, default=5000, help="words of the generator (default 5000)")
    ap.add_argument("--skip-perplexity", action="store_true")
    ap.add_argument("--samplers", nargs="+", default=["dense", "sparse"], choices=["dense", "sparse", "mh"],
                    help="our samplers to time (default dense sparse)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args(argv)
    n_docs, timed, iterations = (1000, 3, 30) if args.quick else (10_000, 5, 200)
    n_docs = n_docs * 200 // args.doc_length  # same number of tokens
    iterations = args.iterations or iterations
    full = synthetic_corpus(n_docs + n_docs // 10, args.doc_length, args.vocabulary, 100, seed=7)
    train, test = used_vocabulary(full.subset(np.arange(n_docs)), full.subset(np.arange(n_docs, full.n_docs)))
    print(f"corpus: {train.n_tokens:,} tokens, {train.n_docs:,} docs, V={train.n_words}; "
          f"held-out {test.n_tokens:,} tokens; {timed} timed sweeps after 2 warm-up")
    results: dict = {"tokens": int(train.n_tokens), "V": train.n_words, "rows": [], "perplexity": {}}
    for k in args.topics:
        tomo = tomotopy_model(train, k, 50.0 / k, seed=1)
        for sampler in args.samplers:
            ours_s, tomo_s = timed_sweeps(train, k, sampler, 1, timed, 2, tomo)
            two_s, _ = timed_sweeps(train, k, sampler, 2, timed, 2)
            row = {
                "K": k, "sampler": sampler, "ours_Mtok_s": train.n_tokens / ours_s / 1e6,
                "tomotopy_Mtok_s": train.n_tokens / tomo_s / 1e6, "ratio": tomo_s / ours_s,
                "ours_2threads_Mtok_s": train.n_tokens / two_s / 1e6, "speedup_2threads": ours_s / two_s,
            }
            results["rows"].append(row)
            print(f"K={k:5d} {sampler:6s} ours {row['ours_Mtok_s']:6.2f} Mtok/s | tomotopy "
                  f"{row['tomotopy_Mtok_s']:6.2f} | ours/tomotopy {row['ratio']:5.2f} | 2 threads "
                  f"{row['ours_2threads_Mtok_s']:6.2f} Mtok/s = {row['speedup_2threads']:4.2f}x", flush=True)
        if not args.skip_perplexity:
            sampler = resolve_sampler("auto", k)  # what a user gets: dense below K = 1000, mh from there
            res = perplexities(train, test, k, sampler, iterations)
            results["perplexity"][k] = {"sampler": sampler, "iterations": iterations, **res}
            if "skipped" in res:
                print(f"K={k:5d} perplexity skipped: {res['skipped']}")
            else:
                print(f"K={k:5d} perplexity after {iterations} it ({sampler}): ours {res['ours']:.1f} | tomotopy "
                      f"{res['tomotopy']:.1f} | ratio {res['ratio']:.4f} | train ours {res['ours_train_s']:.1f}s "
                      f"tomotopy {res['tomotopy_train_s']:.1f}s", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
