"""Learned priors (``--opt optim_interval``) vs tomotopy 0.14's ``optim_interval``: held-out perplexity, side by side.

    python benchmarks/bench_learned_priors.py [--quick] [--iterations 300] [--seeds 3] [--federated] [--json out.json]
    python benchmarks/bench_learned_priors.py --chains 6 --shapes short,medium

``--chains N``: instead, on the corpus of seed 1 of each shape, N chains of each sampler (sampler seeds 1..N,
both learning α every 10 sweeps from 0.1): the chains' spread, and the ratio of their medians.

Corpora drawn from LDA with an *asymmetric* true α (a few topics in most documents, most topics rare), in three
shapes (short, medium and long documents; K 10, 20, 50). On each: tomotopy ``LDAModel(k, alpha=0.1, eta=0.01)``
with ``optim_interval=10`` (its defaults), ours ``GibbsLDA(k, β=0.01, optim_interval=10)`` from its default start
(tomotopy's 0.1) and from the paper's α = 50/K, and all three without learning for reference; all one thread, the same sweeps. Every
model is scored by the same evaluator (document-completion perplexity, ``eval.perplexity``) on held-out documents
with its own α (tomotopy's learned ``alpha`` list for its Φ). ``--federated`` adds csfed-lda (through its
aggregator, protection none) and dafed-lda (in-memory channels) with ``optim_interval=10`` on the training
documents dealt round-robin to 3 parties, through ``simulation.run.simulate_run`` (dafed: party 1's model).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sampler import synthetic_corpus, tomotopy_phi, used_vocabulary  # noqa: E402

from fedtopic.corpus.types import Corpus  # noqa: E402
from fedtopic.eval.perplexity import completion_perplexity  # noqa: E402
from fedtopic.models.lda import GibbsLDA  # noqa: E402

BETA = 0.01
SHAPES = {  # name: (documents, mean length, V, K, Σ true α)
    "short": (8000, 25, 3000, 10, 1.0),
    "medium": (4000, 80, 5000, 20, 2.0),
    "long": (2500, 200, 5000, 50, 3.0),
}


def asymmetric_corpus(n_docs: int, mean_len: int, n_words: int, n_topics: int, alpha_sum: float,
                      seed: int) -> tuple[Corpus, np.ndarray]:
    """(corpus, true α float64[K]): θ_d ~ Dir(α) with α_k ∝ Gamma(0.5) sorted (a long tail), Φ_k ~ Dir(0.05),
    Poisson lengths."""
    rng = np.random.default_rng(seed)
    alpha = np.sort(rng.gamma(0.5, 1.0, size=n_topics))[::-1]
    alpha *= alpha_sum / alpha.sum()
    return synthetic_corpus(n_docs, mean_len, n_words, n_topics, rng, alpha), alpha


def _tomotopy(train: Corpus, k: int, iterations: int, optim_interval: int, seed: int):
    import tomotopy as tp

    model = tp.LDAModel(k=k, alpha=0.1, eta=BETA, seed=seed)
    model.optim_interval = optim_interval
    for d in range(train.n_docs):
        model.add_doc([train.vocab[w] for w in train.words[train.doc_ptr[d]:train.doc_ptr[d + 1]]])
    started = time.perf_counter()
    model.train(iterations, workers=1)
    return model, time.perf_counter() - started


def _federated(algorithm: str, train: Corpus, test: Corpus, k: int, iterations: int, seed: int):
    """(Φ, α, seconds) of ``algorithm`` with optim_interval 10 over 3 parties holding every third document."""
    from fedtopic.algorithms.registry import get_algorithm
    from fedtopic.corpus.training_data import TrainingData
    from fedtopic.runs.folder import load_topic_model
    from fedtopic.simulation.run import simulate_run

    parts = [train.subset(np.arange(i, train.n_docs, 3)) for i in range(3)]
    spec = get_algorithm(algorithm).spec(k, iterations, seed, {"optim_interval": 10, "beta": BETA})
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        simulate_run(TrainingData("asymmetric", train, test, parts), algorithm, spec, Path(tmp))
        seconds = time.perf_counter() - started
        model = load_topic_model(Path(tmp))
    return model.phi, model.alpha, seconds


def run_shape(name: str, iterations: int, seed: int, scale: float, federated: bool = False) -> list[dict]:
    n_docs, mean_len, n_words, k, alpha_sum = SHAPES[name]
    corpus, true_alpha = asymmetric_corpus(int(n_docs * scale) + 500, mean_len, n_words, k, alpha_sum, seed)
    train, test = used_vocabulary(corpus.subset(np.arange(corpus.n_docs - 500)),
                                  corpus.subset(np.arange(corpus.n_docs - 500, corpus.n_docs)))
    rows = []

    def score(system: str, phi: np.ndarray, alpha, seconds: float, optim: int) -> None:
        perplexity = completion_perplexity(phi, test, alpha, iterations=50, seed=seed)
        learned = np.asarray(alpha, dtype=np.float64)
        rows.append({"shape": name, "system": system, "optim_interval": optim, "perplexity": perplexity,
                     "alpha_sum": float(learned.sum() if learned.ndim else k * learned), "train_s": seconds,
                     "true_alpha_sum": float(true_alpha.sum()), "tokens": int(train.n_tokens), "K": k})
        print(f"  {name:6s} {system:22s} optim {optim:2d}: perplexity {perplexity:8.1f}  Σα {rows[-1]['alpha_sum']:6.2f}"
              f"  train {seconds:6.1f} s", flush=True)

    for optim in (10, 0):
        tomo, seconds = _tomotopy(train, k, iterations, optim, seed)
        score("tomotopy α₀=0.1", tomotopy_phi(tomo, train.vocab), np.array(tomo.alpha, dtype=np.float64), seconds,
              optim)
        for label, alpha in (("ours α₀=50/K", 50.0 / k), ("ours default", None)):  # None: 0.1 (since session 43 also when not learning)
            started = time.perf_counter()
            ours = GibbsLDA(k, alpha=alpha, beta=BETA, sampler="dense", seed=seed, optim_interval=optim)
            ours.fit(train, iterations)
            score(label, ours.phi(), ours.alpha, time.perf_counter() - started, optim)
    if federated:
        for algorithm in ("csfed-lda", "dafed-lda"):
            phi, alpha, seconds = _federated(algorithm, train, test, k, iterations, seed)
            score(f"{algorithm} (3 parties)", phi, alpha, seconds, 10)
    return rows


def chains(name: str, n_chains: int, iterations: int) -> list[dict]:
    """Held-out perplexity of ``n_chains`` chains of tomotopy and of ours on the shape's corpus of seed 1."""
    n_docs, mean_len, n_words, k, alpha_sum = SHAPES[name]
    corpus, _ = asymmetric_corpus(n_docs + 500, mean_len, n_words, k, alpha_sum, 1)
    train, test = used_vocabulary(corpus.subset(np.arange(corpus.n_docs - 500)),
                                  corpus.subset(np.arange(corpus.n_docs - 500, corpus.n_docs)))
    rows = []
    for chain in range(1, n_chains + 1):
        tomo, _ = _tomotopy(train, k, iterations, 10, chain)
        ours = GibbsLDA(k, beta=BETA, sampler="dense", seed=chain, optim_interval=10).fit(train, iterations)
        for system, phi, alpha in (("tomotopy", tomotopy_phi(tomo, train.vocab), np.array(tomo.alpha)),
                                   ("ours", ours.phi(), ours.alpha)):
            rows.append({"shape": name, "system": system, "chain": chain,
                         "perplexity": completion_perplexity(phi, test, alpha, iterations=50, seed=1)})
    for system in ("ours", "tomotopy"):
        values = [r["perplexity"] for r in rows if r["system"] == system]
        print(f"  {name:6s} {system:8s} {', '.join(f'{v:.1f}' for v in values)}  median {statistics.median(values):.1f}")
    medians = [statistics.median(r["perplexity"] for r in rows if r["system"] == s) for s in ("ours", "tomotopy")]
    print(f"  {name:6s} ratio of medians ours / tomotopy {medians[0] / medians[1]:.4f}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a fifth of the documents, 100 sweeps")
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--federated", action="store_true", help="also csfed-lda and dafed-lda over 3 parties")
    parser.add_argument("--chains", type=int, default=0, help="N chains of each sampler on one corpus instead")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    iterations = 100 if args.quick else args.iterations
    if args.chains:
        rows = [row for name in args.shapes.split(",") for row in chains(name, args.chains, iterations)]
        if args.json:
            args.json.write_text(json.dumps(rows, indent=2))
        return 0
    rows = []
    for seed in range(1, args.seeds + 1):
        for name in args.shapes.split(","):
            rows += run_shape(name, iterations, seed, 0.2 if args.quick else 1.0, args.federated)
    print("\nratio ours / tomotopy (optim_interval 10), median over seeds:")
    for name in args.shapes.split(","):
        for label in ("ours α₀=50/K", "ours default") + (("csfed-lda (3 parties)", "dafed-lda (3 parties)")
                                                         if args.federated else ()):
            ratios = [o["perplexity"] / t["perplexity"] for o in rows for t in rows
                      if o["shape"] == t["shape"] == name and o["system"] == label and t["system"].startswith("tomo")
                      and o["optim_interval"] == t["optim_interval"] == 10 and o["tokens"] == t["tokens"]]
            print(f"  {name:6s} {label:14s} {statistics.median(ratios):.4f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
