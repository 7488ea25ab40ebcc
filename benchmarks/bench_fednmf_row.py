"""One row of FedNMF's Table III, timed and scored exactly as ``fedtopic experiment fednmf-tables`` does.

    python benchmarks/bench_fednmf_row.py [--dataset rt-snippets] [--topics 200] [--method FedAdam]
        [--rounds 30] [--opt precision=float64] [--json out.json]

The row's federated run (10 clients, Dir(1) labels, C = 0.2, E = 10 local epochs, through a real aggregator
process, both cores) and its scoring (WE coherence, NPMI, SVM macro-F1 and accuracy on H). "seconds" is what the
table's runner records for the row: the training and scoring, not the corpus load. To compare two commits, run
this file from each in turn (``git worktree add``, ``PYTHONPATH=<tree>``), alternating.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fedtopic.experiments.fednmf_paper import (  # noqa: E402
    TableSettings,
    methods,
    table_data,
    table_row,
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="rt-snippets")
    ap.add_argument("--topics", type=int, default=200)
    ap.add_argument("--method", default="FedAdam", help="a row name of Table III (FedAvg, FedAdam+MI, NMF+SGD, …)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds or epochs (default: the table's)")
    ap.add_argument("--opt", action="append", default=[], help="an extra algorithm option, key=value")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    s = TableSettings(topics=(args.topics,))
    rows = {name: (algorithm, options, iterations) for name, algorithm, options, iterations in methods(s)}
    if args.method not in rows:
        sys.exit(f"bench_fednmf_row: no row {args.method!r}; choose one of {', '.join(rows)}")
    algorithm, options, iterations = rows[args.method]
    extra = dict(o.split("=", 1) for o in args.opt)
    row = table_row(table_data(args.dataset, s), s, args.topics, args.method, algorithm, options | extra,
                    args.rounds or iterations)
    out = {"dataset": args.dataset, **row, "seconds": round(row["seconds"], 1)}
    print(json.dumps(out))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
