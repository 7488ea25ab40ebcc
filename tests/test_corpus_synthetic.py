"""Synthetic federated LDA data (gFedNTM §4.1.1)."""

import numpy as np
import pytest

from fedtopic.corpus.synthetic import _categorical_rows, generate_synthetic
from fedtopic.errors import CorpusError

SMALL = dict(n_parties=4, n_topics=12, n_shared=4, n_words=800, docs_per_party=300, doc_length=80)


@pytest.fixture(scope="module")
def data():
    return generate_synthetic(**SMALL, seed=5)


def test_shapes_and_distributions(data):
    assert len(data.parties) == len(data.thetas) == len(data.topics_of_party) == 4
    assert data.phi.shape == (12, 800) and np.allclose(data.phi.sum(1), 1)
    assert data.alpha == pytest.approx(50 / 12) and data.eta == 0.01
    for corpus, theta in zip(data.parties, data.thetas):
        assert theta.shape == (300, 12) and np.allclose(theta.sum(1), 1)
        assert corpus.n_docs == 300 and corpus.vocab[:2] == ("term0", "term1")
        lengths = corpus.doc_lengths()
        assert lengths.min() >= 60 and lengths.max() <= 100  # 80 ± 25 %
    assert [t.tolist() for t in data.topics_of_party] == [
        [0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 6, 7], [0, 1, 2, 3, 8, 9], [0, 1, 2, 3, 10, 11]
    ]


def test_private_topics_are_absent_from_other_parties(data):
    for p, topics in enumerate(data.topics_of_party):
        private = topics[data.n_shared:]
        for q, theta in enumerate(data.thetas):
            assert np.all(theta[:, private] > 0) if q == p else np.all(theta[:, private] == 0)
    # in the tokens: words that only a private topic of party 0 uses occur only in party 0
    others = np.delete(data.phi, [4, 5], axis=0).max(0)
    marker = np.flatnonzero((data.phi[[4, 5]].max(0) > 0.01) & (others < 1e-6))
    assert len(marker) >= 5
    counts = [np.isin(c.words, marker).sum() for c in data.parties]
    assert counts[0] > 1000 and sum(counts[1:]) <= 3


def test_token_frequencies_match_the_model(data):
    for corpus, theta in zip(data.parties, data.thetas):
        expected = (corpus.doc_lengths()[:, None] * theta).sum(0) @ data.phi
        observed = np.bincount(corpus.words, minlength=800)
        tv = 0.5 * np.abs(observed / observed.sum() - expected / expected.sum()).sum()
        assert tv < 0.06, tv


def test_categorical_rows_against_numpy_choice():
    rng = np.random.default_rng(0)
    probs = np.array([[0.0, 0.5, 0.0, 0.5], [0.7, 0.1, 0.2, 0.0], [0.0, 0.0, 0.0, 1.0]])
    rows = np.repeat([0, 1, 2], 60000)
    cols = _categorical_rows(rng, probs, rows)
    for r in range(3):
        freq = np.bincount(cols[rows == r], minlength=4) / 60000
        ref = np.bincount(np.random.default_rng(r).choice(4, 60000, p=probs[r]), minlength=4) / 60000
        assert np.all(freq[probs[r] == 0] == 0)
        assert np.abs(freq - probs[r]).max() < 0.01 and np.abs(freq - ref).max() < 0.015


def test_reproducible_and_seed_dependent():
    a = generate_synthetic(**SMALL, seed=1)
    b = generate_synthetic(**SMALL, seed=1)
    c = generate_synthetic(**SMALL, seed=2)
    assert np.array_equal(a.merged().words, b.merged().words) and np.array_equal(a.phi, b.phi)
    assert not np.array_equal(a.merged().words, c.merged().words)


def test_merged_and_theta_lookup(data):
    merged = data.merged()
    assert merged.n_docs == 1200 and merged.n_tokens == sum(c.n_tokens for c in data.parties)
    assert merged.label_names == ("party0", "party1", "party2", "party3")
    assert np.array_equal(np.bincount(merged.labels), [300] * 4)
    d = 300 + 17  # party 1, document 17
    assert merged.doc_names[d] == "party1/doc17"
    part = data.parties[1]
    assert np.array_equal(merged.words[merged.doc_ptr[d]:merged.doc_ptr[d + 1]],
                          part.words[part.doc_ptr[17]:part.doc_ptr[18]])
    assert np.array_equal(data.theta_for(["party1/doc17", "party0/doc0"]),
                          data.thetas[1][[17]].tolist() + data.thetas[0][[0]].tolist())
    with pytest.raises(CorpusError, match="not in this synthetic corpus"):
        data.theta_for(["party9/doc0"])


def test_defaults_follow_the_paper_layout():
    d = generate_synthetic(docs_per_party=20)
    assert len(d.parties) == 5 and d.phi.shape == (10, 5000) and d.n_shared == 5
    assert [len(t) for t in d.topics_of_party] == [6] * 5 and d.alpha == 5.0


@pytest.mark.parametrize(
    "kw", [dict(n_topics=10, n_shared=4), dict(n_shared=11), dict(n_parties=0), dict(doc_length=0),
           dict(eta=0.0)]
)
def test_bad_parameters(kw):
    with pytest.raises(CorpusError):
        generate_synthetic(**{**dict(docs_per_party=5), **kw})
