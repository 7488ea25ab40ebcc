"""u_mass and c_v equal gensim's CoherenceModel on the same reference texts (issue 46 item 9): random topics and
a model's own topics, windows longer and shorter than the documents, texts without any top word."""

from __future__ import annotations

import numpy as np
import pytest
from _texts import theme_texts

from fedtopic.corpus.build import corpus_from_texts
from fedtopic.errors import EvalError
from fedtopic.eval.coherence_measures import cv_coherence, umass_coherence

gensim = pytest.importorskip("gensim", reason="NOT RUN: gensim is not installed (scripts/test installs it)")


def _gensim(corpus, top, measure: str, window: int | None = None) -> np.ndarray:
    from gensim.corpora import Dictionary
    from gensim.models.coherencemodel import CoherenceModel

    texts = [[corpus.vocab[w] for w in corpus.words[corpus.doc_ptr[d]:corpus.doc_ptr[d + 1]]]
             for d in range(corpus.n_docs)]
    dictionary = Dictionary(texts)
    topics = [[corpus.vocab[w] for w in row] for row in top]
    kwargs = {"texts": texts} if measure == "c_v" else {"corpus": [dictionary.doc2bow(t) for t in texts]}
    if window is not None:
        kwargs["window_size"] = window
    model = CoherenceModel(topics=topics, dictionary=dictionary, coherence=measure, **kwargs)
    return np.array(model.get_coherence_per_topic())


@pytest.mark.parametrize("seed", [0, 1])
def test_umass_and_cv_equal_gensims(seed):
    rng = np.random.default_rng(seed)
    texts = theme_texts(60, seed=seed, length=int(rng.integers(8, 40)))
    texts += ["zebra yak " * 3]  # a text that shares no word with most topics
    corpus = corpus_from_texts(texts, min_df=1, max_df=1.0)
    top = np.array([rng.choice(corpus.n_words, size=8, replace=False) for _ in range(5)])
    np.testing.assert_allclose(umass_coherence(top, corpus), _gensim(corpus, top, "u_mass"), rtol=1e-9, atol=1e-9)
    for window in (None, 5):  # gensim's 110 (longer than every text) and shorter than most
        ours = cv_coherence(top, corpus) if window is None else cv_coherence(top, corpus, window=window)
        np.testing.assert_allclose(ours, _gensim(corpus, top, "c_v", window), rtol=1e-9, atol=1e-9)


def test_bad_top_words_are_refused():
    corpus = corpus_from_texts(theme_texts(10, seed=0), min_df=1, max_df=1.0)
    with pytest.raises(EvalError):
        umass_coherence(np.array([[0]]), corpus)
    with pytest.raises(EvalError):
        cv_coherence(np.array([[0, corpus.n_words]]), corpus)
