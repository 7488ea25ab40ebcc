"""The protocol every asynchronous federated party implements, and what it hands the runtime.

A party only computes. The asynchronous loop (``fedtopic.node.async_loop``) owns the rest, in ``simulate`` (every
party a thread over an in-memory board or an embedded chain) and in ``node run`` (one process per party over a
chain): it publishes the party's genesis update, reads whatever its readable channels hold last, calls
``train_round`` with those snapshots, publishes what it returns, checkpoints around every publication (``state`` /
``restore``), appends one history line per round, and stops when a party it reads has published its last round
(``finished``). An update is what a channel carries: a non-negative integer matrix of the channel's shape,
[V, K] (counts, encrypted per channel on a chain), never waiting for anyone.

The algorithm then writes its run folder: ``write_async_simulation(out, AsyncRun)`` for ``simulate``,
``write_async_party(out, AsyncPartyRun)`` for ``node run`` (``Algorithm``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from fedtopic.corpus.training_data import TrainingData
    from fedtopic.corpus.types import Corpus


@dataclass(frozen=True)
class ChannelSnapshot:
    """The unit that travels between asynchronous parties: the latest update published on one channel, an integer
    matrix (DAFed-LDA: N_q, int32[V,K]) at ``round``. Kept apart from any algorithm (and its numba kernels) so that
    transports, the chain client and the in-memory board, build snapshots cheaply."""

    party: str
    round: int
    n_wk: np.ndarray


@dataclass(frozen=True)
class RoundReport:
    """What one local round produced: the update to publish and how stale the inputs were."""

    round: int
    sweeps: int
    n_wk: np.ndarray
    staleness: dict[str, int]
    epsilon: float | None = None  # the (ε, δ) the party's releases have cost with this one (DP on)


@dataclass
class PartyLog:
    """What one party did: per-round staleness, bytes, timings."""

    party_id: str
    rounds: int = 0
    sweeps: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    staleness: list[int] = field(default_factory=list)
    read_from: set[str] = field(default_factory=set)
    quality: float | None = None  # the last round's training-quality figure (with a history), named below
    quality_name: str | None = None
    compute_seconds: float = 0.0
    comm_seconds: float = 0.0
    delay_seconds: float = 0.0
    stopped_by: str = ""
    behind: dict[str, int] = field(default_factory=dict)  # peers that fell behind: the most rounds they lagged
    planned_sweeps: int = 0  # the local training it would have done had no party it reads finished first


class AsyncParty(Protocol):
    """One asynchronous party (``Algorithm.party`` of an algorithm whose modes include ``Mode.async_``)."""

    party_id: str
    round: int  # the last round it published (0: genesis)
    sweeps: int  # local training done so far
    steps: int  # local training per round: a party's round r follows r·steps of it

    @property
    def vocab(self) -> Sequence[str]: ...  # the words, for the history's top words

    def genesis(self) -> np.ndarray: ...  # round 0's update
    def own_counts(self) -> np.ndarray: ...  # the current round's update (the same array however often asked)
    def max_sweeps(self, budget: int) -> int: ...  # the training it will do (fewer when a privacy budget ends it)
    def train_round(self, others: Sequence[ChannelSnapshot]) -> RoundReport: ...
    def absorb(self, others: Sequence[ChannelSnapshot]) -> None: ...  # the last snapshots, after training
    def quality(self) -> tuple[float, str]: ...  # (a figure, its name) for the history
    def top_words_ids(self, n: int) -> np.ndarray: ...  # int[K, n]
    def state(self) -> dict[str, np.ndarray]: ...  # everything a restarted party needs, round and sweeps included
    def restore(self, arrays: Mapping[str, np.ndarray]) -> None: ...  # ValueError if the arrays do not fit


@dataclass(frozen=True)
class AsyncRun:
    """A finished one-process asynchronous simulation (``fedtopic simulate``), for ``write_async_simulation``: the
    parties in order, what each did, and the run's settings (``extra``: transport, chain usage, max_delay)."""

    data: TrainingData
    spec: Any  # the run's TrainSpec (algorithms.base)
    parties: Sequence[Any]
    logs: Sequence[PartyLog]
    wall_seconds: float
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AsyncPartyRun:
    """A finished asynchronous node (``fedtopic node run``), for ``write_async_party``: its party (absorbed the
    last snapshots), its own documents, what it did and the run's facts (``extra``)."""

    party: Any
    spec: Any
    train: Corpus
    test: Corpus
    tokenizer: Mapping[str, Any]
    dataset: str
    n_parties: int
    log: PartyLog
    extra: Mapping[str, Any] = field(default_factory=dict)
