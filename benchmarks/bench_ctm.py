"""Our CombinedTM (and ProdLDA) against contextualized-topic-models' CombinedTM, same data and settings.

    python benchmarks/bench_ctm.py [--dataset 20newsgroups] [--vocabulary 2000] [--topics 50] [--epochs 20]
                                   [--ctm-venv /tmp/ctm-venv] [--json out.json]

The package is installed only into its own venv (``--ctm-venv``, created on first use with
``--system-site-packages`` so it reuses this machine's torch, then ``pip install --no-deps
contextualized-topic-models==2.5.0 wordcloud``: the few modules its CombinedTM imports), never into
fedtopic's environment; ``_ctm_driver.py`` runs there and imports nothing from fedtopic.

Same data for both: the dataset's training split over its ``--vocabulary`` most frequent words (the package's
default preprocessing keeps 2,000), the 75 % of documents our trainer trains on (its seeded split; the other
25 % are its early-stopping set), the same all-MiniLM-L6-v2 embeddings (ours, of each document's full token
text). Same settings: K, batch 64, Adam lr 2e-3 with β₁ = 0.99, ``--epochs`` epochs without early stopping,
one thread. Reported: seconds per epoch (ours includes its validation pass) and the NPMI of each model's top
10 words on the test split. Differences that stay: we compute in float64 (bit-reproducible and equal to the
federated run), the package in float32; the package drops the last incomplete batch.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _anchor_venv import anchor_python  # noqa: E402

from fedtopic.corpus.datasets import load_dataset  # noqa: E402
from fedtopic.eval.coherence import npmi_coherence, top_word_ids  # noqa: E402
from fedtopic.experiments.gfedntm_paper import consensus_vocabulary  # noqa: E402
from fedtopic.models.nnls import counts_matrix  # noqa: E402
from fedtopic.neural.ntm_train import NTMSettings, train_centralised  # noqa: E402
from fedtopic.neural.prodlda import topics  # noqa: E402
from fedtopic.neural.sentence_embeddings import embed_corpus  # noqa: E402

CTM_PIN = "contextualized-topic-models==2.5.0"
DRIVER = Path(__file__).with_name("_ctm_driver.py")


def ctm_python(venv: Path) -> Path:
    """The venv's python, creating the venv with the package if it is not there."""
    return anchor_python(venv, "contextualized_topic_models.models.ctm", [["--no-deps", CTM_PIN, "wordcloud"]])


def train_rows(n: int, seed: int) -> np.ndarray:
    """The documents ``train_centralised`` trains on (its seeded 75 % split), sorted."""
    order = np.random.default_rng([seed, 0x50524F44]).permutation(n)
    return np.sort(order[:n - max(1, n // 4)])


def ours(counts, ctx, k: int, epochs: int, seed: int) -> tuple[float, np.ndarray]:
    """(seconds per epoch, Φ [K,V]) of our trainer."""
    marks: list[float] = []
    started = time.perf_counter()
    model = train_centralised(counts, ctx, k, NTMSettings(epochs=epochs, patience=epochs + 1), seed=seed,
                              on_epoch=lambda e, v: marks.append(time.perf_counter()))
    return (marks[-1] - started) / len(marks), topics(model.flat, model.shapes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="20newsgroups")
    ap.add_argument("--vocabulary", type=int, default=2000)
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ctm-venv", type=Path, default=Path(tempfile.gettempdir()) / "fedtopic-ctm-venv")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    import torch

    torch.set_num_threads(1)
    python = ctm_python(args.ctm_venv)
    data = load_dataset(args.dataset, progress=False)
    ctx_all = embed_corpus(data.train).astype(np.float64)
    (train,) = consensus_vocabulary([data.train], args.vocabulary)  # the cut from the training split only
    ids = {w: i for i, w in enumerate(data.test.vocab)}
    test = data.test.restrict_vocabulary(np.array([ids[w] for w in train.vocab], dtype=np.int64))
    counts = counts_matrix(train)
    rows = train_rows(counts.shape[0], args.seed)
    print(f"{args.dataset}: {counts.shape[0]:,} documents ({len(rows):,} trained on), V = {counts.shape[1]:,}, "
          f"K = {args.topics}, {args.epochs} epochs", file=sys.stderr)

    def npmi(phi: np.ndarray) -> float:
        return float(np.mean(npmi_coherence(top_word_ids(phi, 10), test)))

    results = {}
    for name, ctx in (("ours: CombinedTM", ctx_all), ("ours: ProdLDA", None)):
        per_epoch, phi = ours(counts, ctx, args.topics, args.epochs, args.seed)
        results[name] = {"seconds_per_epoch": per_epoch, "npmi": npmi(phi)}
        print(f"{name}: {per_epoch:.2f} s/epoch, NPMI {results[name]['npmi']:.3f}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        sub = counts[rows].tocsr()
        np.savez(Path(tmp) / "data.npz", data=sub.data.astype(np.float32), indices=sub.indices, indptr=sub.indptr,
                 shape=np.array(sub.shape), ctx=ctx_all[rows].astype(np.float32))
        run = subprocess.run([str(python), str(DRIVER), str(Path(tmp) / "data.npz"), str(Path(tmp) / "out.npz"),
                              "--topics", str(args.topics), "--epochs", str(args.epochs), "--seed", str(args.seed)],
                             capture_output=True, text=True)  # the package's progress bars stay quiet
        if run.returncode != 0:
            sys.exit(f"the package's run failed:\n{run.stderr[-2000:]}")
        with np.load(Path(tmp) / "out.npz") as z:
            results[f"{CTM_PIN}: CombinedTM"] = {"seconds_per_epoch": float(z["seconds"]) / args.epochs,
                                                   "npmi": npmi(np.asarray(z["phi"], dtype=np.float64))}
    ref = results[f"{CTM_PIN}: CombinedTM"]["seconds_per_epoch"]
    print("| model | s / epoch | × the package | NPMI (test split) |\n|---|---:|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {r['seconds_per_epoch']:.2f} | {r['seconds_per_epoch'] / ref:.2f} | {r['npmi']:.3f} |")
    if args.json:
        args.json.write_text(json.dumps({"settings": vars(args) | {"ctm_venv": str(args.ctm_venv),
                                                                    "json": str(args.json)},
                                         "documents": int(counts.shape[0]), "trained_on": int(len(rows)),
                                         "results": results}, indent=2))


if __name__ == "__main__":
    main()
