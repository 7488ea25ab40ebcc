"""A consortium's runs on the same channels, without a redeploy: run r's round t is chain round (r − 1)·2^32 + t.

A channel contract only takes rounds that strictly increase (``PartyChannel.publish``), so a second run cannot
start again at round 0. Each run gets its own span of 2^32 rounds instead: run 1 is rounds 0, 1, …, as before;
run 2 starts at 2^32, run 3 at 2·2^32 (uint64 rounds hold 2^32 runs). A reader in run r takes only rounds of its
span: a channel whose latest round lies below it has not started run r yet, one above it is in a later run (this
party is behind: it must start again with ``--fresh``). Every publication of run r ≥ 2 also names its run in its
session card (``crypto/card.py``), so counts of two runs are never mixed.

A party's run is the one after its own channel's latest (``node run --fresh``), the one its state folder records
(a resumed party), or the one given (``--run``, for a party that joins a consortium already past run 1).
"""

from __future__ import annotations

RUN_SPAN = 1 << 32
MAX_RUN = 1 << 31
"""The largest run number a consortium may use (a uint64 round holds far more; this keeps the numbers readable)."""


def run_base(run: int) -> int:
    """The chain round of run ``run``'s round 0."""
    if not 1 <= run <= MAX_RUN:
        raise ValueError(f"a run number is from 1 to {MAX_RUN}, got {run}")
    return (run - 1) * RUN_SPAN


def run_of(chain_round: int) -> int:
    """The run a chain round belongs to."""
    return chain_round // RUN_SPAN + 1


def local_round(chain_round: int) -> int:
    """A chain round's round within its run (what the party's own history calls it)."""
    return chain_round % RUN_SPAN


def shown_round(chain_round: int | None) -> str:
    """A chain round as people read it: "t" in run 1, "t (run r)" after; "-" for none."""
    if chain_round is None:
        return "-"
    run = run_of(chain_round)
    return f"{local_round(chain_round)}" + ("" if run == 1 else f" (run {run})")


def next_run(latest_chain_round: int | None) -> int:
    """The run a fresh start takes after a channel whose latest round is ``latest_chain_round`` (None: never
    published: run 1)."""
    return 1 if latest_chain_round is None else run_of(latest_chain_round) + 1
