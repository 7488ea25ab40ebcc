"""contextualized-topic-models' CombinedTM on a prepared matrix, run by ``bench_ctm.py`` inside its own venv.

    <venv>/bin/python benchmarks/_ctm_driver.py DATA.npz OUT.npz --topics 50 --epochs 20 --seed 0

DATA.npz holds the training bag of words (CSR parts ``data``/``indices``/``indptr``/``shape``) and the sentence
embeddings ``ctx`` float32[D,384]; OUT.npz gets the topic-word distribution ``phi`` [K,V] and ``seconds``
(wall time of ``fit``). Only numpy, scipy, torch and that package: nothing from fedtopic is imported here.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp
import torch
from contextualized_topic_models.datasets.dataset import CTMDataset
from contextualized_topic_models.models.ctm import CombinedTM


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("out")
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    with np.load(args.data) as z:
        bow = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
        ctx = z["ctx"]
    idx2token = {i: f"w{i}" for i in range(bow.shape[1])}
    dataset = CTMDataset(X_contextual=ctx, X_bow=bow, idx2token=idx2token)
    model = CombinedTM(bow_size=bow.shape[1], contextual_size=ctx.shape[1], n_components=args.topics,
                       num_epochs=args.epochs, batch_size=64, lr=2e-3, momentum=0.99,
                       num_data_loader_workers=0)
    started = time.perf_counter()
    model.fit(dataset, do_train_predictions=False)
    seconds = time.perf_counter() - started
    np.savez(args.out, phi=model.get_topic_word_distribution(), seconds=seconds)


if __name__ == "__main__":
    main()
