"""A run folder written by the real history writer (two parties, K 3), for the dashboard's tests."""

from __future__ import annotations

import time

import numpy as np

from fedtopic.runs.folder import write_run_info
from fedtopic.runs.history import HistoryLine, HistoryWriter
from fedtopic.runs.topic_snapshot import build_snapshot, snapshot_path, write_snapshot


def history_line(party: str, r: int, **kw) -> HistoryLine:
    return HistoryLine(party=party, algorithm="csfed-lda", round=r, time=time.time(), compute_s=0.1, wait_s=0.05,
                       bytes_up=100, bytes_down=200, contributors=["p1", "p2"], quality=-8.0 + 0.01 * r,
                       quality_name="loglik_per_token", **kw)


def run_folder(tmp_path, rounds: int = 12):
    run = tmp_path / "run"
    (run / "history").mkdir(parents=True)
    write_run_info(run, {"kind": "simulate", "algorithm": "csfed-lda", "mode": "sync", "topics": 3,
                         "iterations": rounds, "parties": ["p1", "p2"], "protection": "mask", "options": {}})
    vocab = [f"w{i}" for i in range(20)]
    rng = np.random.default_rng(0)
    phi = rng.dirichlet(np.full(20, 0.2), size=3)
    for pid in ("p1", "p2"):
        w = HistoryWriter(run / "history" / f"{pid}.jsonl")
        for r in range(rounds):
            top = np.argsort(-phi, axis=1)[:, :10]
            w.append(history_line(pid, r, top_words=[[vocab[i] for i in row] for row in top] if r % 10 == 0 else None,
                           top_weights=[[float(phi[k, i]) for i in top[k]] for k in range(3)] if r % 10 == 0 else None,
                           prevalence=[0.5, 0.3, 0.2] if r % 10 == 0 else None))
        write_snapshot(snapshot_path(run / "history" / f"{pid}.jsonl"),
                       build_snapshot(phi, np.array([0.5, 0.3, 0.2]), vocab, party=pid, algorithm="csfed-lda",
                                      round=rounds - 1))
    return run, phi
