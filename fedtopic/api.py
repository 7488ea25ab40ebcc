"""The Python API: train, read, infer, save, load and simulate in a few lines, through the same registry as the CLI.

    import fedtopic
    model = fedtopic.train(texts, topics=10, iterations=200)          # texts: list of strings, or a corpus path
    model.top_words(8)                                                 # [["game", "team", ...], ...]
    theta = model.transform(["a new document about football"])        # θ float64[D,K], Gibbs fold-in
    model.save("runs/mine"); model = fedtopic.load("runs/mine")
    run = fedtopic.simulate(texts, algorithm="csfed-lda", parties=4, topics=10, iterations=50)
    run.model.top_words(), run.summary["perplexity"]

Every function takes ``seed`` (same seed, same model) and the algorithm's
options as keyword arguments (``alpha=0.1, steps=2``: the keys of ``fedtopic
algorithms``, validated as ``--opt`` is).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedtopic.algorithms.base import Mode
from fedtopic.algorithms.model import TopicModel
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.corpus.types import Corpus
from fedtopic.errors import ConfigError

Documents = Sequence[str] | str | Path | Corpus
"""A list of texts, a corpus path (folder of .txt, .jsonl, UCI docword), or an encoded ``Corpus``."""

__all__ = ["Documents", "RoundInfo", "SimulationRun", "TopicModel", "load", "simulate", "train"]


def _corpus(documents: Documents, min_df: int, max_df: float) -> tuple[str, Corpus]:
    from fedtopic.corpus.build import corpus_from_texts
    from fedtopic.corpus.readers import read_corpus

    if isinstance(documents, Corpus):
        return "corpus", documents
    if isinstance(documents, (str, Path)):
        return str(documents), read_corpus(documents, min_df=min_df, max_df=max_df)
    texts = list(documents)
    if not all(isinstance(t, str) for t in texts):
        raise ConfigError("documents must be a list of strings, a corpus path or a Corpus")
    return f"{len(texts)} texts", corpus_from_texts(texts, min_df=min_df, max_df=max_df)


def train(documents: Documents, *, algorithm: str = "centralized-lda", topics: int = 20, iterations: int = 200,
          seed: int = 0, min_df: int = 2, max_df: float = 0.5, **options: Any) -> TopicModel:
    """Fit ``algorithm`` (a centralised one) on ``documents``; the vocabulary keeps words in ≥ ``min_df`` documents
    and ≤ ``max_df`` of them. Returns the model (for ``local-lda``, the first party's: use ``simulate`` for more)."""
    algo = get_algorithm(algorithm)
    algo.require(Mode.centralised, "fedtopic.train")
    _, corpus = _corpus(documents, min_df, max_df)
    fitted = algo.fit([corpus], algo.spec(topics, iterations, seed, options, where="options"))
    return fitted[0].model


def load(run_dir: str | Path) -> TopicModel:
    """The model of a run folder written by any command (``--out``) or by ``TopicModel.save``."""
    return TopicModel.load(run_dir)


@dataclass(frozen=True)
class RoundInfo:
    """What ``simulate(on_round=...)`` is told after every round of every party: its training round (1..rounds;
    0 for a setup exchange, ``runs.round_count``), the run's rounds, and the round's quality figure and ε where the
    algorithm reports them."""

    party: str
    round: int
    rounds: int
    quality: float | None = None
    quality_name: str | None = None
    epsilon: float | None = None


def _round_reporter(on_round: Callable[[RoundInfo], None] | None, total: int, setup: int,
                    sync: bool) -> Callable[..., None] | None:
    """The runtime's callback (sync: party, history line; async: party, report, log) as ``on_round(RoundInfo)``."""
    from fedtopic.runs.round_count import training_round

    if on_round is None:
        return None
    if sync:
        return lambda party, line: on_round(RoundInfo(party, training_round(line.round, setup), total, line.quality,
                                                      line.quality_name, line.epsilon))
    return lambda party, report, log: on_round(RoundInfo(party, training_round(report.round, setup), total,
                                                         epsilon=report.epsilon))


def _remove_at_exit(folder: Path) -> Path:
    """``folder``, removed when the process exits (a simulation run without ``out``)."""
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


@dataclass(frozen=True)
class SimulationRun:
    """A finished simulated consortium: the consortium's model, summary.json's content and the run folder."""

    model: TopicModel
    summary: dict[str, Any]
    run_dir: Path


def simulate(documents: Documents | None = None, *, dataset: str | None = None, algorithm: str = "dafed-lda",
             parties: int = 3, scheme: str = "a", topics: int = 20, iterations: int = 100, seed: int = 0,
             protection: str = "none", link: str | None = None, max_delay: float = 0.0, engine: str = "threads",
             out: str | Path | None = None, min_df: int = 2, max_df: float = 0.5, port: int = 0,
             on_round: Callable[[RoundInfo], None] | None = None, **options: Any) -> SimulationRun:
    """Split ``documents`` (or a built-in ``dataset``) among ``parties`` by ``scheme`` (a quarter held out for
    evaluation) and train ``algorithm`` federated, as ``fedtopic simulate`` does. ``link``: how messages travel
    (``fedtopic.links``; None: ``http``, or ``memory`` for an asynchronous algorithm; ``chain`` for its channels on
    an embedded chain). The run folder is ``out`` (must not hold a run) or a temporary folder removed when the
    process exits. ``port``: a synchronous run's
    aggregator port on 127.0.0.1 (0: a free one); ``on_round``: called with a ``RoundInfo`` after every round of
    every party (from the parties' threads: keep it short and thread-safe)."""
    from fedtopic.corpus.training_data import load_training_data, split_corpus
    from fedtopic.runs.folder import prepare_run_dir
    from fedtopic.simulation.run import (
        AsyncSettings,
        Harness,
        SyncSettings,
        check_simulation,
        simulate_run,
    )

    algo = get_algorithm(algorithm)
    if not algo.modes & {Mode.sync, Mode.async_}:
        raise ConfigError(f"{algorithm} is not federated; use fedtopic.train")
    if (documents is None) == (dataset is None):
        raise ConfigError("give documents or dataset=NAME, not both")
    spec = algo.spec(topics, iterations, seed, options, where="options")
    harness = Harness(engine=engine, link=link, sync=SyncSettings(protection=protection, port=port),
                      async_=AsyncSettings(max_delay=max_delay))
    check_simulation(algorithm, spec, harness, parties)
    if dataset is not None:
        data = load_training_data(dataset=dataset, corpus=None, n_parties=parties, scheme=scheme, seed=seed,
                                  progress=False)
    else:
        name, corpus = _corpus(documents, min_df, max_df)  # type: ignore[arg-type]
        data = split_corpus(name, corpus, n_parties=parties, scheme=scheme, seed=seed)
    temporary = None if out is not None else _remove_at_exit(Path(tempfile.mkdtemp(prefix="fedtopic-")))
    run_dir = prepare_run_dir(Path(out) if out is not None else temporary)  # type: ignore[arg-type]
    report = _round_reporter(on_round, algo.rounds(spec), algo.setup_rounds(spec), Mode.sync in algo.modes)
    summary = simulate_run(data, algorithm, spec, run_dir, harness, on_round=report)
    return SimulationRun(TopicModel.load(run_dir), summary, run_dir)
