"""What the aggregator's initializer checks before a session exists: its combiner (known here, and not weaker
than the consortium's protection), its parties, its meta and what one round of it may cost in memory.

Pure functions of the request and the aggregator's settings: ``Aggregator.open_session`` calls ``checked_spec``
before it takes its lock, so a refused open costs no state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fedtopic.network.combiners import Combiner
from fedtopic.network.errors import InvalidMeta, Rejection
from fedtopic.network.schemas import SessionCreate


def checked_spec(req: SessionCreate, by: str, *, combiners: Mapping[str, Combiner], allowed: frozenset[str] | None,
                 protection: str, members: Mapping[str, str], memory_budget: int,
                 default_deadline: float) -> tuple[Combiner, dict[str, Any]]:
    """(the session's combiner, its spec as stored) for ``by``'s request; Rejection (422/403) naming what is
    wrong otherwise."""
    combiner_name = req.combiner or protection
    if combiner_name not in combiners:
        raise Rejection(422, "unknown_combiner", f"combiner {combiner_name!r} is not available here "
                        f"(registered: {', '.join(sorted(combiners))})")
    if allowed is not None and combiner_name not in allowed:
        raise Rejection(422, "weaker_than_consortium", f"this consortium protects its updates with "
                        f"{protection!r}; a session of combiner {combiner_name!r} would show this aggregator "
                        f"more (allowed: {', '.join(sorted(allowed))})")
    unknown = [p for p in req.parties if p not in members]
    if unknown:
        raise Rejection(422, "unknown_party", f"parties not in the consortium: {', '.join(unknown)}")
    if len(set(req.parties)) != len(req.parties):
        raise Rejection(422, "duplicate_party", "session parties must be listed once each")
    if by not in req.parties:
        raise Rejection(403, "not_in_session", f"party {by!r} cannot open a session it is not a member of")
    combiner = combiners[combiner_name]
    least = min_contributors(combiner, req.meta)
    asked = req.meta.get("min_contributors") if isinstance(req.meta, Mapping) else None
    if asked is not None and (isinstance(asked, bool) or not isinstance(asked, int) or
                              not 1 <= asked <= len(req.parties)):
        raise Rejection(422, "invalid_meta", f"meta.min_contributors must be an integer in [1, "
                        f"{len(req.parties)}], got {asked!r}")
    if len(req.parties) < least:
        raise Rejection(422, "too_few_parties", f"combiner {combiner_name!r} releases only sums of {least} or "
                        f"more updates (a masked sum of one is that update); the session lists {len(req.parties)}")
    try:
        combiner.check_meta(req.meta)
        need = session_memory(combiner, req.meta, len(req.parties))
    except InvalidMeta as exc:
        raise Rejection(422, "invalid_meta", str(exc)) from None
    if need > memory_budget:
        raise Rejection(422, "session_too_large",
                        f"{len(req.parties)} parties × the largest update of meta.shape {req.meta.get('shape')} "
                        f"need {need / 2**20:,.0f} MiB; this aggregator's memory budget is "
                        f"{memory_budget / 2**20:,.0f} MiB")
    spec = json.loads(json.dumps({
        "parties": list(req.parties), "combiner": combiner_name, "meta": req.meta, "params": req.params,
        "straggler_deadline_seconds": req.straggler_deadline_seconds or default_deadline,
    }))
    return combiner, spec


def min_contributors(combiner: Combiner, meta: Mapping[str, Any]) -> int:
    """The fewest updates a round of this session may release a sum of: the combiner's (one for a combiner that
    does not say: a plain sum), or more when the session's meta plans on more (``min_contributors``: distributed DP,
    whose noise shares are sized for that many)."""
    asked = meta.get("min_contributors") if isinstance(meta, Mapping) else None
    own = int(getattr(combiner, "min_contributors", 1))
    return max(own, asked) if isinstance(asked, int) and not isinstance(asked, bool) else own


def session_memory(combiner: Combiner, meta: Mapping[str, Any], parties: int) -> int:
    """Bytes one round of a session may hold: every party's largest update, plus a combine's working arrays
    (three int64 V×K-sized arrays for the count formats, the accumulator and output for dense ones)."""
    bound = combiner.max_update_bytes(meta)
    shape = meta.get("shape") or [1]
    cells = 1
    for n in shape:
        cells *= int(n)
    return parties * bound + 3 * 8 * cells
