"""``fedtopic demo``: a whole DAFed-LDA consortium on an embedded chain, compared with its baselines.

Five parties (by default) split bbc-news evenly (scheme a), each owns a
channel contract on an in-process py-evm chain, reads its peers' encrypted
counts, trains asynchronously with random delays, and publishes. The same
data then trains centralized LDA (all documents pooled) and stand-alone LDA
(each party alone), so the report shows what federation buys.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedtopic.algorithms.asynchronous import PartyLog, RoundReport
from fedtopic.algorithms.lda.async_report import write_async_run
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.consortium.init import cp_from_consortia, party_ids
from fedtopic.corpus.training_data import TrainingData
from fedtopic.eval.history_plots import histories_in, plot_history
from fedtopic.eval.plots import plot_model_comparison
from fedtopic.links import Channels, get_link
from fedtopic.runs.folder import write_json, write_run_info
from fedtopic.simulation.baseline_run import ProgressFn, run_baseline
from fedtopic.simulation.threads import run_simulation

COMPARISON_METRICS = (("perplexity", "held-out perplexity (lower is better)"), ("npmi", "NPMI coherence"),
                      ("topic_diversity", "topic diversity"), ("macro_f1", "macro-F1 of θ (labels)"))


@dataclass(frozen=True)
class DemoOptions:
    dataset: str = "bbc-news"
    parties: int = 5
    topics: int = 20
    iterations: int = 100
    max_delay: float = 0.02
    seed: int = 0


def run_demo(
    data: TrainingData,
    opts: DemoOptions,
    out: Path,
    *,
    on_round: Callable[[str, RoundReport, PartyLog], None] | None = None,
    on_stage: Callable[[str], None] = lambda _: None,
    baseline_progress: ProgressFn | None = None,
) -> dict[str, Any]:
    """Run DAFed-LDA on the embedded chain, then the two baselines; write ``out`` and return the report."""
    dafed_spec = get_algorithm("dafed-lda").spec(opts.topics, opts.iterations, opts.seed)
    central_spec = get_algorithm("centralized-lda").spec(opts.topics, opts.iterations, opts.seed)
    ids = party_ids(opts.parties)
    dafed_algo = get_algorithm("dafed-lda")
    write_run_info(out, {"kind": "demo", "algorithm": "dafed-lda", "mode": "async", "topics": opts.topics,
                         "iterations": opts.iterations, "seed": opts.seed, "options": dict(dafed_spec.options),
                         "dataset": data.name, "parties": ids, "protection": None, "transport": "chain",
                         "privacy": dafed_algo.privacy(dafed_spec).as_dict(), "rounds": dafed_algo.rounds(dafed_spec),
                         "setup_rounds": dafed_algo.setup_rounds(dafed_spec),
                         "comparisons": ["centralized-lda", "stand-alone"]})
    cp = cp_from_consortia([ids])
    on_stage("deploying the registry and one channel contract per party on the embedded chain")
    chain = get_link("chain", "async").connect(Channels(ids, cp, (data.train.n_words, opts.topics), seed=opts.seed))
    on_stage("training DAFed-LDA: parties read each other's channels and publish asynchronously")
    sim = run_simulation(data.parties, dafed_spec, [chain.channel(pid) for pid in ids], cp, algorithm="dafed-lda",
                         max_delay=opts.max_delay, on_round=on_round, history_dir=out / "history")
    plot_history(out, histories_in(out / "history"), title="DAFed-LDA")
    chain_facts = {"transport": "embedded-chain", "registry": chain.consortium.deployment.registry,
                   **chain.publication()}
    chain.close()
    dafed = write_async_run(data, dafed_spec, sim, _mkdir(out / "dafed"), max_delay=opts.max_delay, extra=chain_facts)
    on_stage("training centralized LDA (all documents pooled) for comparison")
    central = run_baseline(data, "centralized-lda", central_spec, _mkdir(out / "centralized"), eval_every=max(opts.iterations // 10, 1), progress=baseline_progress)
    on_stage("training stand-alone LDA (each party alone) for comparison")
    alone = run_baseline(data, "local-lda", central_spec, _mkdir(out / "standalone"), eval_every=max(opts.iterations // 10, 1), progress=baseline_progress)
    runs = {"dafed-lda": dafed, "centralized-lda": central, "stand-alone": alone}
    plot_model_comparison(
        out / "comparison.png",
        {name: {k: run.get(k) for k, _ in COMPARISON_METRICS} for name, run in runs.items()},
        COMPARISON_METRICS,
        title=f"{opts.dataset}, {opts.parties} parties, K={opts.topics}, {opts.iterations} sweeps",
    )
    report = dafed | {
        "comparison": {name: {k: r.get(k) for k in ("perplexity", "perplexity_eq16", "npmi", "topic_diversity", "macro_f1", "wall_seconds")} for name, r in runs.items()},
        "dafed_vs_centralized_perplexity_gap": dafed["perplexity"] / central["perplexity"] - 1.0,
    }
    write_json(out / "summary.json", report)
    for name in ("topics.json", "model.npz", "vocab.json"):
        (out / name).write_bytes((out / "dafed" / name).read_bytes())
    return report


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
