"""One gFedNTM node's protocol over the aggregator: its document count once, then five sums per mini-batch step.

Sessions (one per message kind, so each has a fixed length): ``<base>-size`` (every node's N_ℓ, at its index),
``<base>-enc``, ``-dec``, ``-gdec``, ``-genc``, ``-grad`` (``neural.sync_opt``'s phases, round = step). Under
``mask`` the aggregator learns none of them, not even the sums; the nodes learn the sums, i.e. the union
batch's BatchNorm statistics and gradient, which is what a centralised trainer would see. Stopping: the epoch
budget or a relative weight change below ``tolerance`` (every node computes the same number, no message).

Checkpoints (with a ``state_dir``): every ``CHECKPOINT_EVERY`` steps and at each epoch's end the node writes its
whole state (``FederatedNode.state``) atomically. A killed node resumes there and replays the steps after it:
each step's vectors are a deterministic function of that state (seeded batches and noise, keyed masks), so it
resends exactly the bytes it sent before, which the aggregator takes as the updates it already holds, and reads
back the closed rounds' aggregates. The aggregator keeps the last ``KEEP_AGGREGATES`` aggregates of a session,
so checkpoints come more often than that.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fedtopic.crypto.keys import PartyKeys
from fedtopic.errors import TrainingError
from fedtopic.network.client import AggregatorClient
from fedtopic.network.store import KEEP_AGGREGATES
from fedtopic.node.dense_session import DenseSession, open_dense_session
from fedtopic.node.state_file import (
    read_arrays,
    records_array,
    records_from,
    write_arrays,
)


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
                     round_timeout: float = 3600.0, state_dir: Path | None = None,
                     on_epoch: Callable[[EpochRecord], None] | None = None,
                     say: Callable[[str], None] = lambda _: None) -> list[EpochRecord]:
    """Train ``node`` (a ``FederatedNode``) to the end; its final W is in ``node.flat``."""
    sizes_of = {"size": len(ids), **node.phase_sizes()}
    sent = [0]
    records: list[EpochRecord] = []
    if state_dir is not None and (state_dir / CHECKPOINT).exists():
        records = load_gfedntm_checkpoint(state_dir, node)
        say(f"{keys.party_id}: resumed at epoch {node.epoch + 1}, step {node.step}")
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

        def after_step() -> None:
            if state_dir is not None and node.step % CHECKPOINT_EVERY == 0:
                save_gfedntm_checkpoint(state_dir, node, records)
                say(f"{keys.party_id}: checkpoint at step {node.step}")

        done = bool(records) and records[-1].relative_change < node.settings.tolerance
        while not done and node.epoch < node.settings.epochs:
            t0, bytes0 = time.perf_counter(), sent[0]
            change = node.train_epoch(sizes, total, after_step)
            rec = EpochRecord(node.epoch, node.step - node.epoch_first_step, change, time.perf_counter() - t0,
                              sent[0] - bytes0)  # seconds and bytes: this process's share after a resume
            records.append(rec)
            if state_dir is not None:
                save_gfedntm_checkpoint(state_dir, node, records)
            if on_epoch is not None:
                on_epoch(rec)
            done = change < node.settings.tolerance
    return records


CHECKPOINT = "gfedntm-checkpoint.npz"
CHECKPOINT_EVERY = 8
assert CHECKPOINT_EVERY < KEEP_AGGREGATES  # a resumed node must still find every aggregate it replays


def save_gfedntm_checkpoint(state_dir: Path, node, records: Sequence[EpochRecord]) -> None:
    """Atomically: the node's state and its epoch records."""
    write_arrays(state_dir / CHECKPOINT, node.state() | {"records": records_array(records)})


def load_gfedntm_checkpoint(state_dir: Path, node) -> list[EpochRecord]:
    """Restore ``node``; its epoch records so far. TrainingError if the checkpoint does not fit."""
    try:
        arrays = read_arrays(state_dir / CHECKPOINT)
        node.restore(arrays)
        return records_from(arrays["records"], EpochRecord)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TrainingError(f"gFedNTM checkpoint in {state_dir} is unusable ({exc}); move it away to start "
                            "over") from None
