"""θ of new documents under a ``fed-embedding-topics`` model: embed them as the parties embedded theirs, then
their soft membership of the topic centroids (what `infer` and ``TopicModel.transform`` give)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from fedtopic.algorithms.embedding_topics.clustering import soft_membership, unit_rows
from fedtopic.algorithms.embedding_topics.embeddings import embed
from fedtopic.corpus.types import Corpus


def model_embedding(centroids: np.ndarray, temperature: float, method: str, seed: int) -> dict[str, np.ndarray]:
    """What a run folder keeps of the model for inference (``TopicModelFile.embedding``)."""
    return {"centroids": np.asarray(centroids, dtype=np.float64), "temperature": np.float64(temperature),
            "method": np.str_(method), "seed": np.int64(seed)}


def embedding_theta(embedding: Mapping[str, np.ndarray], corpus: Corpus,
                    texts: Sequence[str] | None = None) -> np.ndarray:
    """float64[D, K] θ of ``corpus``'s documents (``texts``: their raw text, which ``minilm`` embeds; without it the
    corpus's own texts or tokens). A document the embedder sees as empty gets the uniform θ."""
    method, seed = str(embedding["method"]), int(embedding["seed"])
    if method == "minilm" and texts is not None:
        from fedtopic.neural.sentence_embeddings import embed_texts

        x = unit_rows(embed_texts(list(texts)).astype(np.float64))
    else:
        x = embed(corpus, method, seed)
    return soft_membership(x, np.asarray(embedding["centroids"], dtype=np.float64),
                           float(embedding["temperature"]))
