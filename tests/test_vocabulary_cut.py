"""`--max-vocabulary N`: every corpus of a run over the parties' N consensus words (pooled document frequency)."""

from __future__ import annotations

import numpy as np
import pytest

from fedtopic.corpus.training_data import cut_vocabulary, load_training_data
from fedtopic.corpus.vocab_counts import VocabularyCounts, consensus_words
from fedtopic.errors import CorpusError


def test_the_cut_keeps_the_top_words_by_pooled_document_frequency_everywhere():
    data = load_training_data(dataset="bbc-news", corpus=None, n_parties=3, scheme="b", seed=1, progress=False)
    cut = cut_vocabulary(data, 250)
    # the reference: document frequency pooled over the parties, highest first, ties alphabetical
    df = sum(VocabularyCounts.from_corpus(p).document_frequency for p in data.parties)
    ranked = sorted(range(data.train.n_words), key=lambda w: (-df[w], data.train.vocab[w]))[:250]
    assert cut.train.vocab == tuple(data.train.vocab[w] for w in ranked)
    assert all(c.vocab == cut.train.vocab for c in (cut.test, *cut.parties))
    assert [c.n_docs for c in cut.parties] == [c.n_docs for c in data.parties]  # documents stay
    kept = set(ranked)
    for before, after in zip((data.train, data.test, *data.parties), (cut.train, cut.test, *cut.parties)):
        want = [data.train.vocab[w] for w in before.words if w in kept]
        assert [after.vocab[w] for w in after.words] == want
    assert cut.train.texts == data.train.texts  # what CombinedTM embeds is untouched


def test_a_cut_wider_than_the_vocabulary_keeps_every_word_and_zero_is_refused():
    data = load_training_data(dataset="bbc-news", corpus=None, n_parties=2, scheme="a", seed=0, progress=False)
    wide = cut_vocabulary(data, 10 ** 9)
    assert set(wide.train.vocab) == {data.train.vocab[w] for w in np.unique(np.concatenate(
        [p.words for p in data.parties]))}
    with pytest.raises(CorpusError, match="at least one word"):
        consensus_words(data.parties, 0)
