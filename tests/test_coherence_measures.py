"""u_mass and c_v equal gensim's CoherenceModel on the same reference texts (issue 46 item 9): random topics and
a model's own topics, windows longer and shorter than the documents, texts without any top word."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _texts import theme_texts
from hypothesis import given, settings
from hypothesis import strategies as st

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


def _slow_counts(docs: list[list[int]], top: np.ndarray, window: int | None):
    """Window by window (or document by document) with Python sets: gensim's accumulator as its docstring says."""
    ids = sorted({int(w) for w in top.ravel()})
    occ, co, units = {w: 0 for w in ids}, {}, 0
    for doc in docs:
        if window is None:
            sets = [set(doc)]
        else:
            current, sets = set(doc[:window]), []
            sets.append(set(current))
            for t in range(1, max(len(doc) - window + 1, 1)):
                current.discard(doc[t - 1])
                current.add(doc[t + window - 1])
                sets.append(set(current))
        for s in sets:
            units += 1
            for w in ids:
                occ[w] += w in s
            for a, b in itertools.combinations(ids, 2):
                co[a, b] = co.get((a, b), 0) + (a in s and b in s)
    return occ, co, units


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10_000), window=st.one_of(st.none(), st.integers(2, 9)))
def test_pair_counts_equal_counting_window_by_window(seed, window):
    """Documents empty, shorter and longer than the window, words repeated inside it; topics sharing words."""
    from fedtopic.corpus.types import Corpus
    from fedtopic.eval.coherence import topic_pair_counts

    rng = np.random.default_rng(seed)
    v = int(rng.integers(3, 12))
    docs = [[int(w) for w in rng.integers(0, v, int(rng.integers(0, 25)))] for _ in range(int(rng.integers(1, 8)))]
    n = int(rng.integers(2, v + 1))
    top = np.array([rng.choice(v, n, replace=False) for _ in range(int(rng.integers(1, 5)))])
    corpus = Corpus(np.array([w for d in docs for w in d], dtype=np.uint16),
                    np.concatenate([[0], np.cumsum([len(d) for d in docs])]).astype(np.int64),
                    tuple(f"w{i}" for i in range(v)))
    unique, local = np.unique(top, return_inverse=True)
    occ, pairs, units = topic_pair_counts(corpus, unique, local.reshape(top.shape), window)
    want_occ, want_co, want_units = _slow_counts(docs, top, window)
    assert units == want_units
    assert occ.tolist() == [want_occ[int(w)] for w in unique]
    for k, row in enumerate(top):
        for a, b in itertools.combinations(range(n), 2):
            key = (min(row[a], row[b]), max(row[a], row[b]))
            assert pairs[k, a, b] == want_co[key], (k, a, b)
