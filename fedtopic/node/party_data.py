"""One party's documents in a multi-process run: its share of a built-in dataset, or its own corpus."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedtopic.consortium.config import ConsortiumConfig
from fedtopic.corpus.datasets import load_dataset
from fedtopic.corpus.partition import partition_documents, split_train_test
from fedtopic.corpus.readers import read_corpus
from fedtopic.corpus.types import Corpus
from fedtopic.corpus.vocabulary import Vocabulary
from fedtopic.errors import ConfigError, CorpusError
from fedtopic.runs.vocabulary_release import read_release


@dataclass(frozen=True)
class PartyData:
    """The party's training documents and a local held-out set (same consortium vocabulary)."""

    train: Corpus
    test: Corpus
    source: str
    tokenizer: dict[str, object]
    release: dict[str, Any] | None = None  # a private vocabulary's release (``runs.vocabulary_release``)


def load_party_data(cfg: ConsortiumConfig, party_id: str, *, corpus: Path | None = None, vocab: Path | None = None) -> PartyData:
    """``corpus`` + the consortium's shared ``vocab`` file, else this party's share of ``data.dataset``.

    A built-in dataset is split among the config's parties exactly as every
    other party splits it (scheme and seed from the config), so no document is
    used twice; the dataset's test split is the held-out set.
    """
    ids = list(cfg.party_ids)
    cfg.party(party_id)
    if corpus is not None:
        if vocab is None:
            raise ConfigError("--corpus needs --vocab FILE: the consortium's shared vocabulary (every party encodes with it)")
        try:
            vocabulary = Vocabulary.from_json(vocab.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read the vocabulary file {vocab}: {exc.strerror}") from None
        full = read_corpus(corpus, vocabulary=vocabulary)
        train, test = split_train_test(full, test_fraction=0.1, seed=cfg.algorithm.seed)
        return PartyData(train=train, test=test, source=str(corpus), tokenizer={}, release=read_release(vocab))
    if cfg.data.dataset is None:
        raise ConfigError("no data for this party: give --corpus PATH --vocab FILE, or set data.dataset in the config")
    data = load_dataset(cfg.data.dataset, progress=False)
    shares = partition_documents(data.train, len(ids), cfg.data.scheme, seed=cfg.algorithm.seed, dirichlet_alpha=cfg.data.dirichlet_alpha)
    share = data.train.subset(shares[ids.index(party_id)])
    if share.n_tokens == 0:
        raise CorpusError(f"party {party_id}'s share of {cfg.data.dataset} has no tokens")
    return PartyData(train=share, test=data.test, source=f"{cfg.data.dataset} (share {ids.index(party_id) + 1} of {len(ids)})", tokenizer=dict(data.tokenizer))
