"""FedNMF+MI paper, Tables III and IV (§IV-E): every method's WE coherence, macro-F1 and accuracy, averaged over k.

Methods (the paper's rows): LDA (centralized-lda), NMF (scikit-learn), NMF+SGD, NMF+SGD+MI (nmf-sgd),
FedLDA (our csfed-lda through the real aggregator: the paper's FedLDA is variational, ours collapsed Gibbs),
and fednmf with the four server rules, each without and with MI. Federated runs: K clients of equal size,
labels ~ Dir(α·p) (§IV-D), C = 0.2. Every method is scored the same way (``evaluate_nmf``): WE coherence of its
top-10 words and an SVM on an 80/20 split of its training documents' topic weights (θ for the LDA rows, H for
the NMF rows). The paper tuned E, B, η and λ per method from grids; we run one setting for all (the
options' defaults, λ = ``mi_weight``) and say so in the summary.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.base import TrainSpec
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.corpus.pool import merge_corpora
from fedtopic.corpus.training_data import TrainingData, load_training_data
from fedtopic.corpus.types import Corpus
from fedtopic.engines.base import placement
from fedtopic.eval.nmf_report import evaluate_nmf
from fedtopic.experiments.common import run_trainings

RULES = ("avg", "adagrad", "adam", "yogi")
RULE_NAMES = {"avg": "FedAvg", "adagrad": "FedAdagrad", "adam": "FedAdam", "yogi": "FedYogi"}
# the paper's Tables III and IV: (WE coherence, F1, accuracy) on Spam Ham and Rt polarity
PAPER = {
    "sms-spam": {"LDA": (0.404, 0.821, 0.903), "NMF": (0.442, 0.904, 0.954), "NMF+SGD": (0.421, 0.927, 0.965),
                 "NMF+SGD+MI": (0.456, 0.941, 0.968), "FedLDA": (0.341, 0.704, 0.841),
                 "FedAvg": (0.347, 0.652, 0.673), "FedAvg+MI": (0.362, 0.724, 0.730),
                 "FedAdagrad": (0.347, 0.816, 0.830), "FedAdagrad+MI": (0.352, 0.856, 0.867),
                 "FedYogi": (0.349, 0.827, 0.837), "FedYogi+MI": (0.355, 0.861, 0.870),
                 "FedAdam": (0.348, 0.833, 0.838), "FedAdam+MI": (0.372, 0.881, 0.887)},
    "rt-snippets": {"LDA": (0.404, 0.594, 0.594), "NMF": (0.466, 0.605, 0.608), "NMF+SGD": (0.453, 0.547, 0.548),
                    "NMF+SGD+MI": (0.490, 0.670, 0.700), "FedLDA": (0.406, 0.500, 0.501),
                    "FedAvg": (0.412, 0.540, 0.541), "FedAvg+MI": (0.431, 0.594, 0.597),
                    "FedAdagrad": (0.411, 0.546, 0.550), "FedAdagrad+MI": (0.432, 0.584, 0.592),
                    "FedYogi": (0.416, 0.567, 0.571), "FedYogi+MI": (0.456, 0.598, 0.605),
                    "FedAdam": (0.424, 0.572, 0.581), "FedAdam+MI": (0.453, 0.618, 0.622)},
}


@dataclass(frozen=True)
class TableSettings:
    """One grid of Tables III/IV."""

    topics: tuple[int, ...] = (50, 100, 200)
    clients: int = 10
    dirichlet_alpha: float = 1.0
    fraction: float = 0.2
    rounds: int = 30
    local_epochs: int = 10
    sgd_epochs: int = 30
    lda_iterations: int = 200
    nmf_iterations: int = 400
    mi_weight: float = 0.1
    seed: int = 0

    @classmethod
    def quick(cls) -> TableSettings:
        return cls(topics=(20,), rounds=3, local_epochs=2, sgd_epochs=5, lda_iterations=30, nmf_iterations=100)


def methods(s: TableSettings) -> list[tuple[str, str, dict[str, str], int]]:
    """(row name, algorithm, options, iterations) in the paper's order."""
    mi = {"mi_weight": str(s.mi_weight)}
    rows = [("LDA", "centralized-lda", {}, s.lda_iterations), ("NMF", "nmf", {}, s.nmf_iterations),
            ("NMF+SGD", "nmf-sgd", {}, s.sgd_epochs), ("NMF+SGD+MI", "nmf-sgd", mi, s.sgd_epochs),
            ("FedLDA", "csfed-lda", {}, s.lda_iterations)]
    fed = {"fraction": str(s.fraction), "local_epochs": str(s.local_epochs)}
    for rule in RULES:
        rows.append((RULE_NAMES[rule], "fednmf", fed | {"server_rule": rule}, s.rounds))
        rows.append((RULE_NAMES[rule] + "+MI", "fednmf", fed | {"server_rule": rule} | mi, s.rounds))
    return rows


def _score(algorithm: str, spec: TrainSpec, data: TrainingData, work: Path) -> dict[str, Any]:
    from fedtopic.algorithms.model import TopicModel
    from fedtopic.simulation.run import Harness, simulate_run

    train = merge_corpora(data.parties)
    algo = get_algorithm(algorithm)
    if algorithm == "csfed-lda":
        simulate_run(data, algorithm, spec, work, Harness())
        model = TopicModel.load(work)
        theta = model.transform(train, iterations=50, seed=spec.seed)
        return evaluate_nmf(model.phi, theta, train, seed=spec.seed)
    if algorithm == "fednmf":
        from fedtopic.simulation.sync_run import simulate_sync

        s = simulate_sync(data, "fednmf", spec, work, say=lambda _: None)
        return {k: s[k] for k in ("we_coherence", "npmi", "topic_diversity", "macro_f1", "accuracy") if k in s}
    (fitted,) = algo.fit(data.parties, spec) if algo.family == "nmf" else algo.fit([train], spec)
    return evaluate_nmf(fitted.model.phi, fitted.theta, train, seed=spec.seed)


def table_data(dataset: str, s: TableSettings) -> TrainingData:
    """The clients of the tables and figures: ``s.clients`` parties, labels ~ Dir(α·p) (§IV-D)."""
    return load_training_data(dataset=dataset, corpus=None, n_parties=s.clients, scheme="dirichlet", seed=s.seed,
                              progress=False, dirichlet_alpha=s.dirichlet_alpha)


def table_row(data: TrainingData, s: TableSettings, k: int, name: str, algorithm: str, options: dict[str, str],
              iterations: int) -> dict[str, Any]:
    """One row of the tables at ``k`` (a ``methods`` entry): its scores and ``seconds``, training and scoring, and
    where it ran when an engine spread it (``ray_node``)."""
    spec = get_algorithm(algorithm).spec(k, iterations, s.seed, options)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fednmf-table-") as tmp:
        scores = _score(algorithm, spec, data, Path(tmp))
    return {"method": name, "algorithm": algorithm, "topics": k, "options": options, "iterations": iterations,
            "seconds": time.perf_counter() - started, **scores, **placement()}


def tables(dataset: str, s: TableSettings, say: Callable[[str], None], engine: str = "threads",
           address: str | None = None) -> dict[str, Any]:
    """Every method at every k on ``dataset``; rows per run and the per-method means over k. On an engine that
    spreads tasks (Ray, at ``address``) every (k, method) is one task: the k grid needs no split across machines and
    no ``--combine``."""
    data = table_data(dataset, s)
    grid = [(f"{dataset} k={k}: {method[0]}", (data, s, k, *method)) for k in s.topics for method in methods(s)]
    rows = run_trainings(table_row, grid, say, engine, address)
    return {"dataset": dataset, "rows": rows, "means": table_means(dataset, rows)}


def table_means(dataset: str, rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each method's scores averaged over the k of its rows (the paper's averaging), with the paper's numbers
    beside them; methods in the order of their first row."""
    means: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(r["method"] for r in rows):
        mine = [r for r in rows if r["method"] == name]
        means[name] = {m: float(np.mean([r[m] for r in mine if m in r])) for m in ("we_coherence", "macro_f1",
                                                                                  "accuracy", "npmi")}
        if dataset in PAPER:
            we, f1, acc = PAPER[dataset][name]
            means[name]["paper"] = {"we_coherence": we, "macro_f1": f1, "accuracy": acc}
    return means


def combine_tables(summaries: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One Tables III/IV result from fednmf-tables runs that split the k grid (each run's ``summary.json``,
    e.g. one k per machine): (settings with the union of the k, result). ValueError unless every run is on
    the same dataset with the same settings apart from k, and no k is in two runs."""
    if not summaries:
        raise ValueError("nothing to combine")
    first = summaries[0]
    if any(s.get("experiment") != "fednmf-tables" for s in summaries):
        raise ValueError("only fednmf-tables runs can be combined")
    rest = {k: v for k, v in first["settings"].items() if k != "topics"}
    for s in summaries[1:]:
        if s["dataset"] != first["dataset"]:
            raise ValueError(f"the runs are on different datasets ({first['dataset']}, {s['dataset']})")
        if {k: v for k, v in s["settings"].items() if k != "topics"} != rest:
            raise ValueError("the runs differ in settings other than the topic counts")
    ks = [k for s in summaries for k in s["settings"]["topics"]]
    if len(set(ks)) != len(ks):
        raise ValueError(f"a topic count is in two runs ({sorted(ks)})")
    rows = [r for s in summaries for r in s["rows"]]
    settings = rest | {"topics": sorted(ks)}
    return settings, {"dataset": first["dataset"], "rows": rows, "means": table_means(first["dataset"], rows)}


FIGURE_METHODS = tuple((RULE_NAMES[r] + suffix, r, mi) for r in RULES for suffix, mi in (("", False), ("+MI", True)))


def train_in_process(data: TrainingData, spec: TrainSpec, *, every: int = 0,
                     evaluate: Callable[[int, np.ndarray, np.ndarray], None] | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """FedNMF's rounds with the clients' updates summed here in party order (what the aggregator's dense-sum
    does), for the figure sweeps; ``evaluate(round, W, H)`` after every ``every``-th round. Returns the final W
    float64[V,k] and the clients' H stacked in party order."""
    from fedtopic.algorithms.fednmf.party import FedNMFParty

    parties = [FedNMFParty(f"p{i + 1}", i, len(data.parties), c, spec) for i, c in enumerate(data.parties)]

    def h() -> np.ndarray:
        return np.vstack([p.topic_weights() for p in parties])

    for r in range(spec.iterations):
        total = np.zeros(parties[0].size + 1)
        for p in parties:
            total += p.local_update()
        for p in parties:
            p.apply(total)
        if evaluate is not None and every and ((r + 1) % every == 0 or r + 1 == spec.iterations):
            evaluate(r + 1, parties[0].w, h())
    return parties[0].w, h()


def _scores(w: np.ndarray, h: np.ndarray, train: Corpus, seed: int) -> dict[str, float]:
    """``evaluate_nmf`` of a federated W and the clients' stacked H."""
    from fedtopic.algorithms.nmf.model import nmf_topic_model

    return evaluate_nmf(nmf_topic_model(w, train.vocab, "fednmf").phi, h, train, seed=seed)


def _fed_spec(s: TableSettings, k: int, rounds: int, rule: str, mi: bool) -> TrainSpec:
    options = {"fraction": str(s.fraction), "local_epochs": str(s.local_epochs), "server_rule": rule,
               "mi_weight": str(s.mi_weight if mi else 0.0)}
    return get_algorithm("fednmf").spec(k, rounds, s.seed, options)


def communication(dataset: str, s: TableSettings, k: int, every: int, say: Callable[[str], None]) -> dict[str, Any]:
    """Fig. 3: macro-F1 (and accuracy) of the eight federated methods against communication rounds."""
    data = table_data(dataset, s)
    train = merge_corpora(data.parties)
    curves: dict[str, list[dict[str, float]]] = {}
    for name, rule, mi in FIGURE_METHODS:
        say(f"{dataset}: {name}")
        points = curves.setdefault(name, [])

        def evaluate(r: int, w: np.ndarray, h: np.ndarray, points: list = points) -> None:
            scores = _scores(w, h, train, s.seed)
            points.append({"round": r, "macro_f1": scores["macro_f1"], "accuracy": scores["accuracy"],
                           "we_coherence": scores["we_coherence"]})

        train_in_process(data, _fed_spec(s, k, s.rounds, rule, mi), every=every, evaluate=evaluate)
    return {"dataset": dataset, "topics": k, "curves": curves}


def heterogeneity(dataset: str, s: TableSettings, k: int, alphas: tuple[float, ...], clients: tuple[int, ...],
                  say: Callable[[str], None]) -> dict[str, Any]:
    """Fig. 4: FedAvg(+MI) and FedAdam(+MI) over the Dirichlet α (K = s.clients) and over K (α = s's)."""
    rows = []
    grid = [(a, s.clients) for a in alphas] + [(s.dirichlet_alpha, n) for n in clients if n != s.clients]
    for alpha, n in grid:
        data = load_training_data(dataset=dataset, corpus=None, n_parties=n, scheme="dirichlet", seed=s.seed,
                                  progress=False, dirichlet_alpha=alpha)
        train = merge_corpora(data.parties)
        for name, rule, mi in [m for m in FIGURE_METHODS if m[1] in ("avg", "adam")]:
            say(f"{dataset} α={alpha:g} K={n}: {name}")
            out = _scores(*train_in_process(data, _fed_spec(s, k, s.rounds, rule, mi)), train, s.seed)
            rows.append({"method": name, "alpha": alpha, "clients": n, "macro_f1": out["macro_f1"],
                         "accuracy": out["accuracy"], "we_coherence": out["we_coherence"]})
    return {"dataset": dataset, "topics": k, "rows": rows, "alpha_sweep_clients": s.clients,
            "clients_sweep_alpha": s.dirichlet_alpha}


def figure4_series(result: dict[str, Any], key: str) -> dict[str, tuple[list[float], list[float]]]:
    """{method: (x, macro-F1)} of one Fig. 4 panel: ``key`` "alpha" (at K = the α sweep's clients) or "clients"
    (at α = the K sweep's α), x ascending."""
    fixed, at = (("clients", result["alpha_sweep_clients"]) if key == "alpha"
                 else ("alpha", result["clients_sweep_alpha"]))
    series: dict[str, tuple[list[float], list[float]]] = {}
    for row in sorted(result["rows"], key=lambda r: r[key]):
        if row[fixed] == at:
            xs, ys = series.setdefault(row["method"], ([], []))
            xs.append(row[key])
            ys.append(row["macro_f1"])
    return series
