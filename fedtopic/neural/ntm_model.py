"""A trained neural topic model as plain arrays (what a run folder stores) and back."""

from __future__ import annotations

from typing import Any

import numpy as np

from fedtopic.corpus.types import Corpus
from fedtopic.errors import ModelError
from fedtopic.neural.ntm_train import NTMModel
from fedtopic.neural.prodlda import Shapes, Stats
from fedtopic.neural.require import require_torch

torch: Any = require_torch("ProdLDA / CombinedTM")

_LAYERS = ("mu", "lv", "dec")


def network_arrays(model: NTMModel) -> dict[str, np.ndarray]:
    """The encoder's flat weights, the shapes (V, K, d, and 1 for the per-document model) and the BatchNorm
    running statistics (unused by the per-document model)."""
    dims = [model.shapes.vocabulary, model.shapes.topics, model.shapes.context]
    out = {"flat": model.flat, "shapes": np.array(dims + ([1] if model.shapes.norm == "document" else []))}
    for layer in _LAYERS:
        mean, var = getattr(model.running, layer)
        out[f"{layer}_mean"], out[f"{layer}_var"] = np.asarray(mean), np.asarray(var)
    return out


def model_from_network(arrays: dict[str, np.ndarray]) -> NTMModel:
    """The ``NTMModel`` of ``network_arrays``; ModelError if something is missing or inconsistent."""
    try:
        dims = [int(x) for x in arrays["shapes"]]
        v, k, d = dims[:3]
        if len(dims) not in (3, 4) or dims[3:] not in ([], [1]):
            raise ValueError(f"shapes {dims}")
        shapes = Shapes(v, k, d, "document" if dims[3:] == [1] else "batch")
        stats = {layer: (torch.from_numpy(arrays[f"{layer}_mean"]), torch.from_numpy(arrays[f"{layer}_var"]))
                 for layer in _LAYERS}
        flat = np.asarray(arrays["flat"], dtype=np.float64)
    except (KeyError, ValueError, TypeError) as exc:
        raise ModelError(f"the model's network arrays are incomplete ({exc})") from None
    if flat.shape != (shapes.size,):
        raise ModelError(f"the model's network has {flat.shape} weights, V={v}, K={k} needs {shapes.size}")
    return NTMModel(shapes, flat, Stats(stats["mu"], stats["lv"], stats["dec"]))


def theta_from_network(arrays: dict[str, np.ndarray], corpus: Corpus) -> np.ndarray:
    """θ float64[D,K] of documents encoded with the model's vocabulary: the posterior mean's softmax (CombinedTM
    embeds the documents first)."""
    from fedtopic.models.nnls import counts_matrix

    model = model_from_network(arrays)
    ctx = None
    if model.shapes.context:
        from fedtopic.neural.sentence_embeddings import embed_corpus

        ctx = embed_corpus(corpus).astype(np.float64)
        if ctx.shape[1] != model.shapes.context:
            raise ModelError(f"the model expects {model.shapes.context}-d embeddings, the encoder gives {ctx.shape[1]}")
    return model.theta(counts_matrix(corpus), ctx)
