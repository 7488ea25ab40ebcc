"""One iFTM party (Alg. 5 lines 3–4 and 8, Alg. 1): local private MH, the normalised model it sends, adoption
of the model the master composes for it (Alg. 4)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

import numpy as np

from fedtopic.algorithms.base import Fitted, IterationCallback, TrainSpec
from fedtopic.algorithms.federated import Channel, Exchange, StepRecord, TopicsUpdate
from fedtopic.algorithms.iftm.options import (
    global_rounds,
    party_topic_counts,
    tau_of,
    topics_of,
)
from fedtopic.algorithms.model import TopicModel
from fedtopic.corpus.pool import merge_corpora
from fedtopic.corpus.types import Corpus
from fedtopic.errors import ModelError
from fedtopic.eval.coherence import heaviest_ids
from fedtopic.models.private_mh import PrivateMHLDA, PrivateMHSentenceLDA
from fedtopic.models.topic_merge import GlobalModel, compose


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
                      epsilon=float(o["epsilon"]), tau=tau_of(o, corpus.n_words), seed=seed,  # type: ignore[arg-type]
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
                  {"epsilon": float(spec.options["epsilon"]),  # type: ignore[arg-type]
                   "tau": tau_of(spec.options, corpus.n_words)})


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
        self.round = 0  # exchanges with the master done
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

    # the party protocol (algorithms.federated) ----------------------------------------------------
    def channels(self, n_parties: int) -> list[Channel]:
        """One ``topics`` channel; its meta (the master's settings) is what every party derives alike."""
        max_topics = max(party_topic_counts(self.spec.options, self.spec.topics, n_parties))
        meta = {"vocabulary": self.corpus.n_words, "xi": self.xi, "top_words": self.top, "max_topics": max_topics}
        return [Channel("topics", "topics", self.corpus.n_words, meta)]

    def setup(self, exchange: Exchange) -> None:
        """Nothing before the first round."""

    def step(self, round: int, exchange: Exchange) -> StepRecord:
        """Alg. 5 round ``round``: local sweeps, M̂_p and n_p up, M* down, adopt M′_p unless it is the last."""
        rounds = global_rounds(self.spec)
        update = TopicsUpdate(self.local_round(self.spec.iterations), self.amount)
        model: GlobalModel = exchange.sum("topics", round, update).value
        self.adopt(model, last=round == rounds - 1)
        self.round = round + 1
        return StepRecord(quality=self.log_likelihood(), quality_name="loglik_per_token",
                          extra={"global_topics": int(model.topics.shape[0]), "sweeps": self.sweeps})

    def done(self) -> bool:
        return self.round >= global_rounds(self.spec)

    def log_likelihood(self) -> float:
        """Log-likelihood per token of this party's documents under its local model (Φ, θ)."""
        from fedtopic.eval.likelihood import token_log_likelihood

        return token_log_likelihood(self.model.phi(), self.model.theta(), self.corpus.words, self.corpus.doc_ptr)

    def state(self) -> dict[str, np.ndarray]:
        """The local model's state, the sweeps and rounds done, and the last M* (if any)."""
        arrays = self.model.state() | {"sweeps": np.array(self.sweeps), "round": np.array(self.round)}
        if self.global_model is not None:
            arrays |= {"global_topics": self.global_model.topics, "global_weights": self.global_model.weights}
        return arrays

    def restore(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Back to ``state()``; ValueError if it does not fit this party's model."""
        try:
            self.model.restore(dict(arrays))
        except ModelError as exc:
            raise ValueError(str(exc)) from None
        self.sweeps, self.round = int(arrays["sweeps"]), int(arrays["round"])
        self.global_model = GlobalModel(arrays["global_topics"], arrays["global_weights"]) \
            if "global_topics" in arrays else None

    def top_words_ids(self, n: int) -> np.ndarray:
        """int[K, n]: the top words of M* (after the first round) or of the local model."""
        phi = self.global_model.topics if self.global_model is not None else self.model.phi()
        return heaviest_ids(phi, n)

    def topic_distribution(self) -> tuple[np.ndarray, np.ndarray | None]:
        """Φ float64[K,V] of M* (after the first round; its weights as prevalence) or of the local model (θ's
        mean as prevalence)."""
        if self.global_model is not None:
            phi = np.asarray(self.global_model.topics, dtype=np.float64)
            weights = np.asarray(self.global_model.weights, dtype=np.float64).reshape(-1)
            ok = weights.shape[0] == phi.shape[0] and weights.sum() > 0
            return phi / phi.sum(axis=1, keepdims=True), (weights / weights.sum() if ok else None)
        theta = self.model.theta()
        return self.model.phi(), theta.mean(axis=0) if len(theta) else None
