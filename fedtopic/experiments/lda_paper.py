"""The CSFed/DAFed paper's experiments (§8.2: Figs. 6–8, Table 3): grids of trainings, in this process or on an
engine (Ray).

Every experiment compares methods at the same number of Gibbs sweeps on the
same partition of a dataset and reports held-out perplexity (document
completion, and the paper's Eq. 16 form):

* ``centralized`` — traditional LDA on the pooled documents;
* ``csfed`` — synchronous federated LDA (lock-step, Alg. 1; protection does not change the numbers);
* ``dafed`` — asynchronous DAFed-LDA (Alg. 3) on the deterministic virtual clock with random delays;
* ``standalone`` — every party alone (mean over parties).

The paper's data (ProgrammableWeb) is not available; 20newsgroups stands in.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from fedtopic.algorithms.base import Mode
from fedtopic.algorithms.lda.options import hyper_from_spec
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.consortium.init import cp_from_consortia, party_ids
from fedtopic.corpus.partition import partition_documents
from fedtopic.corpus.types import Corpus
from fedtopic.engines.base import placement
from fedtopic.eval.perplexity import completion_perplexity, eq16_perplexity
from fedtopic.experiments.common import (
    ExperimentSettings,
    Point,
    Progress,
    held_out_subset,
    run_trainings,
)
from fedtopic.experiments.inversion import experiment_inversion
from fedtopic.models.prior import paper_alpha
from fedtopic.simulation.lockstep import run_lockstep_simulation
from fedtopic.simulation.virtual_async import run_virtual_simulation

METHODS = ("centralized", "csfed", "dafed", "standalone")
STANDALONE_SAMPLE = 3
"""Fig. 6's stand-alone line is the mean of this many parties' own models (each holds one share)."""


def _evaluate(phis: Sequence[np.ndarray], alpha: float, test: Corpus, settings: ExperimentSettings) -> tuple[float, float]:
    comp = [completion_perplexity(phi, test, alpha, iterations=settings.fold_in_iterations, seed=settings.seed) for phi in phis]
    eq16 = [eq16_perplexity(phi, test, alpha, iterations=settings.fold_in_iterations, seed=settings.seed) for phi in phis]
    return float(np.mean(comp)), float(np.mean(eq16))


METHOD_ALGORITHMS = {"centralized": "centralized-lda", "csfed": "csfed-lda", "dafed": "dafed-lda",
                     "standalone": "local-lda"}
"""The paper's method names → the registered algorithms that run them."""


def run_method(method: str, parts: Sequence[Corpus], test: Corpus, topics: int, settings: ExperimentSettings, *,
               steps: int = 1, scheme: str = "a") -> Point:
    """Train ``method`` (through the registry) on ``parts`` and evaluate it on ``test``.

    Centralised algorithms are fitted in-process; a synchronous one runs in
    lock-step (CSFed-LDA's exact numbers without the aggregator: protection
    does not change the sum); an asynchronous one on the virtual clock.
    """
    if method not in METHOD_ALGORITHMS:
        raise ValueError(f"unknown method {method!r}")
    algorithm = get_algorithm(METHOD_ALGORITHMS[method])
    federated = Mode.centralised not in algorithm.modes
    options: dict[str, Any] = {"alpha": paper_alpha(topics)} | ({"steps": steps} if federated else {})  # paper §8.1
    spec = algorithm.spec(topics, settings.iterations, settings.seed, options)
    started = time.perf_counter()
    ids = party_ids(len(parts))
    extra: dict[str, Any] = {}
    if not federated:
        phis = [f.model.phi for f in algorithm.fit(parts, spec)]
    elif Mode.sync in algorithm.modes:
        sim = run_lockstep_simulation(parts, spec, ids, algorithm=algorithm.name)
        phis = [sim.parties[0].phi()]  # all parties hold the same N_Σ up to their own last sweep
    else:
        sim = run_virtual_simulation(parts, spec, ids, cp_from_consortia([ids]), algorithm=algorithm.name,
                                     max_delay=settings.max_delay)
        phis = [p.phi() for p in sim.parties]
        stale = [s for log in sim.logs for s in log.staleness]
        extra = {"mean_staleness": float(np.mean(stale)) if stale else 0.0, "max_staleness": int(max(stale, default=0))}
    seconds = time.perf_counter() - started
    comp, eq16 = _evaluate(phis, hyper_from_spec(spec).resolved_alpha, test, settings)
    return Point(method, topics, len(parts), scheme, steps, comp, eq16, seconds, extra)


def _split(train: Corpus, n: int, scheme: str, seed: int) -> list[Corpus]:
    return [train.subset(idx) for idx in partition_documents(train, n, scheme, seed=seed)]


Training = tuple[str, tuple[Any, ...]]
"""One training of an experiment's grid: (its progress line, ``grid_point``'s arguments as plain data)."""


def grid_point(method: str, parts: tuple[Corpus, ...], test: Corpus, topics: int, settings: ExperimentSettings,
               steps: int, scheme: str) -> Point:
    """``run_method`` with positional arguments only: one task of an engine, whose point names where it ran
    (``ray_node`` on Ray)."""
    point = run_method(method, parts, test, topics, settings, steps=steps, scheme=scheme)
    return replace(point, extra=point.extra | placement())


def experiment_parties(train: Corpus, test: Corpus, s: ExperimentSettings, progress: Progress,
                       engine: str = "threads", address: str | None = None) -> list[Point]:
    """Fig. 6: perplexity as more of the P parties take part (each holds 1/P of the training set)."""
    parts = tuple(_split(train, s.parties, "a", s.seed))
    test = held_out_subset(test, s)
    shares = {n: parts[:n] for n in (STANDALONE_SAMPLE, *s.party_counts)}  # one object a share: an engine sends it once
    grid: list[Training] = []
    for k in s.topics:
        grid.append((f"K={k}: standalone", ("standalone", shares[STANDALONE_SAMPLE], test, k, s, 1, "a")))
        grid += [(f"K={k}: {method} with {n} of {s.parties} parties", (method, shares[n], test, k, s, 1, "a"))
                 for n in s.party_counts for method in ("centralized", "csfed", "dafed")]
    points = run_trainings(grid_point, grid, progress, engine, address)
    alone = {"averaged_over_parties": min(STANDALONE_SAMPLE, len(parts))}
    return [replace(p, parties=1, extra=p.extra | alone) if p.method == "standalone" else p for p in points]


def experiment_topics(train: Corpus, test: Corpus, s: ExperimentSettings, progress: Progress,
                      engine: str = "threads", address: str | None = None) -> list[Point]:
    """Fig. 7: perplexity as K grows, all parties taking part."""
    parts = tuple(_split(train, s.parties, "a", s.seed))
    test = held_out_subset(test, s)
    grid = [(f"K={k}: {method}", (method, parts, test, k, s, 1, "a")) for k in s.topics for method in METHODS]
    return run_trainings(grid_point, grid, progress, engine, address)


def experiment_heterogeneity(train: Corpus, test: Corpus, s: ExperimentSettings, progress: Progress,
                             engine: str = "threads", address: str | None = None) -> list[Point]:
    """Table 3: schemes (a) even, (b) unbalanced, (c) by label, at the largest K of the settings."""
    test = held_out_subset(test, s)
    grid: list[Training] = []
    for scheme in ("a", "b", "c"):
        parts = tuple(_split(train, s.parties, scheme, s.seed))
        grid += [(f"scheme {scheme}: {method}", (method, parts, test, max(s.topics), s, 1, scheme))
                 for method in ("csfed", "dafed")]
    return run_trainings(grid_point, grid, progress, engine, address)


def experiment_multistep(train: Corpus, test: Corpus, s: ExperimentSettings, progress: Progress,
                         engine: str = "threads", address: str | None = None) -> list[Point]:
    """Fig. 8: perplexity as the number of local sweeps between exchanges grows."""
    parts = tuple(_split(train, s.parties, "a", s.seed))
    test = held_out_subset(test, s)
    grid = [(f"steps={steps}: {method}", (method, parts, test, max(s.topics), s, steps, "a"))
            for steps in s.steps for method in ("csfed", "dafed")]
    return run_trainings(grid_point, grid, progress, engine, address)


GRIDS: dict[str, Callable[..., list[Point]]] = {
    "parties": experiment_parties,
    "topics": experiment_topics,
    "heterogeneity": experiment_heterogeneity,
    "multistep": experiment_multistep,
}
"""The experiments that are grids of independent trainings: ``engine=`` (and ``address=``) spreads them."""


EXPERIMENTS: dict[str, Callable[..., list[Point]]] = {
    **GRIDS,
    "inversion": experiment_inversion,  # Fig. 9, §8.3: one training, then many scorings of it
}
