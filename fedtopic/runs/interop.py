"""A run's model for the tools topic modellers already use: pyLDAvis's inputs and a gensim ``LdaModel``.

- ``pyldavis_data``: the five arguments of ``pyLDAvis.prepare`` (``topic_term_dists`` Φ float[K, V],
  ``doc_topic_dists`` θ float[D, K] of the training documents, ``doc_lengths`` int[D], ``vocab`` and
  ``term_frequency`` int[V]) from the run folder: Φ from model.npz, θ from theta.npy, the lengths from
  theta-rows.json and the counts from term-frequency.npy (both written with θ since session 30).
- ``gensim_lda``: a gensim ``LdaModel`` whose topics are Φ (λ = Φ·N_k + η with N_k the topic's tokens as θ and the
  lengths give them, at least 1, so that its variational inference of new documents sees the run's topics) with
  the run's α and its ``Dictionary``; saved with gensim's own ``save`` so ``LdaModel.load`` reads it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.errors import ConfigError
from fedtopic.runs.folder import TERM_FREQUENCY, load_topic_model


def _rows(run: Path) -> dict[str, Any]:
    path = run / "theta-rows.json"
    if not (run / "theta.npy").is_file() or not path.is_file():
        raise ConfigError(f"{run} keeps no θ of its training documents (theta.npy): a train or simulate run of "
                          "this version writes it")
    return json.loads(path.read_text(encoding="utf-8"))


def pyldavis_data(run: Path) -> dict[str, Any]:
    """``pyLDAvis.prepare``'s keyword arguments for the run's model, as plain lists (JSON)."""
    model = load_topic_model(run)
    rows = _rows(run)
    if "lengths" not in rows or not (run / TERM_FREQUENCY).is_file():
        raise ConfigError(f"{run} keeps no document lengths or term frequencies (written with θ by `train` and "
                          "`simulate` since session 30): train it again to export it to pyLDAvis")
    theta = np.load(run / "theta.npy")
    frequency = np.load(run / TERM_FREQUENCY)
    phi = model.phi / model.phi.sum(axis=1, keepdims=True)
    doc_topic = theta / np.maximum(theta.sum(axis=1, keepdims=True), 1e-300)
    if frequency.shape != (phi.shape[1],) or len(rows["lengths"]) != theta.shape[0]:
        raise ConfigError(f"{run}: θ, the lengths and the term frequencies do not fit its model")
    return {"topic_term_dists": phi.tolist(), "doc_topic_dists": doc_topic.tolist(),
            "doc_lengths": [int(n) for n in rows["lengths"]], "vocab": list(model.vocab),
            "term_frequency": [int(n) for n in frequency]}


def gensim_lda(run: Path, out: Path) -> Path:
    """The run's model as a gensim ``LdaModel`` saved at ``out`` (its ``Dictionary`` at ``out``.dictionary)."""
    try:
        from gensim.corpora import Dictionary
        from gensim.models import LdaModel
    except ImportError:
        raise ConfigError("exporting to gensim needs gensim: pip install gensim") from None
    model = load_topic_model(run)
    k, v = model.phi.shape
    phi = model.phi / model.phi.sum(axis=1, keepdims=True)
    tokens = np.full(k, 1.0)
    rows = _rows(run) if (run / "theta.npy").is_file() else {}
    if "lengths" in rows:
        tokens = np.maximum(np.load(run / "theta.npy").T @ np.asarray(rows["lengths"], dtype=np.float64), 1.0)
    dictionary = Dictionary()
    dictionary.token2id = {w: i for i, w in enumerate(model.vocab)}
    dictionary.id2token = dict(enumerate(model.vocab))
    alpha = np.broadcast_to(np.asarray(model.alpha, dtype=np.float64), (k,)).copy()  # learned: one per topic
    alpha = alpha if alpha.min() > 0 else np.full(k, 1.0 / k)  # NMF and neural runs carry no α
    beta = float(model.beta) if float(model.beta) > 0 else 0.01
    lda = LdaModel(num_topics=k, id2word=dictionary, alpha=alpha, eta=beta, random_state=0)
    lda.state.sstats = (phi * tokens[:, None]).astype(lda.dtype)
    lda.sync_state()
    out.parent.mkdir(parents=True, exist_ok=True)
    lda.save(str(out))
    dictionary.save(str(out) + ".dictionary")
    return out
