"""partition_documents schemes and split_train_test."""

import numpy as np
import pytest

from fedtopic.corpus.partition import partition_documents, split_train_test
from fedtopic.corpus.types import Corpus
from fedtopic.errors import CorpusError


def _corpus(n_docs: int, n_labels: int | None, seed: int = 1) -> Corpus:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 6, size=n_docs)
    ptr = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    labels = None if n_labels is None else rng.integers(0, n_labels, size=n_docs).astype(np.int32)
    return Corpus(
        words=rng.integers(0, 30, size=ptr[-1]).astype(np.int32),
        doc_ptr=ptr,
        vocab=tuple(f"w{i}" for i in range(30)),
        labels=labels,
        label_names=tuple(f"l{i}" for i in range(n_labels or 0)),
    )


def _assert_disjoint_cover(parts, n_docs):
    joined = np.concatenate(parts)
    assert len(joined) == n_docs and np.array_equal(np.sort(joined), np.arange(n_docs))
    assert all(len(p) >= 1 and np.all(np.diff(p) > 0) and p.dtype == np.int64 for p in parts)


@pytest.mark.parametrize("scheme", ["a", "b", "c", "dirichlet"])
def test_every_scheme_is_a_disjoint_cover_and_reproducible(scheme):
    corpus = _corpus(1000, 12)
    parts = partition_documents(corpus, 5, scheme, seed=3)
    _assert_disjoint_cover(parts, 1000)
    again = partition_documents(corpus, 5, scheme, seed=3)
    assert all(np.array_equal(x, y) for x, y in zip(parts, again))
    other = partition_documents(corpus, 5, scheme, seed=4)
    assert not all(np.array_equal(x, y) for x, y in zip(parts, other))


def test_scheme_a_even_sizes():
    sizes = [len(p) for p in partition_documents(_corpus(103, None), 10, "a")]
    assert sorted(sizes) == [10] * 7 + [11] * 3


def test_scheme_b_sizes_grow_linearly():
    sizes = np.array([len(p) for p in partition_documents(_corpus(2100, None), 20, "b")])
    assert sizes.sum() == 2100
    assert np.array_equal(sizes, 10 * np.arange(1, 21))  # 2100 / 210 = 10 per share
    sizes = np.array([len(p) for p in partition_documents(_corpus(1000, None), 4, "b")])
    assert sizes.tolist() == [100, 200, 300, 400]
    with pytest.raises(CorpusError, match="scheme b needs about 210 documents for 20 parties"):
        partition_documents(_corpus(100, None), 20, "b")


def test_scheme_c_gives_whole_categories():
    corpus = _corpus(1200, 12)
    parts = partition_documents(corpus, 5, "c", seed=0)
    owner = {}
    for p, docs in enumerate(parts):
        for lab in np.unique(corpus.labels[docs]):
            assert lab not in owner, "a category is split between parties"
            owner[lab] = p
    assert len(owner) == 12
    sizes = [len(p) for p in parts]
    assert max(sizes) < 2.2 * min(sizes)  # balanced as whole categories allow (~100 docs each)


def test_scheme_c_and_dirichlet_need_labels():
    with pytest.raises(CorpusError, match="needs a labelled corpus"):
        partition_documents(_corpus(50, None), 2, "c")
    with pytest.raises(CorpusError, match="needs a labelled corpus"):
        partition_documents(_corpus(50, None), 2, "dirichlet")
    with pytest.raises(CorpusError, match="5 parties need at least 5 labels, corpus has 3"):
        partition_documents(_corpus(50, 3), 5, "c")
    c = _corpus(50, 3)
    labels = c.labels.copy()
    labels[4] = -1
    unlabelled = Corpus(c.words, c.doc_ptr, c.vocab, labels, c.label_names)
    with pytest.raises(CorpusError, match="1 documents have no label"):
        partition_documents(unlabelled, 2, "c")


def test_dirichlet_alpha_controls_label_skew():
    corpus = _corpus(4000, 10)

    def mean_max_share(alpha):
        parts = partition_documents(corpus, 10, "dirichlet", seed=0, dirichlet_alpha=alpha)
        assert sorted({len(p) for p in parts}) == [400]
        return np.mean([np.bincount(corpus.labels[p], minlength=10).max() / len(p) for p in parts])

    assert mean_max_share(0.05) > 0.7  # nearly one label per party
    assert mean_max_share(1000.0) < 0.2  # close to the corpus's ~10 % per label
    with pytest.raises(CorpusError, match="dirichlet_alpha must be positive"):
        partition_documents(corpus, 3, "dirichlet", dirichlet_alpha=0)


def test_partition_errors():
    with pytest.raises(CorpusError, match="cannot give 8 parties at least one document each: corpus has 5"):
        partition_documents(_corpus(5, 2), 8)
    with pytest.raises(CorpusError, match="unknown partition scheme 'z'"):
        partition_documents(_corpus(5, 2), 2, "z")
    with pytest.raises(CorpusError, match="n_parties must be at least 1"):
        partition_documents(_corpus(5, 2), 0)


def test_split_train_test():
    corpus = _corpus(200, 4)
    train, test = split_train_test(corpus, 0.25, seed=7)
    assert (train.n_docs, test.n_docs) == (150, 50)
    assert train.n_tokens + test.n_tokens == corpus.n_tokens
    assert train.vocab == test.vocab == corpus.vocab
    again_train, _ = split_train_test(corpus, 0.25, seed=7)
    assert np.array_equal(again_train.words, train.words)
    assert not np.array_equal(split_train_test(corpus, 0.25, seed=8)[0].words, train.words)
    with pytest.raises(CorpusError, match="test_fraction"):
        split_train_test(corpus, 1.0)
    with pytest.raises(CorpusError, match="cannot split 1 document"):
        split_train_test(_corpus(1, 2), 0.5)


def test_sample_documents_is_seeded_ordered_and_whole_when_small():
    c = Corpus(words=np.arange(20, dtype=np.int32) % 5, doc_ptr=np.arange(0, 21, 2, dtype=np.int64),
               vocab=tuple("abcde"), labels=np.arange(10, dtype=np.int32))
    a, b = c.sample_documents(4, seed=3), c.sample_documents(4, seed=3)
    assert a.n_docs == 4 and np.array_equal(a.labels, b.labels)
    assert np.all(np.diff(a.labels) > 0)  # corpus order, no repeats
    assert c.sample_documents(10, seed=3) is c and c.sample_documents(50, seed=0) is c
