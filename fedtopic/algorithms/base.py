"""The one interface every algorithm implements, and its typed options.

An algorithm says, once, in its own module under ``fedtopic.algorithms``:

* the **modes** it runs in (``Mode``): centralised in one process, synchronous
  through the aggregator, asynchronous over the chain;
* its **options** (``Option``): typed, validated, with defaults; the same keys
  are ``--opt key=value`` on every command and ``[algorithm.options]`` in
  consortium.toml;
* the **update** a party sends (``UpdateSpec``): its format (the channel kind
  a protection must carry) and, if it restricts them, which protections;
* what its runs **reveal** beyond the protection (``privacy``: whether a run
  of these options is differentially private), recorded in run-info.json so
  that readers of a run (the dashboard) never guess from option names;
* how to **train**, per mode, as the protocols of ``algorithms.capabilities``
  (checked when the registry loads it): ``fit`` and a run writer for the
  centralised mode, ``party`` (one party's local state and training given the
  current global state) for the synchronous one, ``channel_party`` for the
  asynchronous one, each with its run folders;
* the **model** it produces (``fedtopic.algorithms.model.TopicModel``).

Nothing here knows about chains, HTTP or files: the harnesses in
``fedtopic.simulation`` and the runtime in ``fedtopic.node`` hand transports to
the training loops and call these methods.
"""

from __future__ import annotations

import math
from abc import ABC
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from fedtopic.algorithms.memory import check_model_fits
from fedtopic.errors import ConfigError

if TYPE_CHECKING:
    from fedtopic.algorithms.model import TopicModel
    from fedtopic.corpus.types import Corpus


class Mode(str, Enum):
    """Where an algorithm can run."""

    centralised = "centralised"  # all data in one process (`fedtopic train`)
    sync = "sync"  # synchronous rounds through the aggregator (`simulate`, `node run`)
    async_ = "async"  # asynchronous parties over per-party chain channels (`simulate`, `node run`)

    @property
    def label(self) -> str:
        return {"centralised": "centralised", "sync": "synchronous (aggregator)", "async": "asynchronous (chain)"}[
            self.value
        ]


OptionValue = int | float | str | bool | None
_TYPES: dict[type, str] = {int: "int", float: "float", str: "str", bool: "bool"}


@dataclass(frozen=True)
class Option:
    """One typed algorithm option. ``default=None`` means "derived" (``default_text`` says how)."""

    name: str
    type: type
    default: OptionValue
    help: str
    choices: tuple[str, ...] | None = None
    minimum: float | None = None
    exclusive_minimum: bool = False
    maximum: float | None = None
    default_text: str | None = None
    allow_infinite: bool = False  # float options only: "inf" is a value (e.g. ε = ∞: no privatisation)

    def describe_default(self) -> str:
        """The default as shown to people."""
        return self.default_text if self.default is None and self.default_text else repr(self.default)

    def parse(self, raw: object, *, where: str) -> OptionValue:
        """``raw`` (a string from ``--opt`` or a TOML value) as this option's type, or a ConfigError naming ``where``."""
        value = self._coerce(raw, where)
        if value is None:
            return None
        if self.choices is not None and value not in self.choices:
            raise ConfigError(f"{where}: {self.name} must be one of {', '.join(self.choices)}, got {value!r}")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if isinstance(value, float) and (math.isnan(value) or (math.isinf(value) and not self.allow_infinite)):
                raise ConfigError(f"{where}: {self.name} must be a finite number, got {value!r}")
            low_ok = self.minimum is None or (value > self.minimum if self.exclusive_minimum else value >= self.minimum)
            if not low_ok:
                op = ">" if self.exclusive_minimum else "≥"
                raise ConfigError(f"{where}: {self.name} must be {op} {self.minimum:g}, got {value!r}")
            if self.maximum is not None and value > self.maximum:
                raise ConfigError(f"{where}: {self.name} must be ≤ {self.maximum:g}, got {value!r}")
        return value

    def _coerce(self, raw: object, where: str) -> OptionValue:
        bad = ConfigError(f"{where}: {self.name} takes a {_TYPES[self.type]}, got {raw!r}")
        if isinstance(raw, str):
            text = raw.strip()
            if self.default is None and text.lower() in ("", "none", "auto"):
                return None
            if self.type is bool:
                if text.lower() in ("true", "yes", "1", "on"):
                    return True
                if text.lower() in ("false", "no", "0", "off"):
                    return False
                raise bad
            if self.type is str:
                return text
            try:
                return self.type(text)
            except ValueError:
                raise bad from None
        if self.type is bool:
            if isinstance(raw, bool):
                return raw
            raise bad
        if isinstance(raw, bool) or raw is None:
            raise bad
        if self.type is float and isinstance(raw, (int, float)):
            return float(raw)
        if self.type is int and isinstance(raw, int):
            return raw
        if self.type is int and isinstance(raw, float) and raw.is_integer():
            return int(raw)
        raise bad


def parse_opt_pairs(pairs: Sequence[str]) -> dict[str, str]:
    """``["key=value", ...]`` from repeated ``--opt`` flags; a malformed or repeated key is a ConfigError."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--opt takes key=value, got {pair!r}")
        if key in out:
            raise ConfigError(f"--opt {key} is given twice")
        out[key] = value
    return out


@dataclass(frozen=True)
class UpdateSpec:
    """What a party sends each round: its format (the channel kind) and, optionally, which protections it allows.

    ``protections`` are protection names (``fedtopic.protections``: ``none``, ``mask``, …); None (the default)
    allows every registered protection that carries ``kind``, plugins included. Only synchronous algorithms'
    updates travel under a protection; an asynchronous one's are encrypted per channel by its link."""

    kind: str  # "counts" (non-negative integers), "dense" (floats), "topics" (normalised topic sets)
    description: str
    protections: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        # the form before protections were a layer, UpdateSpec(kind, protections, description), whose names were
        # combiners ("dense-sum", "topic-merge" for none): a plugin written to it still works
        if isinstance(self.description, (tuple, list)) and isinstance(self.protections, str):
            named = tuple(_COMBINER_PROTECTION.get(p, p) for p in self.description)
            object.__setattr__(self, "description", self.protections)
            object.__setattr__(self, "protections", tuple(dict.fromkeys(named)))


_COMBINER_PROTECTION = {"dense-sum": "none", "topic-merge": "none"}


@dataclass(frozen=True)
class TrainSpec:
    """What every training run needs: K, the iteration budget, the seed and the algorithm's parsed options."""

    topics: int
    iterations: int
    seed: int = 0
    options: Mapping[str, OptionValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.topics < 2:
            raise ConfigError(f"need at least 2 topics, got K={self.topics}")
        if self.iterations < 1:
            raise ConfigError(f"need at least 1 iteration, got {self.iterations}")


@dataclass(frozen=True)
class Fitted:
    """A centralised fit's result: the model, θ float64[D,K] of the documents it was trained on (in order), and
    what else the algorithm reports (e.g. the privacy spent), merged into summary.json."""

    model: TopicModel
    theta: np.ndarray
    extra: Mapping[str, Any] = field(default_factory=dict)


def metric(summary: Mapping[str, Any], key: str, fmt: str) -> str:
    """``summary[key]`` formatted with ``fmt``, or "n/a" when it is missing, null or not a finite number (a metric
    that does not apply to a run is null in summary.json)."""
    value = summary.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "n/a"
    return format(value, fmt)


@dataclass(frozen=True)
class Privacy:
    """What an algorithm's runs with given options promise beyond the protection: whether every release is
    differentially private, and the (ε, δ) budget it stops at (None: no budget). Recorded in run-info.json as
    ``privacy`` so readers of a run never infer it from option names."""

    dp: bool = False
    epsilon_budget: float | None = None
    delta: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"dp": self.dp, "epsilon_budget": self.epsilon_budget, "delta": self.delta}


IterationCallback = Callable[[int, int, Any], None]
"""``callback(party_index, iteration, model)`` after every iteration of a centralised fit (iteration counts from 1)."""


class Algorithm(ABC):
    """Base of every registered algorithm. Subclasses set the class attributes and override what their modes need."""

    name: ClassVar[str]
    summary: ClassVar[str]
    paper: ClassVar[str]
    modes: ClassVar[frozenset[Mode]]
    options: ClassVar[tuple[Option, ...]]
    update: ClassVar[UpdateSpec | None] = None
    family: ClassVar[str] = "lda"
    """How runs are evaluated: "lda" (perplexity by fold-in, NPMI, SVM on θ), "nmf" (WE coherence, NPMI,
    SVM on topic weights; no likelihood) or "ntm" (NPMI, diversity, SVM on θ, TSS/DSS on synthetic data)."""
    compares_centralized: ClassVar[bool] = False
    """True when ``write_simulation`` honours ``simulate --compare-centralized`` (its summary then has
    ``centralized_perplexity`` and ``perplexity_gap_vs_centralized``); other algorithms refuse the flag."""

    # options ---------------------------------------------------------------------------------
    def parse_options(self, raw: Mapping[str, object], *, where: str = "--opt") -> dict[str, OptionValue]:
        """Every option with its default, overridden by ``raw``; an unknown key lists the known ones."""
        known = {o.name: o for o in self.options}
        unknown = sorted(set(raw) - set(known))
        if unknown:
            names = ", ".join(known) or "(none)"
            raise ConfigError(f"{where}: {self.name} has no option {unknown[0]!r}; its options are: {names}")
        return {name: (o.parse(raw[name], where=where) if name in raw else o.default) for name, o in known.items()}

    def spec(self, topics: int, iterations: int, seed: int = 0, options: Mapping[str, object] | None = None,
             *, where: str = "--opt") -> TrainSpec:
        """A validated ``TrainSpec`` for this algorithm."""
        return TrainSpec(topics, iterations, seed, self.parse_options(options or {}, where=where))

    def require(self, mode: Mode, command: str) -> None:
        """A ConfigError when this algorithm does not run in ``mode`` (what ``command`` needs)."""
        if mode not in self.modes:
            runs = ", ".join(m.label for m in sorted(self.modes, key=lambda m: m.value))
            raise ConfigError(f"{command} needs an algorithm that runs {mode.label}; {self.name} runs: {runs}")

    def check_mode_options(self, spec: TrainSpec, mode: Mode) -> None:
        """A ConfigError when an option of ``spec`` has no meaning in ``mode`` (a federated mechanism asked of the
        centralised twin); the default accepts every option in every mode."""

    def evaluation_alpha(self, spec: TrainSpec) -> float:
        """The symmetric Dirichlet α that held-out fold-in uses for this algorithm's Φ: the ``alpha`` option if
        it has one, else the LDA family's default (``models.prior.DEFAULT_ALPHA``)."""
        from fedtopic.models.prior import DEFAULT_ALPHA

        alpha = spec.options.get("alpha")
        return DEFAULT_ALPHA if alpha is None else float(alpha)  # type: ignore[arg-type]

    # training --------------------------------------------------------------------------------
    def models_per_fit(self, n_parties: int) -> int:
        """How many models a centralised fit trains for ``n_parties`` corpora: one of them pooled."""
        return 1

    def check_data(self, parts: Sequence[Corpus], spec: TrainSpec) -> None:
        """ConfigError (or ModelError) if this algorithm cannot train ``spec`` on these corpora, checked before
        any work starts: by default, that the vocabulary has two words at least and that K topics fit in memory."""
        words = len(parts[0].vocab) if parts else 0
        if words < 2:
            raise ConfigError(f"the corpus keeps {words} distinct word{'s' if words != 1 else ''} after its "
                              "filters (--min-df, --max-df, stop words): a topic model needs two at least")
        check_model_fits(parts, spec.topics)

    def contributors_per_round(self, spec: TrainSpec, n_parties: int) -> int:
        """How many parties' updates carry information in each round's sum: all of them, unless the algorithm
        selects a subset (the others then send zeros, which a sum cannot tell from an update)."""
        return n_parties

    def protections(self) -> tuple[str, ...]:
        """The registered protections this algorithm's updates can travel under (synchronous algorithms only)."""
        from fedtopic.protections import protections_carrying

        if self.update is None or Mode.sync not in self.modes:
            return ()
        carried = protections_carrying(self.update.kind)
        return carried if self.update.protections is None else \
            tuple(p for p in self.update.protections if p in carried)

    def check_protection(self, spec: TrainSpec, protection: str, n_parties: int) -> None:
        """ConfigError before training if ``protection`` is unknown, cannot carry this algorithm's update, or cannot
        protect this configuration: a sum that must hold ``min_contributors`` updates (a masked sum hides an update
        only among two or more) and this algorithm sums fewer informative ones (docs/security.md). The one place
        every command (``simulate``, ``node run``, the consortium file) checks a protection."""
        from fedtopic.protections import get_protection

        chosen = get_protection(protection)
        allowed = self.protections()
        if protection not in allowed:
            kind = "nothing through an aggregator" if self.update is None else self.update.kind
            raise ConfigError(f"{self.name} sends {kind}, which protection {protection!r} cannot carry; "
                              f"it takes: {', '.join(allowed) or 'none of the registered protections'}")
        informative = self.contributors_per_round(spec, n_parties)
        if informative < chosen.min_contributors:
            raise ConfigError(f"{protection} hides an update only in a sum of {chosen.min_contributors} or more, and "
                              f"{self.name} with these options sums {informative} informative update(s) per round "
                              f"among {n_parties} parties: the aggregator would see it in clear; "
                              f"{self.more_contributors_hint(spec, n_parties, chosen.min_contributors)} or use "
                              "another protection")

    def more_contributors_hint(self, spec: TrainSpec, n_parties: int, needed: int) -> str:
        """How to put ``needed`` informative updates in each round's sum (the refusal of ``check_protection``)."""
        return "select more parties per round"

    def privacy(self, spec: TrainSpec) -> Privacy:
        """Whether runs of ``spec`` are differentially private, and their budget (none by default)."""
        return Privacy()

    def rounds(self, spec: TrainSpec) -> int:
        """How many training rounds a federated run of ``spec`` takes at most, R (``runs.round_count``: progress,
        status lines, summary.json and the dashboard all count these)."""
        return spec.iterations

    def setup_rounds(self, spec: TrainSpec) -> int:
        """History rounds exchanged before the first training round (the LDA family's genesis counts: 1)."""
        return 0

    def headline(self, summary: Mapping[str, Any]) -> str:
        """The run's quality in a few words for the command's last line (a metric that does not apply is null in
        summary.json and shows as "n/a": ``metric``)."""
        return f"perplexity {metric(summary, 'perplexity', '.1f')}"

    def describe(self) -> dict[str, Any]:
        """Everything ``fedtopic algorithms`` shows, as plain data."""
        return {
            "name": self.name,
            "summary": self.summary,
            "paper": self.paper,
            "modes": [m.value for m in sorted(self.modes, key=lambda m: m.value)],
            "update": None if self.update is None else {
                "kind": self.update.kind, "protections": list(self.protections()),
                "description": self.update.description},
            "options": [{"name": o.name, "type": _TYPES[o.type], "default": o.default,
                         "default_text": o.describe_default(), "help": o.help,
                         **({"choices": list(o.choices)} if o.choices else {})} for o in self.options],
        }
