"""One gFedNTM node's protocol over the aggregator: its document count once, then five sums per mini-batch step.

Sessions (one per message kind, so each has a fixed length): ``<base>-size`` (every node's N_ℓ, at its index),
``<base>-enc``, ``-dec``, ``-gdec``, ``-genc``, ``-grad`` (``neural.sync_opt``'s phases, round = step). Under
``mask`` the aggregator learns none of them, not even the sums; the nodes learn the sums, i.e. the union
batch's BatchNorm statistics and gradient, which is what a centralised trainer would see. Stopping: the epoch
budget or a relative weight change below ``tolerance`` (every node computes the same number, no message).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass

import numpy as np

from fedtopic.crypto.keys import PartyKeys
from fedtopic.network.client import AggregatorClient
from fedtopic.node.dense_session import DenseSession, open_dense_session


@dataclass
class EpochRecord:
    """One epoch as the node saw it."""

    epoch: int
    steps: int
    relative_change: float
    seconds: float
    bytes_sent: int


def run_gfedntm_node(node, url: str, keys: PartyKeys, ids: Sequence[str], publics: Sequence[bytes], *,
                     session: str, protection: str, params: dict, patience: float = 600.0,
                     round_timeout: float = 3600.0, on_epoch: Callable[[EpochRecord], None] | None = None
                     ) -> list[EpochRecord]:
    """Train ``node`` (a ``FederatedNode``) to the end; its final W is in ``node.flat``."""
    sizes_of = {"size": len(ids), **node.phase_sizes()}
    sent = [0]
    with ExitStack() as stack:
        sessions: dict[str, DenseSession] = {}
        for phase, n in sizes_of.items():
            client = stack.enter_context(AggregatorClient(url, keys, f"{session}-{phase}", patience=patience))
            sessions[phase] = open_dense_session(client, ids, keys, publics, protection=protection, n=n,
                                                 params=params | {"phase": phase}, timeout=round_timeout)
        own = np.zeros(len(ids))
        own[list(ids).index(keys.party_id)] = node.counts.shape[0]
        totals, _, _ = sessions["size"].exchange(own, 0, round_timeout)
        sizes = [int(round(x)) for x in totals]

        def total(phase: str, step: int, vector: np.ndarray) -> np.ndarray:
            out, _, n_bytes = sessions[phase].exchange(vector, step, round_timeout)
            sent[0] += n_bytes
            return out

        records = []
        for _ in range(node.settings.epochs):
            t0, steps0, bytes0 = time.perf_counter(), node.step, sent[0]
            change = node.train_epoch(sizes, total)
            rec = EpochRecord(node.epoch, node.step - steps0, change, time.perf_counter() - t0, sent[0] - bytes0)
            records.append(rec)
            if on_epoch is not None:
                on_epoch(rec)
            if change < node.settings.tolerance:
                break
    return records
