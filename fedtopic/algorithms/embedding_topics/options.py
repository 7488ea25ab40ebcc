"""The options of ``fed-embedding-topics`` and the settings every party derives from them alike."""

from __future__ import annotations

from fedtopic.algorithms.base import Option, TrainSpec
from fedtopic.algorithms.embedding_topics.dp import DP_OPTIONS
from fedtopic.algorithms.embedding_topics.embeddings import METHODS
from fedtopic.algorithms.embedding_topics.party import Settings
from fedtopic.errors import ConfigError

OPTIONS = (
    Option("clusters", int, None, "k-means clusters before they are merged into K topics by c-TF-IDF similarity "
           "(BERTopic's reduce_topics)", minimum=2, default_text="K (no merging)"),
    Option("embedding", str, "minilm", "document embeddings: minilm (all-MiniLM-L6-v2, BERTopic's default) or hashed "
           "(a seeded projection of the word counts: no model)", choices=METHODS),
    Option("outlier_cosine", float, 0.0, "a document whose cosine to its cluster's centroid is below this is an "
           "outlier (BERTopic's topic -1): in θ, but its words describe no topic", minimum=0.0, maximum=1.0),
    Option("temperature", float, 0.05, "θ = softmax(cosine to the topic centroids / temperature)", minimum=0.0,
           exclusive_minimum=True),
) + DP_OPTIONS


def settings_of(spec: TrainSpec) -> Settings:
    clusters = spec.options.get("clusters")
    k = spec.topics if clusters is None else int(clusters)  # type: ignore[arg-type]
    if k < spec.topics:
        raise ConfigError(f"--opt clusters={k} is below K={spec.topics}: clusters are merged into topics, not split")
    return Settings(k, spec.topics, spec.iterations, str(spec.options["embedding"]),
                    float(spec.options["temperature"]), float(spec.options["outlier_cosine"]),  # type: ignore[arg-type]
                    spec.seed)
