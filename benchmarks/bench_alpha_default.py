"""Which α should the LDA family use when none is given? Measured on every built-in dataset (issue 66 item 5).

    python benchmarks/bench_alpha_default.py [--datasets bbc-news,trec] [--topics 10,50] [--iterations 200]
                                             [--json out.json]

For each dataset and K, ``GibbsLDA`` (β 0.01, its default sampler, one thread, seed 0) is trained with each candidate
α for the same sweeps and scored by the evaluator ``train`` reports with: document-completion perplexity on the
held-out split (``eval.perplexity.completion_perplexity``, 50 fold-in sweeps, the model's own α), NPMI of the top 10
words against the training split, topic diversity (top 25), and, where the dataset is labelled, the macro-F1 of a
linear SVM on θ (trained on the training documents' θ, scored on the test documents' folded-in θ). Candidates: the
paper's 50/K, tomotopy's 0.1, 1/K, and α learned from 0.1 (Minka's fixed point every 10 sweeps, tomotopy's
``optim_interval``). The table prints each figure relative to 50/K's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fedtopic.corpus.datasets import load_dataset  # noqa: E402
from fedtopic.eval.classify import svm_macro_f1  # noqa: E402
from fedtopic.eval.coherence import npmi_coherence, top_word_ids  # noqa: E402
from fedtopic.eval.diversity import topic_diversity  # noqa: E402
from fedtopic.eval.perplexity import completion_perplexity  # noqa: E402
from fedtopic.models.foldin import fold_in  # noqa: E402
from fedtopic.models.lda import GibbsLDA  # noqa: E402

DATASETS = ("bbc-news", "20newsgroups", "reuters-r8", "reuters-r52", "sms-spam", "rt-snippets", "trec", "synthetic")
BETA = 0.01


def candidates(k: int) -> dict[str, tuple[float, int]]:
    """name: (α, optim_interval)."""
    return {"50/K": (50.0 / k, 0), "0.1": (0.1, 0), "1/K": (1.0 / k, 0), "learned from 0.1": (0.1, 10)}


def score(name: str, k: int, label: str, alpha: float, optim: int, iterations: int, seed: int) -> dict:
    data = load_dataset(name)
    started = time.perf_counter()
    model = GibbsLDA(k, alpha=alpha, beta=BETA, seed=seed, optim_interval=optim).fit(data.train, iterations)
    seconds = time.perf_counter() - started
    phi, fitted_alpha = model.phi(), model.alpha
    row = {"dataset": name, "K": k, "alpha": label, "train_s": seconds,
           "alpha_sum": float(np.sum(fitted_alpha) if np.ndim(fitted_alpha) else k * fitted_alpha),
           "perplexity": completion_perplexity(phi, data.test, fitted_alpha, iterations=50, seed=seed),
           "npmi": float(np.mean(npmi_coherence(top_word_ids(phi, 10), data.train))),
           "diversity": topic_diversity(phi)}
    if data.train.labels is not None and data.test.labels is not None:
        theta_test = fold_in(phi, data.test.words, data.test.doc_ptr, fitted_alpha, iterations=50, seed=seed)
        row["macro_f1"] = svm_macro_f1(model.theta(), data.train.labels, theta_test, data.test.labels, seed=seed)
    print(f"  {name:12s} K {k:3d} α {label:16s} perplexity {row['perplexity']:9.1f}  NPMI {row['npmi']:6.3f}  "
          f"diversity {row['diversity']:.3f}  F1 {row.get('macro_f1', float('nan')):.3f}  Σα {row['alpha_sum']:7.2f}  "
          f"{seconds:6.1f} s", flush=True)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--topics", default="4,20,50")
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rows = []
    for name in args.datasets.split(","):
        for k in (int(t) for t in args.topics.split(",")):
            for label, (alpha, optim) in candidates(k).items():
                rows.append(score(name, k, label, alpha, optim, args.iterations, args.seed))
    print("\nrelative to 50/K (perplexity: lower is better; NPMI, diversity, F1: higher):")
    for label in candidates(2):
        ratios = {m: [] for m in ("perplexity", "npmi", "diversity", "macro_f1")}
        for row in rows:
            if row["alpha"] != label:
                continue
            base = next(r for r in rows if r["dataset"] == row["dataset"] and r["K"] == row["K"] and r["alpha"] == "50/K")
            ratios["perplexity"].append(row["perplexity"] / base["perplexity"])
            for metric in ("npmi", "diversity", "macro_f1"):
                if metric in row:
                    ratios[metric].append(row[metric] - base[metric])
        print(f"  {label:16s} perplexity ratio median {statistics.median(ratios['perplexity']):.3f} "
              f"(max {max(ratios['perplexity']):.3f}); NPMI Δ median {statistics.median(ratios['npmi']):+.3f}; "
              f"diversity Δ {statistics.median(ratios['diversity']):+.3f}; "
              f"F1 Δ {statistics.median(ratios['macro_f1']):+.3f} (min {min(ratios['macro_f1']):+.3f})")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
