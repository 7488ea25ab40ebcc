"""Runs in BERTopic's own venv (``bench_embedding_topics.py`` creates it); imports nothing from fedtopic.

argv: IN.npz OUT.npz. IN holds the parties' documents as token text (``docs``, one string each, the consortium's
vocabulary joined by spaces), their all-MiniLM-L6-v2 embeddings (``emb`` float32[D, 384]), each document's party
(``party`` int[D]), the vocabulary (``vocab``), K and the seed. OUT holds, for ``central`` (one BERTopic on the
pooled documents, reduced to K) and ``merged`` (``BERTopic.merge_models`` of one model a party): each topic's
top 25 word ids (``*_top`` int[T, 25], -1 past a topic's words), its topic embedding (``*_emb`` [T, 384]) and the
wall seconds of the fits (``*_seconds``); the outlier topic −1 is left out of both.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from bertopic import BERTopic
from hdbscan import HDBSCAN
from sklearn.feature_extraction.text import CountVectorizer
from umap import UMAP


def model(vocab: list[str], seed: int, topics: int | None) -> BERTopic:
    """BERTopic's defaults (UMAP 5-d cosine, HDBSCAN min_cluster_size 10), seeded, over the given vocabulary."""
    return BERTopic(umap_model=UMAP(n_neighbors=15, n_components=5, min_dist=0.0, metric="cosine", random_state=seed),
                    hdbscan_model=HDBSCAN(min_cluster_size=10, metric="euclidean", cluster_selection_method="eom",
                                          prediction_data=True),
                    vectorizer_model=CountVectorizer(vocabulary=vocab, tokenizer=str.split, lowercase=False,
                                                     token_pattern=None),
                    nr_topics=topics)


def described(m: BERTopic, index: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """(top word ids [T, 25], topic embeddings [T, d]) of the model's topics other than −1."""
    ids = sorted(t for t in m.topic_representations_ if t != -1)
    top = np.full((len(ids), 25), -1, dtype=np.int64)
    for row, t in enumerate(ids):
        words = [index[w] for w, _ in m.topic_representations_[t] if w in index][:25]
        top[row, :len(words)] = words
    offset = 1 if -1 in m.topic_representations_ else 0
    emb = np.asarray(m.topic_embeddings_)[[t + offset for t in ids]]
    return top, emb


def main() -> None:
    src, dst = sys.argv[1], sys.argv[2]
    data = np.load(src, allow_pickle=False)
    docs, emb, party = [str(d) for d in data["docs"]], data["emb"], data["party"]
    vocab, k, seed = [str(w) for w in data["vocab"]], int(data["topics"]), int(data["seed"])
    index = {w: i for i, w in enumerate(vocab)}
    out: dict[str, np.ndarray] = {}
    started = time.perf_counter()
    central = model(vocab, seed, k)
    central.fit(docs, emb)
    out["central_seconds"] = np.array(time.perf_counter() - started)
    out["central_top"], out["central_emb"] = described(central, index)
    started = time.perf_counter()
    locals_ = []
    for p in np.unique(party):
        rows = np.flatnonzero(party == p)
        if len(rows) < 30:  # HDBSCAN and UMAP need some documents; BERTopic itself refuses tiny sets
            continue
        m = model(vocab, seed, None)
        m.fit([docs[i] for i in rows], emb[rows])
        locals_.append(m)
    merged = BERTopic.merge_models(locals_, min_similarity=0.7)
    out["merged_seconds"] = np.array(time.perf_counter() - started)
    out["merged_top"], out["merged_emb"] = described(merged, index)
    out["merged_parties"] = np.array(len(locals_))
    np.savez(dst, **out)


if __name__ == "__main__":
    main()
