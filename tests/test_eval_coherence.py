"""NPMI coherence vs a brute-force per-pair count over documents as sets."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.corpus.types import Corpus
from fedtopic.errors import EvalError
from fedtopic.eval.coherence import npmi_coherence, top_word_ids


def _corpus(docs: list[list[int]], v: int) -> Corpus:
    words = np.array([w for d in docs for w in d], dtype=np.int32)
    ptr = np.concatenate([[0], np.cumsum([len(d) for d in docs])]).astype(np.int64)
    return Corpus(words, ptr, tuple(f"w{i}" for i in range(v)))


def _brute_npmi(topic, docs) -> float:
    sets = [set(d) for d in docs]
    n = len(sets)
    scores = []
    for a, b in itertools.combinations(topic, 2):
        p_a = sum(a in s for s in sets) / n
        p_b = sum(b in s for s in sets) / n
        p_ab = sum(a in s and b in s for s in sets) / n
        if p_ab == 0:
            scores.append(-1.0)
        elif p_ab == 1:
            scores.append(1.0)
        else:
            scores.append(math.log(p_ab / (p_a * p_b)) / -math.log(p_ab))
    return float(np.mean(scores))


def test_matches_brute_force_on_random_documents():
    rng = np.random.default_rng(0)
    v = 40
    docs = [list(rng.integers(0, v, size=rng.integers(1, 15))) for _ in range(60)]
    top = np.array([rng.choice(v, size=8, replace=False) for _ in range(6)])
    got = npmi_coherence(top, _corpus(docs, v), top_n=6)
    want = [_brute_npmi(t[:6], docs) for t in top]
    np.testing.assert_allclose(got, want, rtol=1e-12)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10_000), n_docs=st.integers(1, 30), v=st.integers(4, 30), k=st.integers(1, 6),
       narrow=st.booleans())
def test_shared_top_words_and_empty_documents_match_brute_force(seed, n_docs, v, k, narrow):
    """Topics share words (each asked word has several places), documents may be empty or repeat a word."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, min(v, 6) + 1))
    docs = [list(rng.integers(0, v, size=int(rng.integers(0, 12)))) for _ in range(n_docs)]
    if not any(docs):
        docs[0] = [0]
    top = np.array([rng.choice(v, size=n, replace=False) for _ in range(k)])
    corpus = _corpus(docs, v)
    if narrow:
        corpus = Corpus(corpus.words.astype(np.uint16), corpus.doc_ptr, corpus.vocab)
    got = npmi_coherence(top, corpus, top_n=n)
    np.testing.assert_allclose(got, [_brute_npmi(t, docs) for t in top], rtol=1e-12, atol=1e-15)


def test_perfect_co_occurrence_is_one_and_never_together_is_minus_one():
    # words 0,1 always appear together (in half the documents); 2 and 3 never share one
    docs = [[0, 1, 0], [2, 4], [0, 1], [3, 4], [4], [0, 1, 4]]
    corpus = _corpus(docs, 6)
    got = npmi_coherence(np.array([[0, 1], [2, 3], [0, 5]]), corpus, top_n=2)
    np.testing.assert_allclose(got, [1.0, -1.0, -1.0])  # word 5 never occurs at all


def test_words_in_every_document_score_one():
    docs = [[0, 1, 2], [1, 0], [0, 1, 3]]
    assert npmi_coherence(np.array([[0, 1]]), _corpus(docs, 4), top_n=2)[0] == 1.0


def test_independent_words_score_zero():
    docs = [[0, 1], [0], [1], []]  # p(0)=p(1)=1/2, p(0,1)=1/4
    assert npmi_coherence(np.array([[0, 1]]), _corpus(docs, 2), top_n=2)[0] == pytest.approx(0.0, abs=1e-15)


def test_top_word_ids_orders_by_probability_with_ties_to_lower_id():
    phi = np.array([[0.1, 0.4, 0.1, 0.4], [0.7, 0.1, 0.1, 0.1]])
    np.testing.assert_array_equal(top_word_ids(phi, 3), [[1, 3, 0], [0, 1, 2]])


def test_bad_inputs_raise_eval_error():
    corpus = _corpus([[0, 1], [1, 2]], 3)
    with pytest.raises(EvalError, match="top_n"):
        npmi_coherence(np.array([[0, 1]]), corpus, top_n=3)
    with pytest.raises(EvalError, match="vocabulary"):
        npmi_coherence(np.array([[0, 3]]), corpus, top_n=2)
    with pytest.raises(EvalError, match="repeats"):
        npmi_coherence(np.array([[1, 1]]), corpus, top_n=2)
    with pytest.raises(EvalError, match="no tokens"):
        npmi_coherence(np.array([[0, 1]]), _corpus([[], []], 3), top_n=2)
    with pytest.raises(EvalError, match="integer"):
        npmi_coherence(np.array([[0.0, 1.0]]), corpus, top_n=2)
    with pytest.raises(EvalError, match="n must be"):
        top_word_ids(np.full((2, 3), 1 / 3), 4)
