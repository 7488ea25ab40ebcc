"""The iFTM paper's experiments (Jiang et al. §4), for LDA or SentenceLDA (``IFTMSettings.model``): Fig. 5 (data
scarcity), Fig. 6 (ε × τ), Fig. 7 (likelihood against communication rounds), Table 3 (document classification
with topic features).

Each function returns plain data for the CLI to write. The federation runs in process (the master is the same
pure ``integrate_all`` the aggregator's ``topic-merge`` combiner calls, so the numbers are those of a run through
the aggregator). The paper's corpora are private: 20newsgroups and bbc-news stand in, split non-IID by label into
parties sized in the paper's ratios (29,723 : 59,445 : 89,169, and 28,000 : 57,000 : 80,000 : 13,337 for four).

Held-out figure: the document-completion log-likelihood per scored token, log p = −log(perplexity), of the
global model M* (α = 50/K*) and of each party's model trained alone with the same settings and budget.
Settings the paper does not give (its LightLDA runs "tuned" K per party): K per party, the local iterations
per round, and ξ = 0.5, L = 20 for the merge; all written to summary.json.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from fedtopic.algorithms.iftm.party import IFTMParty
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.corpus.types import Corpus
from fedtopic.eval.perplexity import completion_perplexity
from fedtopic.models.prior import paper_alpha
from fedtopic.models.topic_merge import GlobalModel, integrate_all

Status = Callable[[str], None]
RATIOS_3 = (29_723, 59_445, 89_169)
RATIOS_4 = (28_000, 57_000, 80_000, 13_337)
CLASSIFIER_DOCS, CLASSIFIER_TEST_DOCS = 5_000, 2_000  # Table 3's fixed classifier data (the paper's sizes)


@dataclass(frozen=True)
class IFTMSettings:
    """One experiment grid (defaults: a laptop-sized stand-in for the paper's; ``quick()``: a smoke run)."""

    topics: int = 50
    rounds: int = 5
    local_iterations: int = 20
    epsilon: float = 11.0
    tau: float = 0.2
    xi: float = 0.5
    top_words: int = 20
    epsilons: tuple[float, ...] = (8.0, 9.0, 10.0, 11.0)
    taus: tuple[float, ...] = (0.1, 0.2, 0.3)
    eval_docs: int = 500
    debias: bool = False  # not in the paper: subtract the privatisation's noise floor from what models report
    model: str = "lda"  # or "sentencelda": the algorithm is iftm-<model>
    seed: int = 0
    extra: dict = field(default_factory=dict)

    @classmethod
    def quick(cls) -> IFTMSettings:
        return cls(topics=8, rounds=2, local_iterations=4, epsilons=(8.0, 11.0), taus=(0.2,), eval_docs=100)


def shrink(train: Corpus, test: Corpus, *, docs: int, words: int, seed: int) -> tuple[Corpus, Corpus]:
    """``--quick``'s corpora: ``docs`` training documents (and a quarter as many test documents) drawn at random,
    over the ``words`` most frequent training words. Privatisation costs O(V) per token (§3.1.3), so a smoke run
    needs a small vocabulary as much as few documents."""
    rng = np.random.default_rng(seed)
    train = train.subset(np.sort(rng.choice(train.n_docs, min(docs, train.n_docs), replace=False)))
    test = test.subset(np.sort(rng.choice(test.n_docs, min(docs // 4, test.n_docs), replace=False)))
    keep = np.argsort(-train.word_counts(), kind="stable")[:words]
    return train.restrict_vocabulary(keep), test.restrict_vocabulary(keep)


def cut_vocabulary(train: Corpus, test: Corpus, words: int) -> tuple[Corpus, Corpus]:
    """Both corpora over the ``words`` training words of highest document frequency (gFedNTM's consensus rule,
    here over the whole training corpus before it is split): privatisation keeps ~V/(2e^(τε)) entries per token
    (§3.1.3), so the cut divides the cost of a sweep and the noise mass per token alike."""
    from fedtopic.corpus.vocab_counts import consensus_words

    keep = consensus_words([train], words)
    return train.restrict_vocabulary(keep), test.restrict_vocabulary(keep)


def ratio_label_split(corpus: Corpus, ratios: Sequence[int], seed: int) -> list[Corpus]:
    """Non-IID parties: documents ordered by label (shuffled within a label), cut into blocks sized by ``ratios``."""
    rng = np.random.default_rng(seed)
    labels = corpus.labels if corpus.labels is not None else np.zeros(corpus.n_docs, dtype=np.int32)
    order = np.lexsort((rng.random(corpus.n_docs), labels))
    cuts = np.round(np.cumsum(ratios) / np.sum(ratios) * corpus.n_docs).astype(int)
    bounds = np.concatenate([[0], cuts])
    return [corpus.subset(np.sort(order[bounds[i]:bounds[i + 1]])) for i in range(len(ratios))]


def _spec(s: IFTMSettings, *, epsilon: float | None = None, tau: float | None = None, iterations: int | None = None):
    options = {"epsilon": str(s.epsilon if epsilon is None else epsilon), "tau": str(s.tau if tau is None else tau),
               "xi": str(s.xi), "top_words": str(s.top_words), "local_iterations": str(s.local_iterations),
               "debias": str(s.debias)}
    return get_algorithm(algorithm_of(s)).spec(s.topics, iterations or s.rounds * s.local_iterations, s.seed, options)


def algorithm_of(s: IFTMSettings) -> str:
    """``iftm-lda`` or ``iftm-sentencelda``."""
    return f"iftm-{s.model}"


def loglik(phi: np.ndarray, test: Corpus, seed: int) -> float:
    """Held-out completion log-likelihood per scored token under Φ (α = 50/K)."""
    return -math.log(completion_perplexity(phi, test, 50.0 / phi.shape[0], iterations=30, seed=seed))


def federate(parts: Sequence[Corpus], spec, on_round: Callable[[int, GlobalModel], None] | None = None, *,
             algorithm: str = "iftm-lda") -> tuple[GlobalModel, list[IFTMParty]]:
    """Alg. 5 in process: every party trains ``local_iterations`` sweeps, the master merges, parties adopt."""
    algo = get_algorithm(algorithm)
    parties = [algo.party(f"p{i + 1}", i, c, spec) for i, c in enumerate(parts)]
    rounds = math.ceil(spec.iterations / int(spec.options["local_iterations"]))
    model = None
    for r in range(rounds):
        updates = [(p.local_round(spec.iterations), p.amount) for p in parties]
        model = integrate_all(updates, xi=float(spec.options["xi"]), top=int(spec.options["top_words"]))
        for p in parties:
            p.adopt(model, last=r == rounds - 1)
        if on_round is not None:
            on_round(r + 1, model)
    assert model is not None
    return model, parties


def alone(parts: Sequence[Corpus], spec, *, algorithm: str = "iftm-lda") -> list[IFTMParty]:
    """Each party with the same settings and budget and no master (Fig. 5's baselines)."""
    out = []
    for i, c in enumerate(parts):
        p = get_algorithm(algorithm).party(f"p{i + 1}", i, c, spec)
        while p.sweeps < spec.iterations:
            p.local_round(spec.iterations)
        out.append(p)
    return out


def scarcity(train: Corpus, test: Corpus, s: IFTMSettings, status: Status) -> dict:
    """Fig. 5: held-out log-likelihood of iFTM's global model against each party trained alone (3 parties,
    sizes in the paper's ratio, non-IID by label)."""
    parts, spec, ev = ratio_label_split(train, RATIOS_3, s.seed), _spec(s), test.sample_documents(s.eval_docs, s.seed)
    status("iFTM (3 parties)")
    model, _ = federate(parts, spec, algorithm=algorithm_of(s))
    status("each party alone")
    solos = alone(parts, spec, algorithm=algorithm_of(s))
    return {"sizes": [c.n_docs for c in parts], "iftm": loglik(model.topics, ev, s.seed),
            "iftm_topics": int(model.topics.shape[0]),
            "alone": {p.party_id: loglik(p.model.phi(), ev, s.seed) for p in solos}}


def privacy(train: Corpus, test: Corpus, s: IFTMSettings, status: Status) -> dict:
    """Fig. 6: iFTM's held-out log-likelihood for every ε × τ."""
    parts, ev = ratio_label_split(train, RATIOS_3, s.seed), test.sample_documents(s.eval_docs, s.seed)
    rows = []
    for eps in s.epsilons:
        for tau in s.taus:
            status(f"ε = {eps:g}, τ = {tau:g}")
            model, _ = federate(parts, _spec(s, epsilon=eps, tau=tau), algorithm=algorithm_of(s))
            rows.append({"epsilon": eps, "tau": tau, "loglik": loglik(model.topics, ev, s.seed),
                         "topics": int(model.topics.shape[0])})
    return {"rows": rows}


def communication(train: Corpus, test: Corpus, s: IFTMSettings, status: Status) -> dict:
    """Fig. 7: held-out log-likelihood against communication rounds. iFTM (one exchange per ``local_iterations``
    sweeps) with 3 parties at every ε of Fig. 6 (τ as set), as the paper's Fig. 7 draws one curve per ε, and with
    4 parties at the set ε; against conventional distributed LDA (our CSFed-LDA over the 3 parties' documents: one
    exchange per sweep, Gibbs on the raw counts, for SentenceLDA too: there is no conventional federated
    SentenceLDA here) run out to 3× iFTM's sweep budget, since the paper's baseline needs "more than 300 rounds"."""
    from fedtopic.simulation.lockstep import run_lockstep_simulation

    ev = test.sample_documents(s.eval_docs, s.seed)
    out: dict = {}
    runs = [("3 parties", RATIOS_3, eps) for eps in sorted({*s.epsilons, s.epsilon})]
    runs.append(("4 parties", RATIOS_4, s.epsilon))
    for label, ratios, eps in runs:
        parts = ratio_label_split(train, ratios, s.seed)
        curve: list[tuple[int, float]] = []
        status(f"iFTM, {label}, ε = {eps:g}")
        federate(parts, _spec(s, epsilon=eps), lambda r, m, c=curve: c.append((r, loglik(m.topics, ev, s.seed))),
                 algorithm=algorithm_of(s))
        out[f"iftm {label}, ε = {eps:g}"] = curve
    parts = ratio_label_split(train, RATIOS_3, s.seed)
    budget = s.rounds * s.local_iterations
    csfed = get_algorithm("csfed-lda")
    curve = []
    for r in sorted({max(1, round(budget * f)) for f in (0.1, 0.25, 0.5, 1.0, 2.0, 3.0)}):
        status(f"CSFed-LDA (one exchange per sweep), 3 parties, {r} rounds")
        spec = csfed.spec(s.topics, r, s.seed, {"alpha": paper_alpha(s.topics)})
        sim = run_lockstep_simulation(parts, spec, [f"p{i + 1}" for i in range(3)],
                                      algorithm="csfed-lda")
        curve.append((r, loglik(sim.parties[0].phi(), ev, s.seed)))
    out["csfed-lda 3 parties"] = curve
    return {"curves": out}


def classification(train: Corpus, test: Corpus, s: IFTMSettings, status: Status) -> dict:
    """Table 3: one linear SVM, always trained on the same labelled documents and scored on the same held-out
    ones, on normalised word counts alone and then with θ (fold-in) as extra features, θ from each party's model
    trained alone or from iFTM's global model M*; precision and macro-F1 (macro averages over the labels).

    The paper's Table 3 has one "without topic model" row and one row per topic model, so only the topic features
    change between rows: the classifier's data are fixed (the paper: 5,000 training and 2,000 test documents).
    Here they are up to ``CLASSIFIER_DOCS`` training documents drawn uniformly from the whole training corpus (the
    parties are non-IID by label, so one party's own documents may hold a single label) and up to
    ``CLASSIFIER_TEST_DOCS`` test documents. The topic models are Fig. 5's (3 parties, non-IID by label)."""
    from sklearn.metrics import f1_score, precision_score
    from sklearn.svm import LinearSVC

    from fedtopic.models.foldin import fold_in

    if train.labels is None or test.labels is None:
        return {"skipped": "the dataset has no labels"}
    rng = np.random.default_rng(s.seed)
    fit = train.subset(np.sort(rng.choice(train.n_docs, min(CLASSIFIER_DOCS, train.n_docs), replace=False)))
    held = test.subset(np.sort(rng.choice(test.n_docs, min(CLASSIFIER_TEST_DOCS, test.n_docs), replace=False)))
    if len(set(fit.labels.tolist())) < 2:  # type: ignore[union-attr]
        return {"skipped": "the classifier's training documents hold a single label: there is nothing to classify"}
    parts, spec = ratio_label_split(train, RATIOS_3, s.seed), _spec(s)
    status("iFTM (3 parties)")
    model, _ = federate(parts, spec, algorithm=algorithm_of(s))
    status("each party alone")
    solos = alone(parts, spec, algorithm=algorithm_of(s))

    def bow(c: Corpus) -> np.ndarray:
        """float64[D, V]: each document's word counts over its length."""
        x = np.zeros((c.n_docs, c.n_words))
        np.add.at(x, (np.repeat(np.arange(c.n_docs), c.doc_lengths()), c.words), 1.0)
        return x / np.maximum(x.sum(axis=1, keepdims=True), 1.0)

    def theta(phi: np.ndarray, c: Corpus) -> np.ndarray:
        return fold_in(phi, c.words, c.doc_ptr, 50.0 / phi.shape[0], iterations=30, seed=s.seed)

    def score(x_tr: np.ndarray, x_te: np.ndarray) -> dict:
        pred = LinearSVC(random_state=s.seed).fit(x_tr, fit.labels).predict(x_te)
        return {"precision": float(precision_score(held.labels, pred, average="macro", zero_division=0)),
                "macro_f1": float(f1_score(held.labels, pred, average="macro", zero_division=0))}

    x_tr, x_te = bow(fit), bow(held)
    rows = [{"features": "words only", "topics": 0, **score(x_tr, x_te)}]
    for name, phi in [*((f"+ θ {p.party_id} alone", p.model.phi()) for p in solos), ("+ θ iFTM", model.topics)]:
        status(f"SVM, words {name}")
        rows.append({"features": name, "topics": int(phi.shape[0]),
                     **score(np.hstack([x_tr, theta(phi, fit)]), np.hstack([x_te, theta(phi, held)]))})
    return {"sizes": [c.n_docs for c in parts], "classifier_documents": {"train": fit.n_docs, "test": held.n_docs},
            "labels": len(set(fit.labels.tolist())), "rows": rows}
