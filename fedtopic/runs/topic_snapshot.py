"""A party's latest topics, beside its history: what the dashboard's topic panel reads while a run goes.

Every round whose history line carries top words (``history.top_words_due``, and a synchronous party's last),
the party runtime also overwrites ``<history>.topics.json`` (``simulate``: ``history/<party>.topics.json``;
``node run``: ``state/<party>/history.topics.json``) atomically. Schema ``fedtopic-topics/1``:

``party``, ``algorithm``, ``round``, ``time``; ``prevalence`` (float[K], each topic's share, or null where the
algorithm has none); ``topics``: per topic ``{"words", "weights", "marginal"}``: the relevance candidates of
``eval.topic_view.relevance_candidates`` (≤ 20 words per λ of the grid, heaviest first), φ_kw of each and the
word's marginal p_w, so a page can rank them for any λ without Φ; ``map``: the topics' 2-D map drawn from the whole
Φ (principal coordinates of the Jensen–Shannon distances), or null beyond ``MAP_WORK``. A whole Φ is never written
(K × V floats can be hundreds of MB; the candidates are a few kB per topic).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.eval.coherence import heaviest_ids
from fedtopic.eval.topic_view import marginal, relevance_candidates, topic_map
from fedtopic.runs.history import TOP_WORDS, top_words_of
from fedtopic.runs.json_text import dumps
from fedtopic.temp_names import sibling_temp

SCHEMA = "fedtopic-topics/1"
CANDIDATES = 20  # words per λ of the grid


def snapshot_path(history: Path) -> Path:
    """Where the topic snapshot of the party whose history is ``history`` lives."""
    return history.with_suffix(".topics.json")


def distribution_of(party: Any) -> tuple[np.ndarray, np.ndarray | None] | None:
    """(Φ float64[K,V] rows summing to 1, prevalence float64[K] or None) of a party that offers
    ``topic_distribution``; None for one that does not."""
    get = getattr(party, "topic_distribution", None)
    return None if get is None else get()


def top_of(phi: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """int64[K,n] ids of each topic's n heaviest words (ties: lower id) and float64[K,n] their weights."""
    ids = heaviest_ids(phi, n)
    return ids, np.take_along_axis(phi, ids, axis=1)


def build_snapshot(phi: np.ndarray, prevalence: np.ndarray | None, vocab: Sequence[str], *, party: str,
                   algorithm: str, round: int) -> dict[str, Any]:
    """The ``fedtopic-topics/1`` object of Φ [K,V] and prevalence [K] (module docstring)."""
    k = phi.shape[0]
    share = np.full(k, 1.0 / k) if prevalence is None else np.asarray(prevalence, dtype=np.float64)
    p_w = marginal(phi, share)
    topics = []
    for row, ids in enumerate(relevance_candidates(phi, p_w, CANDIDATES)):
        topics.append({"words": [vocab[int(i)] for i in ids], "weights": _short(phi[row, ids]),
                       "marginal": _short(p_w[ids])})
    return {"schema": SCHEMA, "party": party, "algorithm": algorithm, "round": int(round), "time": time.time(),
            "prevalence": None if prevalence is None else _short(share), "topics": topics, "map": _map(phi)}


MAP_WORK = 2 * 10**8
"""K² × V at most for a map drawn from the whole Φ (K = 100 at V = 20,000: a tenth of a second); beyond it the page
draws it from the candidate words."""


def _map(phi: np.ndarray) -> list[list[float]] | None:
    """The topics' 2-D map from the whole Φ (principal coordinates of the Jensen–Shannon distances, as pyLDAvis),
    or None when that would cost more than ``MAP_WORK``."""
    k, v = phi.shape
    if k < 2 or k * k * v > MAP_WORK:
        return None
    return [[round(float(x), 5), round(float(y), 5)] for x, y in topic_map(phi)]


def _short(values: np.ndarray) -> list[float]:
    """Floats rounded to 5 significant digits (the page shows 3; the file stays small)."""
    return [float(f"{x:.5g}") for x in np.asarray(values, dtype=np.float64)]


def write_snapshot(path: Path, snapshot: dict[str, Any]) -> None:
    """Replace ``path`` with ``snapshot`` atomically (a reader sees the old file or the new one, never half)."""
    tmp = sibling_temp(path)
    tmp.write_text(dumps(snapshot, indent=None), encoding="utf-8")
    tmp.replace(path)


def record_topics(party: Any, vocab: Sequence[str], history: Path | None, *, algorithm: str,
                  round: int) -> tuple[list[list[str]] | None, list[list[float]] | None, list[float] | None]:
    """The history line's ``top_words``, ``top_weights`` and ``prevalence`` of ``party``'s current model; writes
    its topic snapshot beside ``history`` on the way. A party without ``topic_distribution`` gives its
    ``top_words_ids`` and no weights."""
    dist = distribution_of(party)
    if dist is None:
        ids = party.top_words_ids(TOP_WORDS)
        return (None if ids is None else top_words_of(ids, vocab)), None, None
    phi, prevalence = dist
    ids, weights = top_of(phi, TOP_WORDS)
    if history is not None:
        write_snapshot(snapshot_path(history), build_snapshot(phi, prevalence, vocab, party=party.party_id,
                                                              algorithm=algorithm, round=round))
    return (top_words_of(ids, vocab), [_short(row) for row in weights],
            None if prevalence is None else _short(prevalence))
