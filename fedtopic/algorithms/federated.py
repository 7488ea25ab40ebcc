"""The one protocol every synchronous federated party implements, and what it hands the runtime.

A party only computes. The runtime (``fedtopic.node.sync_runtime``) owns the loop: it opens the party's
channels on the aggregator under the consortium's protection, restores the party from its checkpoint, calls
``step`` until ``done``, checkpoints after every step and appends one history line per step. Inside ``step`` the
party calls ``exchange.sum(channel, seq, update)`` as often as its algorithm needs (FedNMF once per round,
gFedNTM five times per mini-batch step, and ``start`` once); each call is one request to the aggregator (submit and fetch), and
the runtime persists the encoded bytes before sending so that a restarted party resends exactly them.
``exchange.start`` is the same exchange left running while the party computes on (gFedNTM's decoder gradient
during its last two phases); its ``result()`` is the aggregate.

Determinism is the contract that makes crash recovery exact: from the same ``state()``, ``step`` must send
the same updates (seeded randomness, keyed privacy noise). The runtime checks this: a recomputed update whose
digest differs from the one persisted before a crash stops the run with one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from fedtopic.protections.base import KINDS

if TYPE_CHECKING:  # (``base`` imports this module for its annotations, so TrainSpec is named, not imported)
    from fedtopic.corpus.training_data import TrainingData
    from fedtopic.corpus.types import Corpus


@dataclass(frozen=True)
class Channel:
    """One stream of summed (``dense``: float64[size]; ``counts``: non-negative integers, shape ``meta["shape"]``)
    or merged (``topics``: normalised topic sets over a vocabulary of ``size`` words) updates; each has its own
    aggregator session and round numbers (``seq``).

    ``meta``: what the runtime must know beyond the size. ``dense``: optionally ``dtype`` "float32", carried in
    4 bytes a value under protection none (the parts and the sum rounded to float32). ``topics``: the merge
    settings every party derives alike. ``counts``: ``shape`` [V, K], ``max_value`` (a bound on one party's
    cell, which sizes masks and packing), ``word_frequencies`` (float[V], the consortium's; IPHE encrypts its top δ·V rows) and ``setup``
    (True: the consortium's secrets are sealed on this channel's session, and the Paillier schemes carry it by
    packed Paillier), ``every_cell`` (True: a channel with no word ranking, carried by the protection's setup
    scheme, which protects every cell: packed Paillier for the Paillier schemes). Any protection carries ``counts``; ``dense`` takes ``none`` or ``mask``."""

    name: str
    kind: str
    size: int
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"channel {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if not self.name.replace("-", "").isalnum() or len(self.name) > 8:
            raise ValueError(f"channel name {self.name!r}: letters, digits and '-', at most 8 characters")
        if self.size < 1:
            raise ValueError(f"channel {self.name!r}: size must be ≥ 1, got {self.size}")


@dataclass(frozen=True)
class TopicsUpdate:
    """A ``topics`` channel's update: topics float64[K_p, V], every row summing to 1, and the data amount n_p."""

    topics: np.ndarray
    amount: float


@dataclass(frozen=True)
class Aggregate:
    """What one exchange returned: the decoded aggregate (``dense``: the sum, float64[size], or float32[size] on
    a channel whose meta says ``dtype: float32``; ``topics``: the master's model) and the parties whose updates
    are in it."""

    value: Any
    contributors: tuple[str, ...]


class InFlight(Protocol):
    """An exchange under way (``Exchange.start``)."""

    def result(self) -> Aggregate:
        """The round's aggregate, once it is in (the exchange's error if it failed)."""
        ...


class Exchange(Protocol):
    """The runtime's side of a step: one call, one update up and its round's aggregate down."""

    def sum(self, channel: str, seq: int, update: np.ndarray | TopicsUpdate) -> Aggregate:
        """Send this party's ``update`` for round ``seq`` of ``channel``; the round's aggregate."""
        ...

    def start(self, channel: str, seq: int, update: np.ndarray | TopicsUpdate) -> InFlight:
        """``sum`` without waiting: the update is encoded (and persisted) now and sent while the party goes on;
        ``result()`` gives the aggregate. A step waits for every exchange it starts before it returns."""
        ...

    def checkpoint(self) -> None:
        """Persist the party's state now (a long step may ask for this between its exchanges)."""
        ...


@dataclass
class StepRecord:
    """What a party says of one step, beside what the runtime measures (times, bytes, contributors).

    ``quality``: the training-quality figure the algorithm defines (``quality_name``: e.g. log-likelihood per
    token for the LDA family, the loss for NMF and neural models), None when a step has none; ``epsilon``: the
    privacy spent so far (DP); ``extra``: the algorithm's own per-step figures (JSON values)."""

    quality: float | None = None
    quality_name: str | None = None
    epsilon: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class FederatedParty(Protocol):
    """One party of a synchronous federated algorithm (``Algorithm.party`` returns one).

    Optional: ``setup_channels(n_parties)``, the channels ``setup`` exchanges on (opened before it; their
    persisted updates are kept for the whole run, since ``setup`` is redone after every restart); without it,
    ``setup`` uses the ``channels``' sessions, which are then opened first."""

    party_id: str

    def channels(self, n_parties: int) -> Sequence[Channel]:
        """The channels the steps exchange on, in a consortium of ``n_parties`` (asked after ``setup`` when the
        party has ``setup_channels``, so they may depend on what setup learnt)."""
        ...

    def setup(self, exchange: Exchange) -> None:
        """Exchanges before the first step (e.g. every party's data size), redone identically after a restart."""
        ...

    def step(self, round: int, exchange: Exchange) -> StepRecord:
        """Round ``round`` (from 0): local training and its exchanges."""
        ...

    def done(self) -> bool:
        """Whether the party has finished (budget spent or a stopping rule met)."""
        ...

    def state(self) -> dict[str, np.ndarray]:
        """Everything a restarted party needs, as arrays (no pickles)."""
        ...

    def restore(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Back to ``state()``'s arrays; ValueError if they do not fit this party."""
        ...

    def top_words_ids(self, n: int) -> np.ndarray | None:
        """int[K, n]: the current model's top word ids per topic (for the history), or None."""
        ...


@dataclass(frozen=True)
class ConsortiumRun:
    """A finished one-process simulation (``fedtopic simulate``), for ``Algorithm.write_simulation``:
    the parties in consortium order and every party's history rows (``fedtopic.runs.history``, one per round)."""

    data: TrainingData
    spec: Any  # the run's TrainSpec (algorithms.base)
    parties: Sequence[Any]
    histories: Sequence[Sequence[Mapping[str, Any]]]
    protection: str
    wall_seconds: float
    harness: Mapping[str, Any] = field(default_factory=dict)  # the command's extra asks (compare_centralized)


@dataclass(frozen=True)
class PartyRun:
    """A finished node (``fedtopic node run``), for ``Algorithm.write_party``: its party, its own documents
    (train and held-out), and its history rows over the whole run (restarts included)."""

    party: Any
    spec: Any  # the run's TrainSpec (algorithms.base)
    train: Corpus
    test: Corpus
    tokenizer: Mapping[str, Any]
    dataset: str
    n_parties: int
    protection: str
    history: Sequence[Mapping[str, Any]]


def history_totals(rows: Sequence[Mapping[str, Any]], setup: int = 0) -> dict[str, Any]:
    """Totals over one party's history rows for summary.json: training rounds (the rows less the ``setup``
    exchanges before them, ``runs.round_count``), bytes, seconds (``wall_seconds``: their sum, the party's time
    in rounds; setup included)."""
    seconds = sum(r["compute_s"] + r["exchange_s"] + r["wait_s"] for r in rows)
    return {"rounds": max(len(rows) - setup, 0), "wall_seconds": float(seconds), "bytes_sent": int(sum(r["bytes_up"] for r in rows)),
            "bytes_received": int(sum(r["bytes_down"] for r in rows)),
            "compute_seconds": float(sum(r["compute_s"] for r in rows)),
            "exchange_seconds": float(sum(r["exchange_s"] for r in rows)),
            "wait_seconds": float(sum(r["wait_s"] for r in rows))}
