"""The trained model every LDA-family algorithm produces: Φ, the priors, the vocabulary and the tokenizer.

``TopicModel`` is what users hold after training (``fedtopic.api``), what a run
folder stores (model.npz + vocab.json, ``fedtopic.runs.folder``) and what
``fedtopic infer`` reads: top words per topic, θ of new text by Gibbs fold-in
with Φ fixed (``fedtopic.models.foldin``), save and load.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.corpus.types import Corpus
from fedtopic.errors import ModelError
from fedtopic.models.prior import Alpha, describe_alpha


@dataclass(frozen=True)
class TopicModel:
    """Φ float64[K,V] (rows sum to 1), α, β, the vocabulary (V words) and how text was tokenised."""

    phi: np.ndarray
    alpha: Alpha
    """a float (symmetric prior), or float64[K] learned by ``optim_interval`` (models.hyperopt)"""
    beta: float
    vocab: tuple[str, ...]
    tokenizer: dict[str, Any] = field(default_factory=dict)
    algorithm: str = "lda"
    factors: np.ndarray | None = None
    """NMF family only: Wᵀ float64[K,V] unnormalised (Φ is its row-normalised form); θ of new text is then the
    non-negative least-squares weights with W fixed, not a Gibbs fold-in."""
    network: dict[str, np.ndarray] | None = None
    """Neural topic models only: the encoder's weights and BatchNorm statistics (``neural.ntm_model``); θ of
    new text is then the posterior mean's softmax."""
    embedding: dict[str, np.ndarray] | None = None
    """Embedding topics only (``fed-embedding-topics``): the topic centroids, θ's temperature and the embedder;
    θ of new text is then its soft membership (``algorithms.embedding_topics.inference``)."""

    def __post_init__(self) -> None:
        if self.phi.ndim != 2 or self.phi.shape[1] != len(self.vocab):
            raise ModelError(f"Φ of shape {self.phi.shape} does not match a vocabulary of {len(self.vocab)} words")

    def __repr__(self) -> str:
        """A short summary (not the whole Φ): algorithm, K, V, priors and the first topics' top words."""
        shown = "; ".join(" ".join(words[:5]) for words in self.top_words(5)[:3])
        more = f"; … {self.n_topics - 3} more" if self.n_topics > 3 else ""
        return (f"TopicModel({self.algorithm}, K={self.n_topics}, V={len(self.vocab)}, alpha={describe_alpha(self.alpha)}, "
                f"beta={self.beta:g}: {shown}{more})")

    __str__ = __repr__

    @property
    def n_topics(self) -> int:
        return int(self.phi.shape[0])

    def top_words(self, n: int = 10) -> list[list[str]]:
        """The ``n`` most probable words of every topic, most probable first."""
        from fedtopic.eval.topics import top_words

        return top_words(self.phi, self.vocab, n)

    def encode(self, texts: Sequence[str]) -> Corpus:
        """``texts`` tokenised as at training time, words outside the vocabulary dropped (documents kept, maybe empty)."""
        from fedtopic.corpus.build import corpus_from_tokens
        from fedtopic.corpus.tokenize import Tokenizer
        from fedtopic.corpus.vocabulary import Vocabulary

        tokenizer = Tokenizer(**self.tokenizer)
        return corpus_from_tokens([tokenizer.tokens(t) for t in texts], Vocabulary(self.vocab), drop_empty=False)

    def transform(self, docs: Sequence[str] | Corpus, *, iterations: int = 100, seed: int = 0) -> np.ndarray:
        """θ float64[D,K] of new documents (strings or an encoded ``Corpus``): Gibbs fold-in with Φ fixed, or for
        an NMF model the non-negative least-squares topic weights with W fixed (deterministic).

        A document with no known word gets the prior mean α / Σα (LDA) or zeros (NMF). Same seed, same θ. A neural
        model's θ is its posterior mean (deterministic).
        """
        if isinstance(docs, str):
            raise ModelError("transform takes a list of documents, not one string")
        corpus = docs if isinstance(docs, Corpus) else self.encode(docs)
        if self.factors is not None:
            from fedtopic.models.nnls import counts_matrix, nnls_weights

            return nnls_weights(counts_matrix(corpus), self.factors.T)
        if self.network is not None:
            from fedtopic.neural.ntm_model import theta_from_network

            return theta_from_network(self.network, corpus)
        if self.embedding is not None:
            from fedtopic.algorithms.embedding_topics.inference import embedding_theta

            return embedding_theta(self.embedding, corpus, None if isinstance(docs, Corpus) else list(docs))
        from fedtopic.models.foldin import fold_in

        return fold_in(self.phi, corpus.words, corpus.doc_ptr, self.alpha, iterations=iterations, seed=seed)

    def save(self, run_dir: str | Path) -> Path:
        """model.npz and vocab.json in ``run_dir`` (created); returns the model file's path."""
        from fedtopic.runs.folder import TopicModelFile, save_topic_model

        run_dir = Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        return save_topic_model(run_dir, TopicModelFile(phi=self.phi, alpha=self.alpha, beta=self.beta,
                                                        vocab=self.vocab, tokenizer=self.tokenizer,
                                                        algorithm=self.algorithm, factors=self.factors,
                                                        network=self.network, embedding=self.embedding))

    @classmethod
    def load(cls, run_dir: str | Path) -> TopicModel:
        """The model of a run folder (any training command's ``--out``), checked for consistency."""
        from fedtopic.runs.folder import load_topic_model

        f = load_topic_model(Path(run_dir))
        return cls(phi=f.phi, alpha=f.alpha, beta=f.beta, vocab=f.vocab, tokenizer=f.tokenizer, algorithm=f.algorithm,
                   factors=f.factors, network=f.network, embedding=f.embedding)
