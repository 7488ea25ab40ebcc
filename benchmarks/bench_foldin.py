"""Fold-in (θ of held-out documents under a fixed Φ): our dense and sparse kernels against tomotopy's ``infer``.

    python benchmarks/bench_foldin.py [--dataset 20newsgroups] [--topics 50,200,1000] [--documents 2000]
                                      [--sweeps 40] [--iterations 50] [--repeats 3] [--json out.json]

tomotopy 0.14 trains ``--sweeps`` sweeps at K topics (α 50/K, β 0.01, one thread) on the dataset's training split;
its Φ is then the fixed Φ of every fold-in, on ``--documents`` seeded documents of the test split (the training
vocabulary's words): ``models.foldin``'s dense kernel (K multiply-adds and a K-long search a token) and its
sparse one (the document's topics, and the prior's K only when its part is drawn; ``fold_in`` takes it from
``SPARSE_FROM`` topics), ``--iterations`` sweeps each, half burn-in; tomotopy's ``infer`` of the same documents
with the same iterations, one worker. One thread each, in turns, median of ``--repeats``. Agreement: the mean
log Σ_k θ_dk φ_kw a token under each kernel's θ (the two are exact samplers of one chain, so they differ only by
Monte Carlo error).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_sampler import tomotopy_model, tomotopy_phi, used_vocabulary  # noqa: E402

from fedtopic.corpus.datasets import load_dataset  # noqa: E402
from fedtopic.models import foldin  # noqa: E402
from fedtopic.models.prior import alpha_total, alpha_vector  # noqa: E402


def _mean_log_prob(theta: np.ndarray, phi: np.ndarray, words: np.ndarray, doc_ptr: np.ndarray) -> float:
    doc_of = np.repeat(np.arange(len(doc_ptr) - 1), np.diff(doc_ptr))
    return float(np.log(np.einsum("nk,kn->n", theta[doc_of], phi[:, words])).mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="20newsgroups")
    ap.add_argument("--topics", default="50,200,1000")
    ap.add_argument("--documents", type=int, default=2000)
    ap.add_argument("--sweeps", type=int, default=40)
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    data = load_dataset(args.dataset, progress=False)
    train, test = used_vocabulary(data.train, data.test.sample_documents(args.documents, 0))
    words, doc_ptr = test.words.astype(np.int32), test.doc_ptr
    vocab = np.array(train.vocab)
    rows = []
    for k in (int(x) for x in args.topics.split(",")):
        alpha = 50.0 / k
        tomo = tomotopy_model(train, k, alpha, seed=1)
        tomo.train(args.sweeps, workers=1)
        phi = tomotopy_phi(tomo, train.vocab)
        docs = [tomo.make_doc(vocab[words[doc_ptr[d]:doc_ptr[d + 1]]].tolist()) for d in range(test.n_docs)]
        phi_t = np.ascontiguousarray(phi.T)
        kernel_args = (phi_t, words, doc_ptr, alpha_vector(alpha, k), alpha_total(alpha, k), np.full(k, 1.0 / k),
                       args.iterations, args.iterations // 2, np.uint64(0))
        kernels = {"dense": foldin._fold_in_kernel, "sparse": foldin._fold_in_sparse_kernel}
        for kernel in kernels.values():  # compiled or loaded before timing
            kernel(phi_t, words[:4], np.array([0, 4]), *kernel_args[3:])
        times: dict[str, list[float]] = {name: [] for name in (*kernels, "tomotopy")}
        thetas = {}
        for _ in range(args.repeats):
            for name, kernel in kernels.items():
                started = time.perf_counter()
                thetas[name] = kernel(*kernel_args)
                times[name].append(time.perf_counter() - started)
            started = time.perf_counter()
            tomo.infer(docs, iterations=args.iterations, workers=1, together=False)
            times["tomotopy"].append(time.perf_counter() - started)
        row = {"topics": k, "tokens": int(len(words)), **{f"{n}_s": statistics.median(t) for n, t in times.items()},
               **{f"{n}_log_prob": _mean_log_prob(th, phi, words, doc_ptr) for n, th in thetas.items()}}
        row["dense_over_sparse"] = row["dense_s"] / row["sparse_s"]
        row["tomotopy_over_sparse"] = row["tomotopy_s"] / row["sparse_s"]
        rows.append(row)
        print("  ".join(f"{key} {v:.4g}" if isinstance(v, float) else f"{key} {v}" for key, v in row.items()),
              flush=True)
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
