"""Where a training run's documents come from: a built-in dataset or a corpus path, split among parties."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedtopic.corpus.datasets import load_dataset
from fedtopic.corpus.partition import partition_documents, split_train_test
from fedtopic.corpus.readers import read_corpus
from fedtopic.corpus.reading import CorpusReading
from fedtopic.corpus.types import Corpus
from fedtopic.errors import ConfigError


@dataclass(frozen=True)
class TrainingData:
    """The pooled training corpus, each party's share of it, and the held-out test corpus (``held_out`` says what
    it is: a seeded share of the corpus, another file, or the training documents themselves)."""

    name: str
    train: Corpus
    test: Corpus
    parties: list[Corpus]
    tokenizer: dict[str, Any] = field(default_factory=dict)
    held_out: str = "held-out documents"

    def describe(self) -> str:
        """The first line a command says: what it trains on and what its held-out figures are scored on."""
        if self.test is self.train:
            return (f"training on all {self.train.n_docs:,} documents; the held-out figures are scored on the "
                    "training documents themselves (--holdout 0)")
        return (f"training on {self.train.n_docs:,} documents; {self.test.n_docs:,} {self.held_out} for the "
                "held-out figures")


def load_training_data(
    *,
    dataset: str | None,
    corpus: Path | None,
    n_parties: int,
    scheme: str,
    seed: int,
    progress: bool = True,
    dirichlet_alpha: float = 0.5,
    max_vocabulary: int | None = None,
    reading: CorpusReading | None = None,
    holdout: float | None = None,
    test_corpus: Path | None = None,
) -> TrainingData:
    """Load ``dataset`` (built-in) or ``corpus`` (a path, read as ``reading`` says), then split the training part
    among ``n_parties``; with ``max_vocabulary``, every corpus keeps only the parties' consensus words
    (``cut_vocabulary``). A corpus holds out ``holdout`` of its documents (seeded; default 0.25; 0: none, the
    held-out figures are then the training documents'), or none when ``test_corpus`` is the held-out set."""
    if (dataset is None) == (corpus is None):
        raise ConfigError("give exactly one of --dataset NAME or --corpus PATH")
    if n_parties < 1:
        raise ConfigError(f"--parties must be at least 1, got {n_parties}")
    reading = reading or CorpusReading()
    if dataset is not None and not reading.is_default():
        raise ConfigError("--min-df, --max-df, --stopwords and --encoding read --corpus; a built-in dataset comes "
                          "tokenised as its card says (`fedtopic data info NAME`)")
    if dataset is not None and (holdout is not None or test_corpus is not None):
        raise ConfigError("--holdout and --test-corpus split a --corpus; a built-in dataset has its own test split "
                          "(`fedtopic data info NAME`)")
    if holdout is not None and test_corpus is not None:
        raise ConfigError("give --holdout or --test-corpus, not both: a test corpus is the held-out set")
    if holdout is not None and not 0.0 <= holdout < 1.0:
        raise ConfigError(f"--holdout is a share of the documents in [0, 1), got {holdout:g}")
    if dataset is not None:
        data = load_dataset(dataset, progress=progress)
        name, train, test, tokenizer = data.name, data.train, data.test, dict(data.tokenizer)
    else:
        full = read_corpus(corpus, **reading.options())
        if test_corpus is not None:
            data = _with_test_corpus(str(corpus), full, test_corpus, reading, n_parties=n_parties, scheme=scheme,
                                     seed=seed, dirichlet_alpha=dirichlet_alpha)
        else:
            data = split_corpus(str(corpus), full, n_parties=n_parties, scheme=scheme, seed=seed,
                                dirichlet_alpha=dirichlet_alpha, tokenizer=reading.tokenizer_record(),
                                test_fraction=0.25 if holdout is None else holdout)
        return data if max_vocabulary is None else cut_vocabulary(data, max_vocabulary)
    parts = _shares(train, n_parties, scheme, seed, dirichlet_alpha)
    data = TrainingData(name=name, train=train, test=test, parties=parts, tokenizer=tokenizer)
    return data if max_vocabulary is None else cut_vocabulary(data, max_vocabulary)


def cut_vocabulary(data: TrainingData, size: int) -> TrainingData:
    """``data`` over the ``size`` words of highest document frequency pooled over the parties (gFedNTM's
    vocabulary consensus; contextualized-topic-models keeps 2,000): other tokens are dropped everywhere, the
    held-out corpus included, documents stay (possibly empty)."""
    from fedtopic.corpus.vocab_counts import consensus_words

    keep = consensus_words(data.parties, size)
    return _each(data, lambda c: c.restrict_vocabulary(keep), data.tokenizer)


def in_vocabulary(data: TrainingData, vocab: Sequence[str], tokenizer: Mapping[str, Any]) -> TrainingData:
    """``data`` with every corpus re-encoded over ``vocab`` (a saved model's words, ``Corpus.in_vocabulary``) and
    that model's tokenizer (``train --continue-from``)."""
    return _each(data, lambda c: c.in_vocabulary(vocab), dict(tokenizer))


def _each(data: TrainingData, change: Any, tokenizer: Mapping[str, Any]) -> TrainingData:
    """``data`` with ``change`` applied to every corpus; a test corpus that is the training corpus stays so."""
    train = change(data.train)
    test = train if data.test is data.train else change(data.test)
    return TrainingData(name=data.name, train=train, test=test, parties=[change(p) for p in data.parties],
                        tokenizer=dict(tokenizer), held_out=data.held_out)


def split_corpus(name: str, full: Corpus, *, n_parties: int, scheme: str, seed: int,
                 tokenizer: dict[str, Any] | None = None, dirichlet_alpha: float = 0.5,
                 test_fraction: float = 0.25) -> TrainingData:
    """Hold out ``test_fraction`` of ``full`` (seeded; 0: nothing, the test corpus is the training corpus itself)
    and split the rest among ``n_parties`` by ``scheme``."""
    if test_fraction == 0.0:
        train = test = full
        held = "training documents"
    else:
        train, test = split_train_test(full, test_fraction=test_fraction, seed=seed)
        held = f"held out ({100 * test_fraction:g} %, seeded)"
    parts = _shares(train, n_parties, scheme, seed, dirichlet_alpha)
    return TrainingData(name=name, train=train, test=test, parties=parts, tokenizer=dict(tokenizer or {}),
                        held_out=held)


def _with_test_corpus(name: str, full: Corpus, test_path: Path, reading: CorpusReading, *, n_parties: int,
                      scheme: str, seed: int, dirichlet_alpha: float) -> TrainingData:
    """Every document of ``full`` to train on; ``test_path`` read as the training corpus was (its stop words and
    encoding; every word it keeps) and re-encoded over the training vocabulary as the held-out set."""
    from dataclasses import replace

    test = read_corpus(test_path, **replace(reading, min_df=1, max_df=1.0).options()).in_vocabulary(full.vocab)
    if test.n_tokens == 0:
        raise ConfigError(f"--test-corpus {test_path}: none of its words is in the training vocabulary")
    parts = _shares(full, n_parties, scheme, seed, dirichlet_alpha)
    return TrainingData(name=name, train=full, test=test, parties=parts, tokenizer=reading.tokenizer_record(),
                        held_out=f"documents of {test_path}")


def _shares(train: Corpus, n_parties: int, scheme: str, seed: int, dirichlet_alpha: float) -> list[Corpus]:
    """Each party's documents of ``train`` by ``scheme``; a single party holds ``train`` itself (not a copy of it:
    a billion-token corpus would be held twice)."""
    shares = partition_documents(train, n_parties, scheme, seed=seed, dirichlet_alpha=dirichlet_alpha)
    return [train if len(idx) == train.n_docs else train.subset(idx) for idx in shares]
