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
    """The pooled training corpus, each party's share of it, and the held-out test corpus."""

    name: str
    train: Corpus
    test: Corpus
    parties: list[Corpus]
    tokenizer: dict[str, Any] = field(default_factory=dict)


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
) -> TrainingData:
    """Load ``dataset`` (built-in) or ``corpus`` (a path, read as ``reading`` says), then split the training part
    among ``n_parties``; with ``max_vocabulary``, every corpus keeps only the parties' consensus words
    (``cut_vocabulary``)."""
    if (dataset is None) == (corpus is None):
        raise ConfigError("give exactly one of --dataset NAME or --corpus PATH")
    if n_parties < 1:
        raise ConfigError(f"--parties must be at least 1, got {n_parties}")
    reading = reading or CorpusReading()
    if dataset is not None and not reading.is_default():
        raise ConfigError("--min-df, --max-df, --stopwords and --encoding read --corpus; a built-in dataset comes "
                          "tokenised as its card says (`fedtopic data info NAME`)")
    if dataset is not None:
        data = load_dataset(dataset, progress=progress)
        name, train, test, tokenizer = data.name, data.train, data.test, dict(data.tokenizer)
    else:
        data = split_corpus(str(corpus), read_corpus(corpus, **reading.options()), n_parties=n_parties,
                            scheme=scheme, seed=seed, dirichlet_alpha=dirichlet_alpha,
                            tokenizer=reading.tokenizer_record())
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
    cut = [c.restrict_vocabulary(keep) for c in (data.train, data.test, *data.parties)]
    return TrainingData(name=data.name, train=cut[0], test=cut[1], parties=cut[2:], tokenizer=data.tokenizer)


def in_vocabulary(data: TrainingData, vocab: Sequence[str], tokenizer: Mapping[str, Any]) -> TrainingData:
    """``data`` with every corpus re-encoded over ``vocab`` (a saved model's words, ``Corpus.in_vocabulary``) and
    that model's tokenizer (``train --continue-from``)."""
    cut = [c.in_vocabulary(vocab) for c in (data.train, data.test, *data.parties)]
    return TrainingData(name=data.name, train=cut[0], test=cut[1], parties=cut[2:], tokenizer=dict(tokenizer))


def split_corpus(name: str, full: Corpus, *, n_parties: int, scheme: str, seed: int,
                 tokenizer: dict[str, Any] | None = None, dirichlet_alpha: float = 0.5) -> TrainingData:
    """Hold out a quarter of ``full`` (seeded) and split the rest among ``n_parties`` by ``scheme``."""
    train, test = split_train_test(full, test_fraction=0.25, seed=seed)
    parts = _shares(train, n_parties, scheme, seed, dirichlet_alpha)
    return TrainingData(name=name, train=train, test=test, parties=parts, tokenizer=dict(tokenizer or {}))


def _shares(train: Corpus, n_parties: int, scheme: str, seed: int, dirichlet_alpha: float) -> list[Corpus]:
    """Each party's documents of ``train`` by ``scheme``; a single party holds ``train`` itself (not a copy of it:
    a billion-token corpus would be held twice)."""
    shares = partition_documents(train, n_parties, scheme, seed=seed, dirichlet_alpha=dirichlet_alpha)
    return [train if len(idx) == train.n_docs else train.subset(idx) for idx in shares]
