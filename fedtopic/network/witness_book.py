"""The aggregator's side of the parties' witnesses (``crypto.witness``): keep a member's witness once it is the
member's signature of the aggregates this aggregator served, and answer the witnesses overlapping a span.

Refusing a witness whose digests are not the aggregates held (422 ``wrong_witness``, nothing stored) is what makes
a lying member harmless: a false witness would otherwise stop every honest party that reads it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from fedtopic.crypto.witness import MAX_SPAN, Witness, witness_signed_by
from fedtopic.network.errors import Rejection
from fedtopic.network.store import Store


class WitnessBook:
    """Witnesses of every session in ``store``; ``members``: party → address, whose keys sign them."""

    def __init__(self, store: Store, members: Mapping[str, str]) -> None:
        self.store, self.members = store, dict(members)
        self._lock = threading.Lock()

    def post(self, sid: str, open_round: int, witness: Witness) -> None:
        """Keep ``witness`` of session ``sid`` (whose open round is ``open_round``): 409 if a round of its span has
        not closed or the member already witnessed another span ending there, 422 if it is not the member's
        signature or not the aggregates held; the same witness again is a no-op."""
        party, first, last = witness.party, witness.first, witness.last
        if len(witness.digests) > MAX_SPAN:
            raise Rejection(422, "invalid_witness", f"a witness covers at most {MAX_SPAN} rounds")
        if last >= open_round:
            raise Rejection(409, "round_not_closed", f"round {last} has no aggregate to witness yet")
        if not witness_signed_by(self.members[party], sid, witness):
            raise Rejection(422, "invalid_witness", f"the witness of {party!r} for rounds {first}-{last} is not "
                            "signed by its key")
        held = self.store.aggregate_digests(sid, first, last)
        for rnd in range(first, last + 1):
            served = held.get(rnd)
            if served != witness.digest(rnd):
                what = "no aggregate" if served is None else f"{served[:12]}…"
                raise Rejection(422, "wrong_witness", f"{party!r} witnesses aggregate {witness.digest(rnd)[:12]}… "
                                f"for round {rnd}; this aggregator served {what}")
        with self._lock:
            same_end = [w for w in self.store.witnesses(sid, last, last) if w.party == party and w.last == last]
            if same_end and same_end[0] != witness:
                raise Rejection(409, "witness_conflict", f"{party!r} already witnessed a span ending at round {last}")
            if not same_end:
                self.store.add_witness(sid, witness)

    def overlapping(self, sid: str, first: int, last: int) -> list[Witness]:
        """Every member's witness whose span overlaps rounds ``first`` … ``last``."""
        return self.store.witnesses(sid, first, last)
