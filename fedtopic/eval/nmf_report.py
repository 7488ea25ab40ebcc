"""The evaluation of NMF-family models (FedNMF+MI §IV-B): WE coherence, NPMI, diversity, SVM on topic weights.

NMF has no likelihood, so no perplexity: the paper scores topics by word-embedding coherence (Eq. 4) and the
model by classification on the columns of H (macro-F1 and accuracy of an SVM on an 80/20 split of all training
documents' weights). NPMI and diversity are ours, as for every other algorithm.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fedtopic.corpus.types import Corpus
from fedtopic.eval.classify import svm_f1_accuracy
from fedtopic.eval.coherence import npmi_coherence, top_word_ids
from fedtopic.eval.diversity import topic_diversity
from fedtopic.eval.embeddings import load_glove
from fedtopic.eval.topics import top_words
from fedtopic.eval.we_coherence import we_coherence

TOP_N = 10
DIVERSITY_TOP_N = 25


def evaluate_nmf(phi: np.ndarray, h_train: np.ndarray, train: Corpus, *, seed: int = 0,
                 cache_dir: Path | None = None) -> dict[str, float]:
    """Scores of topics Φ float64[K,V] (rows of Wᵀ normalised) and the training documents' weights
    H float64[D,K] (``train`` order).

    Keys: we_coherence (GloVe 50-d, top 10), npmi (reference = ``train``, top 10), topic_diversity (top 25),
    macro_f1 and accuracy (when ``train`` has ≥ 2 labels), we_unscored_topics (topics with < 2 words in GloVe).
    """
    n_words = phi.shape[1]
    top_n = min(TOP_N, n_words)
    we, per_topic = we_coherence(top_words(phi, train.vocab, top_n), load_glove(cache_dir))
    scores = {
        "we_coherence": we,
        "we_unscored_topics": int(np.isnan(per_topic).sum()),
        "npmi": float(npmi_coherence(top_word_ids(phi, top_n), train, top_n).mean()),
        "topic_diversity": topic_diversity(phi, min(DIVERSITY_TOP_N, n_words)),
    }
    if train.labels is not None:
        labelled = np.flatnonzero(train.labels >= 0)
        if len(np.unique(train.labels[labelled])) >= 2:
            f1, acc = svm_f1_accuracy(h_train[labelled], train.labels[labelled], seed=seed)
            scores |= {"macro_f1": f1, "accuracy": acc}
    return scores
