"""gFedNTM on unequal parties against centralised ProdLDA (issue 46 item 14): recovered topics, NPMI, macro-F1.

    python benchmarks/bench_gfedntm_unequal.py [--seeds 3] [--sizes 1000,2000,3000] [--json out.json]

Three parties that share 6 topics and own 3 each (K = 15, the gFedNTM paper's §4.1.1 generator,
``corpus.synthetic.generate_synthetic``, documents θ ~ Dir(``--alpha``) over their party's 9 topics), cut to
sizes 1 : 2 : 3; a quarter of each party held out. Labels are
the parties (what the SVM tells apart from θ: their own topics). Centralised ProdLDA (``fedtopic train``'s
``prodlda``) on the pooled documents and gFedNTM (``gfedntm-prodlda`` through a real aggregator, protection none)
with the same settings (batch 64, early stopping), both evaluated by the same code (``ntm_scores``). A true topic
counts as recovered when a learned topic (each matched
once: the Hungarian assignment on shared top-10 words) when they share at least 5 of their top 10 words; TSS
(the gFedNTM paper's Eq. 6, Hellinger) beside it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fedtopic.algorithms.ntm.run_folder import ntm_scores  # noqa: E402
from fedtopic.algorithms.registry import get_algorithm  # noqa: E402
from fedtopic.corpus.pool import merge_corpora  # noqa: E402
from fedtopic.corpus.synthetic import generate_synthetic  # noqa: E402
from fedtopic.corpus.training_data import TrainingData  # noqa: E402
from fedtopic.eval.ground_truth import tss  # noqa: E402
from fedtopic.runs.folder import load_topic_model  # noqa: E402
from fedtopic.simulation.run import simulate_run  # noqa: E402

RECOVERED_OVERLAP = 5  # of the top 10 words


def recovered(true_phi: np.ndarray, phi: np.ndarray) -> int:
    """True topics whose one-to-one match (Hungarian on shared top-10 words) shares at least
    ``RECOVERED_OVERLAP`` of their top 10 words (ProdLDA's softmax topics are flat, so cosine on whole rows says
    little)."""
    top_true = np.argsort(-true_phi, axis=1)[:, :10]
    top = np.argsort(-phi, axis=1)[:, :10]
    shared = np.array([[len(np.intersect1d(a, b)) for b in top] for a in top_true])
    rows, cols = linear_sum_assignment(-shared)
    return int(np.count_nonzero(shared[rows, cols] >= RECOVERED_OVERLAP))


def unequal_data(sizes: list[int], n_words: int, alpha: float, seed: int) -> tuple[TrainingData, np.ndarray]:
    synth = generate_synthetic(n_parties=3, n_topics=15, n_shared=6, n_words=n_words, docs_per_party=max(sizes),
                               doc_length=100, alpha=alpha, seed=seed)
    parties, tests = [], []
    for part, size in zip(synth.parties, sizes):
        part = part.subset(np.arange(size))
        cut = size - size // 4
        parties.append(part.subset(np.arange(cut)))
        tests.append(part.subset(np.arange(cut, size)))
    train = merge_corpora(parties)
    return TrainingData("unequal", train, merge_corpora(tests), parties), synth.phi


def run(seed: int, sizes: list[int], n_words: int, alpha: float) -> list[dict]:
    data, true_phi = unequal_data(sizes, n_words, alpha, seed)
    rows = []
    central_algo = get_algorithm("prodlda")
    spec = central_algo.spec(15, 100, seed, {})
    fitted = central_algo.fit(data.parties, spec)[0]
    rows.append({"system": "centralised ProdLDA", "seed": seed, "recovered": recovered(true_phi, fitted.model.phi),
                 "tss": tss(true_phi, fitted.model.phi), "epochs": (fitted.extra or {}).get("epochs"),
                 "best_epoch": (fitted.extra or {}).get("best_epoch")}
                | ntm_scores(fitted.model, data, fitted.theta, seed))
    fed = get_algorithm("gfedntm-prodlda")
    with tempfile.TemporaryDirectory() as tmp:
        summary = simulate_run(data, "gfedntm-prodlda", fed.spec(15, 100, seed, {}), Path(tmp))
        model = load_topic_model(Path(tmp))
    rows.append({"system": "gFedNTM (3 parties)", "seed": seed, "recovered": recovered(true_phi, model.phi),
                 "tss": tss(true_phi, model.phi),
                 "npmi": summary["npmi"], "macro_f1": summary.get("macro_f1"), "epochs": summary.get("epochs"),
                 "best_epoch": summary.get("best_epoch"),
                 "steps": summary.get("steps")})
    for row in rows[-2:]:
        print(f"seed {seed} {row['system']:22s} recovered {row['recovered']:2d}/15  TSS {row['tss']:.2f}  "
              f"NPMI {row['npmi']:.3f}  "
              f"macro-F1 {row.get('macro_f1', float('nan')):.3f}  epochs {row.get('epochs')} (best "
              f"{row.get('best_epoch')})", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--sizes", default="1000,2000,3000")
    parser.add_argument("--vocabulary", type=int, default=2000)
    parser.add_argument("--alpha", type=float, default=0.1, help="the documents' Dirichlet over their party's topics")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",")]
    rows = [row for seed in range(1, args.seeds + 1) for row in run(seed, sizes, args.vocabulary, args.alpha)]
    print("\nmedian over seeds:")
    for system in ("centralised ProdLDA", "gFedNTM (3 parties)"):
        mine = [r for r in rows if r["system"] == system]
        print(f"  {system:22s} recovered {statistics.median(r['recovered'] for r in mine)}  "
              f"NPMI {statistics.median(r['npmi'] for r in mine):.3f}  "
              f"macro-F1 {statistics.median(r['macro_f1'] for r in mine):.3f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
