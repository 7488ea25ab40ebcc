"""The evaluation every training command reports (DESIGN.md "Evaluation, defined once")."""

from __future__ import annotations

import numpy as np

from fedtopic.corpus.types import Corpus
from fedtopic.errors import EvalError
from fedtopic.eval._checks import check_alpha, check_corpus_for_phi, check_phi
from fedtopic.eval.classify import svm_macro_f1
from fedtopic.eval.coherence import npmi_coherence, top_word_ids
from fedtopic.eval.diversity import topic_diversity
from fedtopic.eval.perplexity import completion_perplexity, eq16_from_theta
from fedtopic.models.foldin import fold_in
from fedtopic.models.prior import Alpha

NPMI_TOP_N = 10
DIVERSITY_TOP_N = 25
HELD_OUT_TOKENS = 1_000_000
"""Held-out tokens scored at most: a larger test corpus is scored on a seeded sample of its documents holding about
this many (the perplexity's standard error there is far below a model's differences; folding in 250M held-out
tokens of a billion-token corpus would take longer than training). No built-in dataset has more."""
REFERENCE_TOKENS = 5_000_000
"""Training tokens the coherences count co-occurrences in at most, sampled the same way."""


def scoring_sample(corpus: Corpus, tokens: int, seed: int) -> np.ndarray | None:
    """int64 indices (sorted) of a seeded sample of whole documents of ``corpus`` holding about ``tokens`` tokens;
    None when the corpus holds no more than that (every document is scored)."""
    if corpus.n_tokens <= tokens:
        return None
    n = max(1, int(corpus.n_docs * tokens / corpus.n_tokens))
    return np.sort(np.random.default_rng([seed, 0x5C0]).choice(corpus.n_docs, n, replace=False))


def _labelled(corpus: Corpus) -> np.ndarray:
    """Indices of the documents that carry a label (label ≥ 0); empty if the corpus has none."""
    if corpus.labels is None:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(corpus.labels >= 0)


def evaluate_model(
    phi: np.ndarray,
    alpha: Alpha,
    train: Corpus,
    test: Corpus,
    *,
    theta_train: np.ndarray | None = None,
    fold_in_iterations: int = 50,
    seed: int = 0,
) -> dict[str, float]:
    """Score a trained Φ float64[K,V] (document-topic prior α) on its training and test corpora.

    Keys:
      perplexity       document-completion perplexity on ``test``
      perplexity_eq16  the CSFed/DAFed paper's Eq. 16 perplexity on ``test``
      npmi             mean over topics of NPMI of the top 10 words, reference = ``train``
      topic_diversity  unique fraction of the top 25 words of all topics
      macro_f1         linear-SVM macro-F1, θ_train → labels, scored on folded-in θ_test;
                       only when both corpora have labelled documents and the
                       training labels hold at least 2 classes (a party holding
                       a single category has nothing to classify)
    With a vocabulary smaller than 10 (25) words, NPMI (diversity) uses all V.
    ``theta_train`` float64[D_train,K] is the trained θ; when None it is folded in.
    Corpora beyond ``HELD_OUT_TOKENS`` (test) or ``REFERENCE_TOKENS`` (train) are scored on a seeded sample of
    their documents (``scoring_sample``); the keys ``held_out_documents_scored`` and ``reference_documents`` then
    say how many.
    """
    phi = check_phi(phi, "evaluate")
    alpha = check_alpha(alpha, "evaluate")
    check_corpus_for_phi(phi, train, "evaluate (train corpus)")
    check_corpus_for_phi(phi, test, "evaluate (test corpus)")
    if theta_train is not None and np.shape(theta_train) != (train.n_docs, phi.shape[0]):
        raise EvalError(
            f"evaluate: theta_train has shape {np.shape(theta_train)}, expected {(train.n_docs, phi.shape[0])}"
        )
    sampled: dict[str, float] = {}
    test_docs = scoring_sample(test, HELD_OUT_TOKENS, seed)
    if test_docs is not None:
        test = test.subset(test_docs)
        sampled["held_out_documents_scored"] = float(len(test_docs))
    train_docs = scoring_sample(train, REFERENCE_TOKENS, seed)
    if train_docs is not None:
        train = train.subset(train_docs)
        theta_train = None if theta_train is None else np.asarray(theta_train)[train_docs]
        sampled["reference_documents"] = float(len(train_docs))
    n_words = phi.shape[1]
    npmi_top_n = min(NPMI_TOP_N, n_words)
    theta_test = fold_in(phi, test.words, test.doc_ptr, alpha, iterations=fold_in_iterations, seed=seed)
    scores = {
        "perplexity": completion_perplexity(phi, test, alpha, iterations=fold_in_iterations, seed=seed),
        "perplexity_eq16": eq16_from_theta(phi, theta_test, test),
        "npmi": float(npmi_coherence(top_word_ids(phi, npmi_top_n), train, npmi_top_n).mean()),
        "topic_diversity": topic_diversity(phi, min(DIVERSITY_TOP_N, n_words)),
        **sampled,
    }
    train_docs, test_docs = _labelled(train), _labelled(test)
    train_classes = np.unique(train.labels[train_docs]) if len(train_docs) else ()
    if len(test_docs) == 0 or len(train_classes) < 2:
        return scores
    if theta_train is None:
        theta_train = fold_in(phi, train.words, train.doc_ptr, alpha, iterations=fold_in_iterations, seed=seed)
    scores["macro_f1"] = svm_macro_f1(
        np.asarray(theta_train)[train_docs],
        train.labels[train_docs],
        theta_test[test_docs],
        test.labels[test_docs],
        seed=seed,
    )
    return scores
