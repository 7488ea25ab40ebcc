"""What a topic browser shows of a model: relevance-ranked words, a 2-D map of the topics, topic ids kept stable
across snapshots and each topic's drift. Pure functions of Φ; the dashboard and ``fedtopic report`` call them.

Relevance (Sievert and Shirley 2014, Eq. 1): r(w, k | λ) = λ log φ_kw + (1 − λ) log(φ_kw / p_w), with p_w the
word's marginal probability Σ_k p(k) φ_kw. A page ranks words for any λ the user picks from a short candidate
list per topic: the union of the top ``n`` words under relevance at every λ of a grid (as LDAvis does with its
λ step), so a λ on the grid ranks exactly and one between grid points ranks among the words that lead at its
neighbours.

Map: Jensen–Shannon divergence between the topics' word distributions, scaled to two dimensions by classical
multidimensional scaling (principal coordinates), LDAvis's default; a circle's area is the topic's prevalence.

Stable ids: a new snapshot's topics are matched one to one to the previous snapshot's by the Hungarian method on
their Hellinger distance (over the words both snapshots list, a small bonus for keeping a topic's position), so a
topic keeps its id when an algorithm renumbers or grows its topics (iFTM). Drift is that distance to the matched
predecessor, on what the history records of a topic (its ``TOP_WORDS`` heaviest words with their φ_kw): each word
either snapshot lists is a cell (0 where a snapshot does not list it) and one more cell holds each snapshot's
unlisted mass; 0 (the same) … 1 (nothing shared). Where the top words are the same at both snapshots this is a
coarse-graining of the whole distributions, so a lower bound of their Hellinger distance; where they change, the
words that entered or left count in full. Renormalising the listed words alone, as before, overstated a small move
when the weights of the listed words shifted (issue 46, item 3; ``tests/test_topic_view.py`` checks both against
direct computations).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numba import njit
from scipy.optimize import linear_sum_assignment

LAMBDA_GRID = tuple(round(0.1 * i, 1) for i in range(11))
IDENTITY_BONUS = 0.15  # Hellinger a topic may move and still keep its position's id (see match_topics)


def marginal(phi: np.ndarray, prevalence: np.ndarray) -> np.ndarray:
    """float64[V]: p_w = Σ_k p(k) φ_kw, from Φ [K,V] (rows sum to 1) and prevalence [K] (sums to 1)."""
    return np.asarray(prevalence, dtype=np.float64) @ np.asarray(phi, dtype=np.float64)


def relevance(phi: np.ndarray, p_w: np.ndarray, lam: float) -> np.ndarray:
    """float64[K,V]: r(w, k | λ) (module docstring); a word with φ_kw = 0 scores −inf."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return _relevance_of_logs(np.log(phi), np.log(p_w)[None, :], lam)


def _relevance_of_logs(log_phi: np.ndarray, log_pw: np.ndarray, lam: float) -> np.ndarray:
    """``relevance`` from log Φ [K,V] and log p_w [1,V] (candidates take the logs once for the whole λ grid)."""
    with np.errstate(invalid="ignore"):
        return lam * log_phi + (1.0 - lam) * (log_phi - log_pw)


def relevance_candidates(phi: np.ndarray, p_w: np.ndarray, n: int = 20,
                         grid: Sequence[float] = LAMBDA_GRID) -> list[np.ndarray]:
    """Per topic, int64[≤ n·len(grid)] word ids: the union of its top ``n`` words under relevance at every λ of
    ``grid`` (words with φ_kw = 0 never; ties at the n-th place to the lower id), ordered by φ_kw descending
    (ties: lower id). One pass over each topic's words in numba keeps every λ's top n at once: 11
    ``argpartition``s of K×V scores and a Python loop over their picks took 0.26 s at K = 200, V = 15,184."""
    phi = np.ascontiguousarray(phi, dtype=np.float64)
    n = min(n, phi.shape[1])
    if n <= 0:
        return [np.zeros(0, dtype=np.int64) for _ in range(phi.shape[0])]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_phi, log_pw = np.log(phi), np.log(np.asarray(p_w, dtype=np.float64))
    top = _top_by_relevance(log_phi, log_pw, np.asarray(grid, dtype=np.float64), n)
    out = []
    for k in range(phi.shape[0]):
        ids = np.unique(top[k][top[k] >= 0])
        out.append(ids[np.lexsort((ids, -phi[k, ids]))])
    return out


@njit(cache=True, nogil=True)
def _top_by_relevance(log_phi, log_pw, lams, n):
    """int64[K, len(lams), n]: per topic and λ the ids of the n highest finite relevance scores (as
    ``_relevance_of_logs`` computes them), −1 where fewer; a later word replaces the n-th only when strictly
    higher, so ties go to the lower id."""
    k_topics, v = log_phi.shape
    n_lams = lams.shape[0]
    top = np.full((k_topics, n_lams, n), -1, dtype=np.int64)
    best = np.empty((n_lams, n), dtype=np.float64)  # each λ's scores kept, descending
    count = np.zeros(n_lams, dtype=np.int64)
    for k in range(k_topics):
        count[:] = 0
        for w in range(v):
            lp = log_phi[k, w]
            if not np.isfinite(lp):  # φ_kw = 0: −inf or NaN at every λ
                continue
            for j in range(n_lams):
                lam = lams[j]
                r = lam * lp + (1.0 - lam) * (lp - log_pw[w])
                if not np.isfinite(r):
                    continue
                c = count[j]
                if c == n and not r > best[j, n - 1]:
                    continue
                at = c if c < n else n - 1  # the slot freed at the end, then shifted into place
                while at > 0 and r > best[j, at - 1]:
                    best[j, at] = best[j, at - 1]
                    top[k, j, at] = top[k, j, at - 1]
                    at -= 1
                best[j, at] = r
                top[k, j, at] = w
                count[j] = min(c + 1, n)
    return top


def jensen_shannon(phi: np.ndarray) -> np.ndarray:
    """float64[K,K] Jensen–Shannon divergence (natural log, in [0, ln 2]) between every pair of rows of Φ."""
    p = np.asarray(phi, dtype=np.float64)
    k = p.shape[0]
    out = np.zeros((k, k))
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = np.where(p > 0, np.log(p), 0.0)
        for i in range(k):
            m = 0.5 * (p[i][None, :] + p)
            logm = np.where(m > 0, np.log(m), 0.0)
            kl_i = np.sum(np.where(p[i] > 0, p[i] * (logp[i] - logm), 0.0), axis=1)
            kl_j = np.sum(np.where(p > 0, p * (logp - logm), 0.0), axis=1)
            out[i] = 0.5 * (kl_i + kl_j)
    np.fill_diagonal(out, 0.0)
    return np.maximum(out, 0.0)


def principal_coordinates(dist: np.ndarray) -> np.ndarray:
    """float64[K,2]: classical MDS of a distance matrix [K,K] (double-centred −½D², top two eigenvectors scaled
    by √eigenvalue; a sign convention makes the result deterministic: each axis's largest |coordinate| is
    positive). K < 3 or a degenerate spectrum gives zeros on the missing axes."""
    d = np.asarray(dist, dtype=np.float64)
    k = d.shape[0]
    out = np.zeros((k, 2))
    if k < 2:
        return out
    j = np.eye(k) - 1.0 / k
    b = -0.5 * j @ (d**2) @ j
    values, vectors = np.linalg.eigh((b + b.T) / 2)
    order = np.argsort(values)[::-1][:2]
    for axis, idx in enumerate(order):
        if values[idx] <= 1e-12:
            continue
        col = vectors[:, idx] * np.sqrt(values[idx])
        if col[np.argmax(np.abs(col))] < 0:
            col = -col
        out[:, axis] = col
    return out


def topic_map(phi: np.ndarray) -> np.ndarray:
    """float64[K,2]: the topics' 2-D map (JS divergence → principal coordinates)."""
    return principal_coordinates(np.sqrt(jensen_shannon(phi)))


def _probabilities(topic: Mapping[str, float]) -> dict[str, float]:
    """A topic given as word → weight as word → probability: weights that sum to at most 1 are φ_kw of the listed
    words already; others (rank weights) are renormalised over the words listed."""
    total = sum(topic.values())
    return dict(topic) if total <= 1.0 + 1e-9 else {w: x / total for w, x in topic.items()}


def _rest(listed: float) -> float:
    """The unlisted mass 1 − ``listed``, 0 within rounding (its square root would turn 1e-16 into 1e-8)."""
    rest = 1.0 - listed
    return rest if rest > 1e-9 else 0.0


def hellinger_sparse(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Hellinger distance in [0, 1] between two topics given as word → weight (``_probabilities``): each word
    either lists is a cell (a word one topic does not list weighs 0 there), and one more cell holds each topic's
    unlisted mass (1 − its listed weights). Empty topics are 1 from everything. See the module docstring for how
    close this is to the distance over the whole vocabulary."""
    pa, pb = _probabilities(a), _probabilities(b)
    if not pa or not pb or sum(pa.values()) <= 0 or sum(pb.values()) <= 0:
        return 1.0
    rest_a, rest_b = _rest(sum(pa.values())), _rest(sum(pb.values()))
    shared = sum(np.sqrt(pa[w] * pb[w]) for w in pa.keys() & pb.keys()) + np.sqrt(rest_a * rest_b)
    return float(np.sqrt(max(0.0, 1.0 - shared)))


def hellinger_matrix(a: Sequence[Mapping[str, float]], b: Sequence[Mapping[str, float]]) -> np.ndarray:
    """float64[len(a), len(b)]: ``hellinger_sparse`` of every pair, as one product of square-root matrices over the
    union of the words listed (K² pairs in milliseconds at K = 1,000)."""
    words: dict[str, int] = {}
    for topic in (*a, *b):
        for w in topic:
            words.setdefault(w, len(words))

    def probabilities(topics: Sequence[Mapping[str, float]]) -> np.ndarray:
        """float64[len(topics), words + 1]: the listed words' probabilities, then the unlisted mass."""
        m = np.zeros((len(topics), len(words) + 1))
        for i, topic in enumerate(topics):
            for w, x in _probabilities(topic).items():
                m[i, words[w]] = x
            m[i, -1] = _rest(float(m[i, :-1].sum()))
        return m

    pa, pb = probabilities(a), probabilities(b)
    shared = np.sqrt(pa) @ np.sqrt(pb).T
    pa, pb = pa[:, :-1], pb[:, :-1]
    empty = (pa.sum(axis=1)[:, None] == 0) | (pb.sum(axis=1)[None, :] == 0)
    return np.where(empty, 1.0, np.sqrt(np.maximum(0.0, 1.0 - shared)))


def match_topics(previous: Sequence[Mapping[str, float]], current: Sequence[Mapping[str, float]],
                 previous_ids: Sequence[int]) -> tuple[list[int], list[float | None]]:
    """Stable ids and drifts for ``current`` topics (word → weight each) given the ``previous`` snapshot's topics
    and their ids: each current topic matched one to one (Hungarian, Hellinger cost, with ``IDENTITY_BONUS``
    off the cost of keeping its position: the algorithms here keep topic positions across rounds, and early rounds
    move topics a lot, so an id changes hands only when a renumbering is clearly better) takes its partner's id
    and drift = their distance; a topic left without a partner (more topics than before) takes the next unused id and
    drift None."""
    if not previous:
        return list(range(len(current))), [None] * len(current)
    cost = hellinger_matrix(previous, current)
    prefer = cost.copy()
    n = min(len(previous), len(current))
    prefer[np.arange(n), np.arange(n)] -= IDENTITY_BONUS  # keep positions unless a renumbering is clearly better
    rows, cols = linear_sum_assignment(prefer)
    ids: list[int | None] = [None] * len(current)
    drift: list[float | None] = [None] * len(current)
    for r, c in zip(rows, cols, strict=True):
        ids[c], drift[c] = int(previous_ids[r]), float(cost[r, c])
    fresh = max(previous_ids, default=-1) + 1
    for c in range(len(current)):
        if ids[c] is None:
            ids[c], fresh = fresh, fresh + 1
    return [int(i) for i in ids if i is not None], drift
