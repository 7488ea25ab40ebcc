"""One iFTM party (Alg. 5 lines 3–4 and 8, Alg. 1): local private MH, the normalised model it sends, adoption
of the model the master composes for it (Alg. 4)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from fedtopic.algorithms.base import Fitted, IterationCallback, TrainSpec
from fedtopic.algorithms.iftm_master import GlobalModel, compose
from fedtopic.algorithms.iftm_options import topics_of
from fedtopic.algorithms.lda_family import merge_corpora
from fedtopic.algorithms.model import TopicModel
from fedtopic.corpus.types import Corpus
from fedtopic.errors import ModelError
from fedtopic.models.private_mh import PrivateMHLDA, PrivateMHSentenceLDA


def _model(spec: TrainSpec, topics: int, seed: int, corpus: Corpus, secret: bytes | None = None, *,
           sentences: bool = False) -> PrivateMHLDA:
    """The party's local model, initialised on ``corpus``; its ModelErrors say "iftm:"."""
    o = spec.options
    model = PrivateMHSentenceLDA if sentences else PrivateMHLDA
    key = None
    if secret is not None:
        key = int.from_bytes(hashlib.sha256(b"iftm-privatisation\x00" + secret).digest()[:8], "big")
    try:
        built = model(topics, alpha=o.get("alpha"), beta=float(o["beta"]),  # type: ignore[arg-type]
                      epsilon=float(o["epsilon"]), tau=float(o["tau"]), seed=seed,  # type: ignore[arg-type]
                      privacy_key=key, debias=bool(o.get("debias", False)))
        built.initialize(corpus)
    except ModelError as exc:
        raise ModelError(f"iftm: {exc}") from None
    return built


def algorithm_name(sentences: bool) -> str:
    """The registry name of the iFTM algorithm over SentenceLDA (``sentences``) or LDA."""
    return "iftm-sentencelda" if sentences else "iftm-lda"


def fit_alone(parts: Sequence[Corpus], spec: TrainSpec, callback: IterationCallback | None = None, *,
              sentences: bool = False) -> Fitted:
    """`fedtopic train --algorithm iftm-lda|iftm-sentencelda`: one party's private MH on its (pooled) documents."""
    corpus = merge_corpora(parts)
    model = _model(spec, spec.topics, spec.seed, corpus, sentences=sentences)
    for it in range(1, spec.iterations + 1):
        model.sweep()
        if callback is not None:
            callback(0, it, model)
    return Fitted(TopicModel(model.phi(), model.alpha, model.beta, corpus.vocab, algorithm=algorithm_name(sentences)),
                  model.theta(),
                  {"epsilon": float(spec.options["epsilon"]), "tau": float(spec.options["tau"])})  # type: ignore[arg-type]


class IFTMParty:
    """Party ``index``: its own K (``party_topics``), seed ``seed + index``, data amount = its documents; ``secret``
    (a node's ``PartyKeys.noise_secret``) keys the privatisation, else the seed does."""

    def __init__(self, party_id: str, index: int, corpus: Corpus, spec: TrainSpec, *,
                 secret: bytes | None = None, sentences: bool = False) -> None:
        self.party_id, self.index, self.corpus, self.spec = party_id, index, corpus, spec
        self.algorithm = algorithm_name(sentences)
        self.topics = topics_of(spec.options, spec.topics, index)
        self.model = _model(spec, self.topics, spec.seed + index, corpus, secret, sentences=sentences)
        self.local_iterations = int(spec.options["local_iterations"])  # type: ignore[arg-type]
        self.xi, self.top = float(spec.options["xi"]), int(spec.options["top_words"])  # type: ignore[arg-type]
        self.sweeps = 0
        self.global_model: GlobalModel | None = None

    @property
    def amount(self) -> float:
        """n_p: this party's number of documents (what the master weighs its topics by)."""
        return float(self.corpus.n_docs)

    def local_round(self, budget: int) -> np.ndarray:
        """Up to ``local_iterations`` sweeps (never past ``budget`` in total); returns M̂_p float64[K_p,V]."""
        for _ in range(min(self.local_iterations, budget - self.sweeps)):
            self.model.sweep()
            self.sweeps += 1
        return self.normalized_model()

    def normalized_model(self) -> np.ndarray:
        """M̂_p: every topic row of max(C^KW, 0) + β scaled to sum 1. Its word-topic tables are exactly Eq. 20's
        (the row sums cancel), so nothing but the absolute frequencies is lost: §3.1.5, with β kept."""
        return self.model.phi()

    def adopt(self, global_model: GlobalModel, *, last: bool) -> None:
        """Keep M*; unless this was the last round, restart local training from M′_p (Alg. 4, Alg. 1 l. 9–10)."""
        self.global_model = global_model
        if not last:
            self.model.adopt(compose(global_model, self.normalized_model(), xi=self.xi, top=self.top))
