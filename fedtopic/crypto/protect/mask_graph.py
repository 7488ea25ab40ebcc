"""Which parties share a pairwise mask under ``mask``: a sparse neighbour graph, as SecAgg+ does.

Bonawitz et al. (CCS 2017) mask every pair of parties: P - 1 keystreams per
party and round, P² in all. Bell et al. (SecAgg+, CCS 2020) show that masking
along the edges of a sparse graph of degree k = O(log P) keeps the guarantee
that matters, that the aggregator learns only sums over connected sets of
honest parties, at a cost of k keystreams per party. This module is that
graph; ``mask`` builds its pairwise masks and recoveries on it.

The graph: the P session parties are placed on a ring in an order drawn from
the session id (``ring``), and each is joined to the h = k/2 parties on
either side of it (a Harary / circulant graph C_P(1..h) on a random ring; the
complete graph when k >= P - 1). Anyone who knows the session id and P
derives the same graph: the aggregator to know whose recovery a dropout
needs, the parties to know with whom they share masks. The ring is a
Fisher-Yates shuffle driven by SHAKE-256 of the session id, not NumPy's
generator, whose stream may differ between the versions two machines run.

Guarantee. Let R be the parties the aggregator can remove from the picture:
the parties colluding with it (they hand over their keys) and the parties that
dropped out (their masks with survivors are revealed for recovery). The
masked updates of the honest contributors then tell the aggregator nothing
beyond the sums over the connected components of the graph without R (each
component's masks are uniform and cancel only in that component's sum).

Lemma (tested exhaustively in ``test_mask_graph.py``): on the ring, the
remaining parties stay connected unless R holds h consecutive ring positions
in at least two places. Going round the ring, two successive remaining parties
are joined whenever fewer than h removed positions lie between them, so the
ring of remaining parties breaks only at gaps of h or more, and one break
leaves a path. Hence

- **deterministically**, any |R| < k = 2h leaves the honest contributors
  connected (the circulant graph is k-connected), whatever R is;
- **for R fixed independently of the session id**, Pr[disconnected] <=
  Pr[some h consecutive positions all in R] <= P · (|R| / P)^h (a union bound
  over the P starting positions; h given positions all fall in R with
  probability C(P - h, |R| - h) / C(P, |R|) <= (|R| / P)^h).

``default_degree`` picks the smallest h with P · (1/3)^h <= 2^-40: with up to
a third of the parties colluding or dropped, the graph splits with probability
at most 2^-40 (k = 60 at 100 parties, 64 at 1,000). The self masks, which need
the consortium secret the aggregator never holds, hide every sum from an
aggregator that colludes with no party, whatever the graph.
"""

from __future__ import annotations

import functools
import hashlib
import math

_RING_LABEL = b"fedtopic/mask/ring/v1\x00"
SECURITY_BITS = 40
"""-log2 of the chance that a third of the parties, colluding or dropped, split the graph (``default_degree``)."""
REMOVED_FRACTION = 1 / 3
"""The share of colluding plus dropped parties ``default_degree`` is sized for."""


def default_degree(parties: int) -> int:
    """k = 2h, the smallest h with P · (1/3)^h <= 2^-40, or P - 1 (every pair) when that is no more."""
    if parties <= 2:
        return max(parties - 1, 0)
    h = math.ceil((math.log2(parties) + SECURITY_BITS) / -math.log2(REMOVED_FRACTION))
    return min(parties - 1, 2 * h)


def check_degree(parties: int, degree: int) -> str | None:
    """Why ``degree`` is no neighbour-graph degree for ``parties`` parties, or None if it is one."""
    if not isinstance(degree, int) or isinstance(degree, bool):
        return f"the mask graph degree must be an integer, got {degree!r}"
    if parties == 1:
        return None if degree == 0 else f"one party has no neighbours, not {degree}"
    if not 1 <= degree <= parties - 1:
        return f"the mask graph degree must be in [1, {parties - 1}] for {parties} parties, got {degree}"
    if degree < parties - 1 and degree % 2:
        return f"the mask graph degree must be even (h neighbours either side) or {parties - 1}, got {degree}"
    return None


@functools.lru_cache(maxsize=16)
def ring(session: str, parties: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(order, position): ``order[r]`` is the party at ring position r, ``position[i]`` the position of party i.

    A Fisher-Yates shuffle of 0..P-1 whose j-th swap index is a 64-bit word of SHAKE-256(label, session) mod
    (j + 1); the modulo bias is below 2^-51 for P <= 4,096.
    """
    words = hashlib.shake_256(_RING_LABEL + session.encode("utf-8")).digest(8 * parties)
    order = list(range(parties))
    for j in range(parties - 1, 0, -1):
        r = int.from_bytes(words[8 * j:8 * j + 8], "little") % (j + 1)
        order[j], order[r] = order[r], order[j]
    position = [0] * parties
    for r, party in enumerate(order):
        position[party] = r
    return tuple(order), tuple(position)


def neighbours(session: str, parties: int, degree: int, index: int) -> tuple[int, ...]:
    """The parties (increasing session indices) with whom party ``index`` shares a pairwise mask."""
    if degree >= parties - 1:
        return tuple(j for j in range(parties) if j != index)
    order, position = ring(session, parties)
    at, h = position[index], degree // 2
    return tuple(sorted(order[(at + d) % parties] for d in range(-h, h + 1) if d))


def adjacent_to(session: str, parties: int, degree: int, dropped: set[int]) -> set[int]:
    """Every party outside ``dropped`` that shares a mask with one in it (whose recovery the dropout needs)."""
    out: set[int] = set()
    for d in dropped:
        out.update(neighbours(session, parties, degree, d))
    return out - dropped
