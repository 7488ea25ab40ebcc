"""Tokenizer, Vocabulary and corpus_from_texts."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.corpus.build import corpus_from_texts
from fedtopic.corpus.tokenize import Tokenizer, default_stopwords
from fedtopic.corpus.vocabulary import Vocabulary
from fedtopic.errors import CorpusError


def test_tokens_are_lowercase_alphabetic_without_stopwords():
    text = "The Quick brown-fox, 42 times! foo_bar x Café naïve it's"
    assert Tokenizer().tokens(text) == ["quick", "brown", "fox", "times", "foo", "bar", "café", "naïve"]


def test_stopword_list_is_the_shipped_english_list():
    stop = default_stopwords()
    assert 300 <= len(stop) <= 330
    assert {"the", "and", "of", "which", "yourselves"} <= stop
    assert all(w.isalpha() and w == w.lower() for w in stop)


def test_custom_stopwords_and_min_length():
    assert Tokenizer(stopwords=frozenset()).tokens("the cat is on a mat") == ["the", "cat", "is", "on", "mat"]
    only_cat = Tokenizer(stopwords=frozenset({"cat"}), min_length=3)
    assert only_cat.tokens("the cat is on a mat") == ["the", "mat"]
    with pytest.raises(CorpusError, match="min_length"):
        Tokenizer(min_length=0)


def test_porter_stemming():
    tok = Tokenizer(stem=True)
    assert tok.tokens("Running runs connected connections generously") == [
        "run", "run", "connect", "connect", "gener",
    ]
    # stop words are matched before stemming: "being" is a stop word, "beings" is not
    assert tok.tokens("being beings") == ["be"]
    assert Tokenizer().tokens("connections") == ["connections"]


def test_vocabulary_min_df_max_df_and_order():
    docs = [["a", "b", "c"], ["a", "b"], ["a", "d", "d"], ["a", "b", "e"], ["c", "f"]]
    # df: a=4 b=3 c=2 d=1 e=1 f=1 ; D=5
    assert Vocabulary.build(docs, min_df=2, max_df=1.0).words == ("a", "b", "c")
    assert Vocabulary.build(docs, min_df=2, max_df=0.7).words == ("b", "c")  # a: 4 > 3.5
    assert Vocabulary.build(docs, min_df=1, max_df=0.5).words == ("c", "d", "e", "f")
    assert Vocabulary.build(docs, min_df=1, max_df=1.0, max_size=2).words == ("a", "b")
    # a word repeated inside one document counts once
    assert "d" not in Vocabulary.build(docs, min_df=2, max_df=1.0)


@pytest.mark.parametrize("kw", [{"min_df": 0}, {"max_df": 0.0}, {"max_df": 1.5}, {"max_size": 0}])
def test_vocabulary_rejects_bad_options(kw):
    with pytest.raises(CorpusError):
        Vocabulary.build([["a"]], **kw)


def test_vocabulary_encode_drops_oov():
    v = Vocabulary(["x", "y", "z"])
    ids = v.encode(["z", "q", "x", "z"])
    assert ids.dtype == np.int32 and ids.tolist() == [2, 0, 2]
    assert v.encode([]).shape == (0,)
    assert len(v) == 3 and v.word_to_id["y"] == 1


def test_vocabulary_rejects_duplicates_and_bad_json():
    with pytest.raises(CorpusError, match="duplicate word 'a'"):
        Vocabulary(["a", "b", "a"])
    with pytest.raises(CorpusError, match="not valid JSON"):
        Vocabulary.from_json("{nope")
    with pytest.raises(CorpusError, match="format"):
        Vocabulary.from_json('{"vocab": ["a"]}')
    assert Vocabulary.from_json('{"words": ["a", "b"], "tokenizer": {}}').words == ("a", "b")  # a run's vocab.json
    with pytest.raises(CorpusError, match="non-empty strings"):
        Vocabulary.from_json('{"format": "fedtopic.vocabulary", "version": 1, "words": ["a", 3]}')


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1), unique=True, max_size=50))
def test_vocabulary_json_round_trip(words):
    v = Vocabulary(words)
    back = Vocabulary.from_json(v.to_json())
    assert back == v and back.words == tuple(words)
    assert back.encode(words).tolist() == list(range(len(words)))


def test_corpus_from_texts_builds_or_reuses_vocabulary():
    texts = ["apple banana apple", "banana cherry", "", "cherry apple", "zebra"]
    labels = ["fruit", "fruit", "none", "fruit", "animal"]
    c = corpus_from_texts(texts, labels, min_df=2, max_df=1.0)
    assert c.vocab == ("apple", "banana", "cherry")
    assert c.n_docs == 3  # the empty text and the zebra-only text are dropped
    assert c.doc_names == ("0", "1", "3")
    assert c.texts == ("apple banana apple", "banana cherry", "cherry apple")  # the raw texts of the kept ones
    assert c.label_names == ("animal", "fruit", "none") and c.labels.tolist() == [1, 1, 1]
    assert [c.vocab[w] for w in c.words[c.doc_ptr[0]:c.doc_ptr[1]]] == ["apple", "banana", "apple"]

    other = corpus_from_texts(["cherry zebra", "apple"], vocabulary=Vocabulary(c.vocab))
    assert other.vocab == c.vocab and other.words.tolist() == [2, 0]

    kept = corpus_from_texts(texts, min_df=2, max_df=1.0, drop_empty=False)
    assert kept.n_docs == 5 and kept.labels is None and kept.doc_lengths().tolist() == [3, 2, 0, 2, 0]


def test_corpus_from_texts_empty_is_an_error():
    with pytest.raises(CorpusError, match="corpus is empty after tokenising"):
        corpus_from_texts(["the and of", "42 !!"])
    with pytest.raises(CorpusError, match="corpus is empty after tokenising"):
        corpus_from_texts([])
    with pytest.raises(CorpusError, match="2 labels for 1 documents"):
        corpus_from_texts(["a b"], ["x", "y"])


def test_sentence_boundaries_follow_the_text_and_survive_oov_drops():
    texts = ["Cats purr softly. Dogs bark loudly!\n\nBirds sing", "Zebra. Cats sing."]
    corpus = corpus_from_texts(texts, vocabulary=Vocabulary(["cats", "purr", "dogs", "bark", "birds", "sing"]))
    words = [corpus.vocab[w] for w in corpus.words]
    assert words == ["cats", "purr", "dogs", "bark", "birds", "sing", "cats", "sing"]
    assert corpus.sent_ptr.tolist() == [0, 2, 4, 6, 8]  # "Zebra." is out of vocabulary: its sentence is gone
    assert corpus.doc_sentences().tolist() == [0, 3, 4]
    assert Tokenizer().sentence_tokens(texts[0])[0] == Tokenizer().tokens(texts[0])


@settings(max_examples=50, deadline=None)
@given(docs=st.lists(st.lists(st.integers(1, 4), max_size=4), min_size=1, max_size=8), data=st.data(),
       texts=st.lists(st.text(), min_size=8, max_size=8))
def test_subsets_merges_and_files_keep_every_sentence(tmp_path_factory, docs, data, texts):
    from fedtopic.corpus.pool import merge_corpora
    from fedtopic.corpus.store import load_corpus, save_corpus
    from fedtopic.corpus.types import Corpus

    lengths = [sum(d) for d in docs]
    words = np.arange(sum(lengths), dtype=np.int32) % 5
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    sent_ptr = np.unique(np.concatenate([[0], np.cumsum([n for d in docs for n in d]), doc_ptr])).astype(np.int64)
    corpus = Corpus(words=words, doc_ptr=doc_ptr, vocab=tuple("abcde"), sent_ptr=sent_ptr,
                    texts=tuple(texts[:len(docs)]))

    def sentences(c):  # every document's sentences, as word lists
        b = c.doc_sentences()
        return [[c.words[c.sent_ptr[s]:c.sent_ptr[s + 1]].tolist() for s in range(b[d], b[d + 1])]
                for d in range(c.n_docs)]

    order = data.draw(st.permutations(range(corpus.n_docs)))
    picked = np.asarray(order[:data.draw(st.integers(0, corpus.n_docs))], dtype=np.int64)
    sub = corpus.subset(picked)
    assert sentences(sub) == [sentences(corpus)[d] for d in picked]
    assert sub.texts == tuple(corpus.texts[d] for d in picked)
    merged = merge_corpora([sub, corpus])
    assert sentences(merged) == sentences(sub) + sentences(corpus)
    assert merged.texts == sub.texts + corpus.texts
    keep = np.asarray(data.draw(st.permutations(range(5)))[:data.draw(st.integers(1, 5))], dtype=np.int64)
    small = corpus.restrict_vocabulary(keep)
    new_id = {int(w): i for i, w in enumerate(keep)}
    expected = [[[new_id[w] for w in sent if w in new_id] for sent in doc] for doc in sentences(corpus)]
    assert sentences(small) == [[sent for sent in doc if sent] for doc in expected]
    assert small.texts == corpus.texts
    path = tmp_path_factory.mktemp("c") / "c.npz"
    save_corpus(merged, path)
    back = load_corpus(path)
    assert np.array_equal(back.sent_ptr, merged.sent_ptr) and back.texts == merged.texts


def test_bad_sentence_pointers_are_refused():
    from fedtopic.corpus.types import Corpus

    words, ptr = np.zeros(4, np.int32), np.array([0, 2, 4], np.int64)
    for bad in ([0, 1, 4], [0, 2, 2, 4], [0, 3]):  # misses a document boundary, empty sentence, wrong end
        with pytest.raises(CorpusError):
            Corpus(words=words, doc_ptr=ptr, vocab=("a",), sent_ptr=np.array(bad, np.int64))
