"""Spherical k-means from summed statistics (pure numpy): what one party computes from its embeddings, and what
every party derives from the consortium's sums. Summed sufficient statistics make each Lloyd round exact: the
centroids of the federated round are the pooled round's (Lloyd 1982; the federated form as in Dennis et al. 2021's
k-FED without its one-shot approximation).

Initialisation without pooling: round 0 sums Σx, Σxxᵀ and the document count; every party derives the same mean μ
and the top principal directions e_i (eigenvalues λ_i) and draws the same k seeded starts c_j ∝ μ + Σ_i g_ji
√λ_i e_i (g ~ N(0, 1)): samples of the Gaussian fitted to the consortium's embeddings, a document-free k-means
start. BERTopic reduces with UMAP and clusters with HDBSCAN, which need every pairwise neighbourhood; here the
clustering runs in the embedding space itself (docs/algorithms.md says what that costs).
"""

from __future__ import annotations

import numpy as np

COMPONENTS = 50
"""Principal directions the starts are drawn in (at most the embedding's width)."""


def moment_update(x: np.ndarray) -> np.ndarray:
    """float64[d + d² + 1]: Σx, Σxxᵀ (row-major) and the count of embeddings ``x`` [D, d]."""
    x = np.asarray(x, dtype=np.float64)
    return np.concatenate([x.sum(axis=0), (x.T @ x).reshape(-1), [float(len(x))]])


def starts(moments: np.ndarray, d: int, k: int, seed: int) -> np.ndarray:
    """float64[k, d] unit starting centroids from the summed ``moment_update``s (the same for every party)."""
    total, second, n = moments[:d], moments[d:d + d * d].reshape(d, d), max(float(moments[-1]), 1.0)
    mean = total / n
    cov = second / n - np.outer(mean, mean)
    values, vectors = np.linalg.eigh((cov + cov.T) / 2.0)
    top = np.argsort(values)[::-1][:min(COMPONENTS, d)]
    # an eigenvector's sign is arbitrary (a last-bit change of the moments can flip it): fix it by its largest
    # entry, so that sums of the same moments in another order give the same starts
    vectors = vectors * np.where(vectors[np.abs(vectors).argmax(axis=0), np.arange(d)] < 0, -1.0, 1.0)
    scale = np.sqrt(np.clip(values[top], 0.0, None))
    g = np.random.default_rng(seed).standard_normal((k, len(top)))
    return unit_rows(mean[None, :] + (g * scale[None, :]) @ vectors[:, top].T)


def assign(x: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """int64[D]: the centroid of highest cosine for each unit embedding (ties: the lower index)."""
    if len(x) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.argmax(np.asarray(x, dtype=np.float64) @ centroids.T, axis=1).astype(np.int64)


def lloyd_update(x: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """float64[k·d + k]: per-cluster sums (row-major) and counts of ``x`` assigned to ``centroids`` [k, d]."""
    k, d = centroids.shape
    labels = assign(x, centroids)
    sums = np.zeros((k, d))
    np.add.at(sums, labels, np.asarray(x, dtype=np.float64))
    return np.concatenate([sums.reshape(-1), np.bincount(labels, minlength=k).astype(np.float64)])


def lloyd_step(summed: np.ndarray, centroids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(new unit centroids [k, d], documents per cluster [k]) from the summed ``lloyd_update``s; a cluster with no
    document keeps its centroid."""
    k, d = centroids.shape
    sums, counts = summed[:k * d].reshape(k, d), summed[k * d:k * d + k]
    fresh = unit_rows(sums)
    empty = (counts <= 0) | (np.linalg.norm(sums, axis=1) == 0)
    fresh[empty] = centroids[empty]
    return fresh, counts


def described(x: np.ndarray, centroids: np.ndarray, outlier_cosine: float) -> np.ndarray:
    """bool[D]: the documents whose words describe their cluster: non-empty, and with a cosine of at least
    ``outlier_cosine`` to the centroid they are assigned (the others are outliers, BERTopic's topic −1: assigned,
    in θ, but out of the c-TF-IDF counts). Centroids need not be unit length (DP's are not)."""
    x = np.asarray(x, dtype=np.float64)
    if len(x) == 0:
        return np.zeros(0, dtype=bool)
    cosine = np.max(x @ unit_rows(centroids).T, axis=1)
    return (np.linalg.norm(x, axis=1) > 0) & (cosine >= outlier_cosine)


def outliers(x: np.ndarray, kept: np.ndarray) -> int:
    """How many non-empty documents of ``x`` [D, d] ``described`` left out (``kept`` bool[D])."""
    return int(np.count_nonzero(np.linalg.norm(x, axis=1) > 0) - np.count_nonzero(kept))


def centroid_shift(before: np.ndarray, after: np.ndarray) -> float:
    """The Lloyd round's quality figure: the largest 1 − cosine between a unit centroid row before and after."""
    return float(np.max(1.0 - np.sum(before * after, axis=1)))


def soft_membership(x: np.ndarray, centroids: np.ndarray, temperature: float) -> np.ndarray:
    """float64[D, K] θ: softmax of each embedding's cosines to the ``centroids`` over ``temperature``."""
    logits = np.asarray(x, dtype=np.float64) @ centroids.T / temperature
    logits -= logits.max(axis=1, keepdims=True) if len(logits) else 0.0
    e = np.exp(logits)
    return e / e.sum(axis=1, keepdims=True)


def unit_rows(x: np.ndarray) -> np.ndarray:
    """``x`` with every non-zero row scaled to length 1."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x, dtype=np.float64), where=norms > 0)
