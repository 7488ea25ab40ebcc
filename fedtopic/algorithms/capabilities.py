"""What an algorithm can do, as protocols: the runtime of each mode calls only the one it needs.

An algorithm (``algorithms.base.Algorithm``: name, options, modes, update) implements, for each mode it declares,
that mode's protocols; the registry checks that once, when the algorithm is loaded, and refuses a declared mode
whose members are missing in one line naming them (``check_capabilities``), so that a command never learns at run
time that a method is not there:

* ``Mode.centralised`` (`train`): ``CentralisedFit`` (fit on the parties' corpora in one process) and
  ``TrainWriter`` (its family's metrics after each sweep, and the run folder of what it fitted);
* ``Mode.sync`` (`simulate`, `node run` through the aggregator): ``SyncFederated``, a ``FederatedParty`` per party
  (``algorithms.federated``) and the run folders of the consortium and of one party;
* ``Mode.async_`` (over the chain): ``AsyncFederated``, a ``ChannelParty`` per party (the LDA party that publishes
  counts on its channel) and the run folders of the parties and of one party.

``ContinuedFit`` (``train --continue-from``) and ``ChannelParties`` (the one-process lock-step harness, which a
synchronous LDA algorithm also offers) are optional capabilities, checked where they are used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from fedtopic.algorithms.base import Fitted, IterationCallback, Mode, TrainSpec
from fedtopic.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

    from fedtopic.algorithms.asynchronous import AsyncPartyRun, AsyncRun
    from fedtopic.algorithms.federated import ConsortiumRun, FederatedParty, PartyRun
    from fedtopic.corpus.training_data import TrainingData
    from fedtopic.corpus.types import Corpus

SweepMetrics = Callable[[int, int, Any], dict[str, float]]
"""``metrics(party, iteration, model)`` after a sweep of a centralised fit: what its progress line shows
(``perplexity``, ``loglik``, the ε spent) and what the run writer keeps as curves; {} where nothing is due."""


def no_sweep_metrics(party: int, iteration: int, model: Any) -> dict[str, float]:
    """The sweep metrics of a family that measures nothing while it fits (NMF, the neural models)."""
    return {}


@dataclass
class TrainLog:
    """What a centralised run's driver hands the run writer: the training time, the curves its sweep metrics gave
    (party → [(iteration, value)] per metric name), the fold-in budget and a stage reporter."""

    train_seconds: float
    started: float
    curves: dict[str, dict[int, list[tuple[int, float]]]] = field(default_factory=dict)
    fold_in_iterations: int = 50
    stage: Callable[[str], None] = lambda what: None


@runtime_checkable
class CentralisedFit(Protocol):
    """`train`: every party's corpus in one process."""

    def fit(self, parts: Sequence[Corpus], spec: TrainSpec,
            callback: IterationCallback | None = None) -> list[Fitted]:
        """One model of the pooled corpora (θ rows in party order), or one per party."""

    def models_per_fit(self, n_parties: int) -> int:
        """How many models ``fit`` trains for ``n_parties`` corpora (a progress bar's length)."""


@runtime_checkable
class ContinuedFit(Protocol):
    """`train --continue-from`: a fit that starts from a saved model's topics."""

    def fit_from(self, parts: Sequence[Corpus], spec: TrainSpec, start_phi: Any,
                 callback: IterationCallback | None = None) -> list[Fitted]:
        """As ``fit``, from Φ float64[K, V] instead of a random start."""


@runtime_checkable
class TrainWriter(Protocol):
    """A centralised run's evaluation and run folder, the algorithm family's own."""

    def sweep_metrics(self, data: TrainingData, spec: TrainSpec, eval_every: int) -> SweepMetrics:
        """What to measure after each sweep of a fit on ``data`` (every ``eval_every`` sweeps where it costs)."""

    def write_train(self, out: Path, data: TrainingData, spec: TrainSpec, fitted: Sequence[Fitted],
                    log: TrainLog) -> dict[str, Any]:
        """Evaluate ``fitted`` on ``data``'s test split and write the run folder ``out``; the summary."""

    def write_interrupted(self, out: Path, data: TrainingData, spec: TrainSpec, model: Any,
                          sweeps: int) -> str | None:
        """Ctrl-C after ``sweeps`` sweeps: write what can be kept of ``model`` (the one in training, as the sweep
        callback saw it) to ``out`` at once, no evaluation; what was kept, as a clause, or None."""


@runtime_checkable
class SyncFederated(Protocol):
    """Synchronous rounds through the aggregator."""

    def party(self, party_id: str, index: int, corpus: Corpus, spec: TrainSpec, *,
              secret: bytes | None = None) -> FederatedParty:
        """Party ``index``'s local state and training, which the one party runtime drives (``secret`` as in
        ``ChannelParties.channel_party``)."""

    def write_simulation(self, out: Path, run: ConsortiumRun) -> dict[str, Any]:
        """`simulate`: evaluate the consortium's model and write the run folder ``out``; the summary."""

    def write_party(self, out: Path, run: PartyRun) -> dict[str, Any]:
        """`node run`: evaluate the party's model on its own documents and write ``out``; the summary."""


@runtime_checkable
class ChannelParties(Protocol):
    """Parties that publish their counts on a channel each round (the LDA family's ``LDAParty``)."""

    def channel_party(self, party_id: str, index: int, corpus: Corpus, spec: TrainSpec, *,
                      secret: bytes | None = None) -> Any:
        """Party ``index``'s ``LDAParty``. ``secret``: bytes only this party knows (a node's
        ``PartyKeys.noise_secret``), which key its privacy mechanisms; None where one user plays every party."""

    def publication_shape(self, spec: TrainSpec, n_words: int) -> tuple[int, int]:
        """The shape of the counts a party publishes each round ([V, K])."""


@runtime_checkable
class AsyncFederated(ChannelParties, Protocol):
    """Asynchronous parties over per-party chain channels."""

    def write_async_simulation(self, out: Path, run: AsyncRun) -> dict[str, Any]:
        """`simulate`: evaluate the parties' models and write the run folder ``out``; the summary."""

    def write_async_party(self, out: Path, run: AsyncPartyRun) -> dict[str, Any]:
        """`node run`: evaluate the party's model on its own documents and write ``out``; the summary."""


MODE_PROTOCOLS: Mapping[Mode, tuple[type, ...]] = {
    Mode.centralised: (CentralisedFit, TrainWriter),
    Mode.sync: (SyncFederated,),
    Mode.async_: (AsyncFederated,),
}


def _members(protocol: type) -> list[str]:
    """The public methods ``protocol`` names, its bases' included."""
    names: set[str] = set()
    for base in protocol.__mro__:
        if base is not object and base is not Protocol and base.__module__ == __name__:
            names |= {n for n, v in vars(base).items() if callable(v) and not n.startswith("_")}
    return sorted(names)


def missing_members(algorithm: object, protocol: type) -> list[str]:
    """The members of ``protocol`` that ``algorithm`` lacks."""
    return [n for n in _members(protocol) if not callable(getattr(algorithm, n, None))]


def check_capabilities(name: str, algorithm: Any) -> None:
    """ConfigError in one line if ``algorithm`` declares a mode whose protocols it does not implement."""
    for mode in sorted(algorithm.modes, key=lambda m: m.value):
        lacking = [m for p in MODE_PROTOCOLS[mode] for m in missing_members(algorithm, p)]
        if lacking:
            raise ConfigError(f"algorithm {name!r} runs {mode.label} but has no {', '.join(lacking)} "
                              f"(fedtopic.algorithms.capabilities: {', '.join(p.__name__ for p in MODE_PROTOCOLS[mode])})")


def capability(algorithm: Any, protocol: type, what: str) -> Any:
    """``algorithm`` as ``protocol``, or a ConfigError in one line saying that ``what`` needs it."""
    lacking = missing_members(algorithm, protocol)
    if lacking:
        raise ConfigError(f"{what} needs an algorithm with {', '.join(lacking)}; {algorithm.name} has none")
    return algorithm
