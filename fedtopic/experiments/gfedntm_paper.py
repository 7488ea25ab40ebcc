"""gFedNTM paper §4.1 (Fig. 3): collaborative against non-collaborative ProdLDA on synthetic LDA data.

L nodes share K′ topics and hold (K − K′)/L private ones each (the corpus layer's generator). Per setting we
train ProdLDA on each node alone and on the union of the nodes' documents, and score Φ by TSS (Eq. 6, higher is
better, K is perfect) against the true topics and the validation documents' θ by DSS (Eq. 5, lower is better)
against their true θ; "baseline" is the TSS of two independent draws of Φ from the same prior. The federated
model is the centralised one: Sync-Opt equals centralised training step for step (tests/test_sync_opt.py, to
1.4e−14 after 100 steps), which is also what the paper reports checking, so the union run stands for both.
Setting A varies K′ at η = 0.01, setting B varies η at K′ = 10.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from fedtopic.corpus.pool import merge_corpora
from fedtopic.corpus.synthetic import generate_synthetic
from fedtopic.eval.ground_truth import dss, tss
from fedtopic.experiments.common import run_trainings
from fedtopic.models.nnls import counts_matrix


@dataclass(frozen=True)
class SyntheticSettings:
    """The grid of §4.1.1 (``quick`` shrinks everything for a smoke run)."""

    nodes: int = 5
    vocabulary: int = 5000
    topics: int = 50
    train_docs: int = 10_000
    validation_docs: int = 1_000
    doc_length: int = 200  # U[150, 250]
    shared_a: tuple[int, ...] = (5, 10, 15, 30, 40)
    etas_b: tuple[float, ...] = (0.01, 0.02, 0.03, 0.04, 0.08, 1.0)
    shared_b: int = 10
    epochs: int = 100
    runs: int = 10
    seed: int = 0

    @classmethod
    def quick(cls) -> SyntheticSettings:
        return cls(vocabulary=400, topics=10, train_docs=200, validation_docs=40, doc_length=60,
                   shared_a=(5, 0), etas_b=(0.01, 1.0), shared_b=5, epochs=5, runs=1)


def one_setting(s: SyntheticSettings, shared: int, eta: float, run: int) -> dict[str, float]:
    """TSS and DSS of the node-alone models (means over nodes) and of the collaborative model, one draw."""
    from fedtopic.neural.ntm_train import NTMSettings, train_centralised
    from fedtopic.neural.prodlda import topics

    seed = s.seed * 1000 + run
    data = generate_synthetic(n_parties=s.nodes, n_topics=s.topics, n_shared=shared, n_words=s.vocabulary,
                              docs_per_party=s.train_docs + s.validation_docs, doc_length=s.doc_length, eta=eta,
                              seed=seed)
    cut = s.train_docs
    trains = [p.subset(np.arange(cut)) for p in data.parties]
    vals = [p.subset(np.arange(cut, cut + s.validation_docs)) for p in data.parties]
    val_counts = counts_matrix(merge_corpora(vals))
    val_theta = np.vstack([t[cut:cut + s.validation_docs] for t in data.thetas])
    settings = NTMSettings(epochs=s.epochs)

    def score(counts) -> tuple[float, float]:
        model = train_centralised(counts, None, s.topics, settings, seed=seed)
        return tss(data.phi, topics(model.flat, model.shapes)), dss(val_theta, model.theta(val_counts))

    alone = [score(counts_matrix(t)) for t in trains]
    together = score(counts_matrix(merge_corpora(trains)))
    other = generate_synthetic(n_parties=s.nodes, n_topics=s.topics, n_shared=shared, n_words=s.vocabulary,
                               docs_per_party=1, doc_length=1, eta=eta, seed=seed + 7_919)
    return {"tss_alone": float(np.mean([a[0] for a in alone])), "dss_alone": float(np.mean([a[1] for a in alone])),
            "tss_collaborative": together[0], "dss_collaborative": together[1],
            "tss_baseline": tss(data.phi, other.phi), "tss_perfect": float(s.topics)}


def _single_thread() -> None:
    """Worker initialiser: one torch thread per process, so ``jobs`` processes share the cores evenly."""
    from fedtopic.neural.require import require_torch

    require_torch("gFedNTM").set_num_threads(1)


def _one_setting_alone(s: SyntheticSettings, shared: int, eta: float, run: int) -> dict[str, float]:
    """``one_setting`` with one torch thread (a task of an engine: as many run at once as the cluster has CPUs)."""
    _single_thread()
    return one_setting(s, shared, eta, run)


def settings_ab(s: SyntheticSettings, say: Callable[[str], None], jobs: int = 1, engine: str = "threads",
                address: str | None = None) -> dict[str, Any]:
    """Setting A (K′ at η = 0.01) and setting B (η at K′ = shared_b), each over ``runs`` draws (mean, std).

    Every (setting, run) is seeded by itself alone, so ``jobs`` worker processes, or the tasks of an engine that
    spreads them (``engine``: Ray, at ``address``), give the same numbers as one."""
    grids = [("A", [(k, 0.01) for k in s.shared_a]), ("B", [(s.shared_b, e) for e in s.etas_b])]
    tasks = [(name, shared, eta, run) for name, grid in grids for shared, eta in grid for run in range(s.runs)]
    draws: dict[tuple[str, int, float, int], dict[str, float]] = {}
    if engine != "threads" or jobs <= 1:
        grid = [(f"setting {name}: K′ = {shared}, η = {eta:g}, run {run + 1}/{s.runs} ({n + 1} of {len(tasks)})",
                 (s, shared, eta, run)) for n, (name, shared, eta, run) in enumerate(tasks)]
        draws = dict(zip(tasks, run_trainings(one_setting if engine == "threads" else _one_setting_alone, grid, say,
                                              engine, address)))
    else:
        say(f"{len(tasks)} trainings in {jobs} processes")
        context = multiprocessing.get_context("spawn")  # torch in forked children is unsafe
        with ProcessPoolExecutor(jobs, mp_context=context, initializer=_single_thread) as pool:
            futures = {pool.submit(one_setting, s, shared, eta, run): (name, shared, eta, run)
                       for name, shared, eta, run in tasks}
            for n, future in enumerate(as_completed(futures)):
                draws[futures[future]] = future.result()
                name, shared, eta, run = futures[future]
                say(f"{n + 1} of {len(tasks)} done (setting {name}: K′ = {shared}, η = {eta:g}, run {run + 1})")
    out: dict[str, Any] = {"A": [], "B": []}
    for name, grid in grids:
        for shared, eta in grid:
            runs = [draws[(name, shared, eta, run)] for run in range(s.runs)]
            row: dict[str, Any] = {"shared": shared, "eta": eta, "runs": s.runs}
            for key in runs[0]:
                values = [d[key] for d in runs]
                row[key], row[f"{key}_std"] = float(np.mean(values)), float(np.std(values))
            out[name].append(row)
    return out


@dataclass(frozen=True)
class RealSettings:
    """§4.2 (Fig. 4) with what the registry has: the paper's five Semantic Scholar disciplines are not available,
    so a text dataset's label categories, dealt whole to the nodes (partition scheme c), stand in for them.
    CombinedTM everywhere, as in the paper, with its authors' defaults, which the paper says it kept: among them
    a bag of words over the ``vocabulary`` most frequent words (contextualized-topic-models' preprocessing keeps
    2,000). Here that cut is gFedNTM's vocabulary consensus with pooled frequencies (``merge_counts``, what
    ``vocab align --with-counts --max-size`` computes through the aggregator); each node embeds its documents'
    raw text (or, for a corpus without texts, all their tokens from before the cut)."""

    dataset: str = "20newsgroups"
    nodes: int = 5
    node_topics: int = 10
    federated_topics: tuple[int, ...] = (10, 25)
    epochs: int = 100
    vocabulary: int = 2000
    top_words: int = 10
    max_docs: int | None = None  # per node, for smoke runs
    seed: int = 0

    @classmethod
    def quick(cls) -> RealSettings:
        return cls(dataset="bbc-news", node_topics=4, federated_topics=(4, 8), epochs=3, vocabulary=500, max_docs=60)


def node_documents(corpus, nodes: int, max_docs: int | None, seed: int) -> list[np.ndarray]:
    """Each node's document indices: whole label categories per node (the corpus layer's scheme c), at most
    ``max_docs`` of them drawn at random (smoke runs)."""
    from fedtopic.corpus.partition import partition_documents

    rng = np.random.default_rng(seed)
    out = []
    for docs in partition_documents(corpus, nodes, "c", seed=seed):
        if max_docs is not None and len(docs) > max_docs:
            docs = np.sort(rng.choice(docs, max_docs, replace=False))
        out.append(np.asarray(docs, dtype=np.int64))
    return out


def consensus_vocabulary(parts: list, size: int) -> list:
    """The nodes' corpora over their consensus vocabulary (``consensus_words``: the ``size`` words of highest
    pooled document frequency; contextualized-topic-models ranks by term frequency, which differs only in the
    tail of the cut)."""
    from fedtopic.corpus.vocab_counts import consensus_words

    keep = consensus_words(parts, size)
    return [p.restrict_vocabulary(keep) for p in parts]


def real_amwmd(train, s: RealSettings, say: Callable[[str], None]) -> dict[str, Any]:
    """Fig. 4: AMWMD (Eq. 7, averaged) between each node's own CombinedTM topics and every model's: the other
    nodes' and the federated models at each K. The federated model is CombinedTM on the union of the nodes'
    documents, which gFedNTM's Sync-Opt equals step for step (tests/test_sync_opt.py)."""
    from fedtopic.eval.embeddings import load_glove
    from fedtopic.eval.topics import top_words
    from fedtopic.eval.wmd import amwmd
    from fedtopic.neural.ntm_train import NTMSettings, train_centralised
    from fedtopic.neural.prodlda import topics
    from fedtopic.neural.sentence_embeddings import embed_corpus

    docs = node_documents(train, s.nodes, s.max_docs, s.seed)
    full = [train.subset(d) for d in docs]
    # every document's embedding is a function of its own text: one pass over the nodes' documents (and the
    # corpus cache) gives each node exactly what it would compute alone
    used = np.sort(np.concatenate(docs))
    say(f"embedding {len(used):,} documents (all-MiniLM-L6-v2)")
    vectors_of = embed_corpus(train if len(used) == train.n_docs else train.subset(used)).astype(np.float64)
    contexts = [vectors_of[np.searchsorted(used, d)] for d in docs]
    parts = consensus_vocabulary(full, s.vocabulary)
    vocab = parts[0].vocab
    vectors = load_glove()

    def topics_of(nodes: list[int], k: int, label: str) -> list[list[str]]:
        say(f"{label}: CombinedTM, K = {k}, {sum(parts[i].n_docs for i in nodes):,} documents, V = {len(vocab):,}")
        counts = sp.vstack([counts_matrix(parts[i]) for i in nodes]).tocsr()
        model = train_centralised(counts, np.vstack([contexts[i] for i in nodes]), k, NTMSettings(epochs=s.epochs),
                                  seed=s.seed)
        return top_words(topics(model.flat, model.shapes), vocab, s.top_words)

    models = {f"node {i + 1}": topics_of([i], s.node_topics, f"node {i + 1}") for i in range(s.nodes)}
    for k in s.federated_topics:
        models[f"federated K={k}"] = topics_of(list(range(s.nodes)), k, "federated")
    matrix = {f"node {i + 1}": {name: amwmd(models[f"node {i + 1}"], topics, vectors)
                                for name, topics in models.items()} for i in range(s.nodes)}
    return {"node_documents": [c.n_docs for c in parts], "vocabulary": len(vocab), "topics": models,
            "amwmd": matrix}
