"""A gFedNTM step through the aggregator with every node its own process, as a consortium runs it.

    python benchmarks/bench_gfedntm_nodes.py [--nodes 5] [--docs 1280] [--vocabulary 5000] [--topics 50]
                                             [--epochs 3] [--wire float64 float32] [--repeats 1] [--json out.json]

``bench_gfedntm.py``'s corpus and settings (synthetic LDA documents, batch 64 per node), but the nodes are
``fedtopic node run`` processes (each party's documents in a UCI bag-of-words file, the shared vocabulary as
``--vocab``) and the aggregator a ``fedtopic aggregator serve`` child, all on 127.0.0.1: five interpreters, so
no node waits for another's GIL, which ``simulate``'s threads do. ``node run`` holds out a tenth of a party's
documents as its test split, so an epoch has fewer steps than in ``bench_gfedntm.py``; figures are per step.

A node's seconds per step: the wall time between the ends of its first and last epochs (the history's
``time``) over the steps between (the first epoch also opens sessions and loads code), median over nodes. The
centralised step (``bench_gfedntm.centralised_epoch``, 5 × 64 documents) is measured in the same run, before
and after each federated run; the ratio is to their median.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_gfedntm import (  # noqa: E402
    BATCH,
    centralised_epoch,
    corpus_arguments,
    synthetic_consortium,
)

from fedtopic.algorithms.registry import get_algorithm  # noqa: E402
from fedtopic.allocator import keep_freed_buffers  # noqa: E402
from fedtopic.corpus.vocabulary import Vocabulary  # noqa: E402
from fedtopic.models.nnls import counts_matrix  # noqa: E402
from fedtopic.runs.history import read_history  # noqa: E402
from fedtopic.simulation.aggregator_proc import AggregatorProcess  # noqa: E402
from fedtopic.simulation.local_consortium import local_consortium  # noqa: E402


def write_uci(corpus: Any, folder: Path, name: str) -> Path:
    """``corpus`` as UCI docword.NAME.txt + vocab.NAME.txt in ``folder``; the docword path."""
    counts = counts_matrix(corpus).tocoo()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"vocab.{name}.txt").write_text("\n".join(corpus.vocab) + "\n", encoding="utf-8")
    lines = [f"{counts.shape[0]}\n{counts.shape[1]}\n{counts.nnz}\n"]
    lines += [f"{d + 1} {w + 1} {int(c)}\n" for d, w, c in zip(counts.row, counts.col, counts.data)]
    path = folder / f"docword.{name}.txt"
    path.write_text("".join(lines), encoding="ascii")
    return path


def run_nodes(parties: list, vocab: tuple[str, ...], args: argparse.Namespace, wire: str, work: Path) -> float:
    """Median over nodes of seconds per step between the ends of their first and last epochs."""
    options = {"batch": str(len(parties) * BATCH), "tolerance": "0", "wire": wire}  # the union: BATCH a node
    spec = get_algorithm("gfedntm-prodlda").spec(args.topics, args.epochs, args.seed, options)
    config, cfg = local_consortium(work / "consortium", len(parties), spec, algorithm="gfedntm-prodlda",
                                   protection="none", seed=args.seed)
    shared = work / "vocab.json"
    shared.write_text(Vocabulary(vocab).to_json(), encoding="utf-8")
    docwords = [write_uci(c, work / "data", pid) for pid, c in zip(cfg.party_ids, parties)]
    with AggregatorProcess(config, work / "aggregator", work / "aggregator.log") as agg:
        procs = [subprocess.Popen([sys.executable, "-m", "fedtopic.cli.main", "node", "run", "--config", str(config),
                                   "--party", pid, "--url", agg.url, "--corpus", str(path), "--vocab", str(shared),
                                   "--format", "json"], stdout=subprocess.DEVNULL,
                                  stderr=open(work / f"{pid}.log", "w"))
                 for pid, path in zip(cfg.party_ids, docwords)]
        try:
            for pid, proc in zip(cfg.party_ids, procs):
                if proc.wait(timeout=1800) != 0:
                    raise SystemExit(f"node {pid} failed:\n{(work / f'{pid}.log').read_text()[-2000:]}")
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    per_step = []
    for pid in cfg.party_ids:
        rows = read_history(config.parent / "state" / pid / "history.jsonl")
        steps = sum(int(r["extra"]["steps"]) for r in rows[1:])
        per_step.append((rows[-1]["time"] - rows[0]["time"]) / steps)
    return statistics.median(per_step)


def main() -> None:
    keep_freed_buffers()  # as every `fedtopic` command does (the nodes and the aggregator)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    corpus_arguments(ap)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--wire", nargs="+", default=["float64", "float32"], choices=("float64", "float32"))
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.epochs < 2:
        ap.error("--epochs must be at least 2 (the first is not timed)")
    synth, data = synthetic_consortium(args)
    counts = counts_matrix(data.train)
    central: list[float] = []
    rows: dict[str, list[float]] = {}

    def centralised() -> None:
        seconds, steps = centralised_epoch(counts, args.topics, args.nodes * BATCH, args.seed)
        central.append(seconds / steps)

    centralised()
    for _ in range(args.repeats):
        for wire in args.wire:
            with tempfile.TemporaryDirectory(prefix="bench-nodes-") as tmp:
                rows.setdefault(wire, []).append(run_nodes(list(synth.parties), data.train.vocab, args, wire,
                                                           Path(tmp)))
            print(f"wire {wire}: {rows[wire][-1]:.3f} s a step", file=sys.stderr)
            centralised()
    base = statistics.median(central)
    print(f"\n{args.nodes} node processes × {args.docs} documents, V = {args.vocabulary:,}, K = {args.topics}, "
          f"batch {BATCH} per node, protection none; centralised {base:.3f} s a step "
          f"(median of {len(central)}: {', '.join(f'{c:.3f}' for c in central)})\n")
    print("| wire | s / step | × centralised step |")
    print("|---|---:|---:|")
    for wire, values in rows.items():
        step = statistics.median(values)
        print(f"| {wire} | {step:.3f} | {step / base:.2f} |")
    if args.json:
        args.json.write_text(json.dumps({"settings": {k: str(v) for k, v in vars(args).items()},
                                         "centralised": central, "node_processes": rows}, indent=2))


if __name__ == "__main__":
    main()
