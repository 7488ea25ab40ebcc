"""``dafed-lda``: decentralised asynchronous federated LDA (CSFed/DAFed paper §7, Alg. 3).

Every party publishes N_p, encrypted for the readers CP allows (Def. 4), on its
own channel contract, and trains on the latest, possibly stale, counts of the
channels it may read: N_Σ = N_p + Σ_q N_q (Eq. 8), no server and no waiting.
A party stops when a party it reads has finished (§8.1), or optionally when
fewer than ``converge_tol`` of its tokens changed topic in a round.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.asynchronous import AsyncPartyRun, AsyncRun
from fedtopic.algorithms.base import Mode, Option, UpdateSpec
from fedtopic.algorithms.lda.dp_options import FEDERATED_DP_OPTIONS
from fedtopic.algorithms.lda.federated import FederatedLDA
from fedtopic.algorithms.lda.options import LDA_OPTIONS, STEPS_OPTION


class DAFedLDA(FederatedLDA):
    name = "dafed-lda"
    summary = "asynchronous federated LDA: parties publish encrypted counts on chain channels, no server"
    paper = "CSFed/DAFed-LDA §7 (Alg. 3)"
    modes = frozenset({Mode.async_})
    options = LDA_OPTIONS + (
        STEPS_OPTION,
        Option("converge_tol", float, None, "also stop when fewer than this fraction of a party's tokens changed "
               "topic in a round", minimum=0.0, maximum=1.0, default_text="off"),
    ) + FEDERATED_DP_OPTIONS
    update = UpdateSpec("counts", "N_p int32[V,K] word-topic counts, sparse-encoded, AES-256-GCM per channel; "
                                  "readers sum them")

    def write_async_simulation(self, out: Path, run: AsyncRun) -> dict[str, Any]:
        """Every party's Φ_Σ (parties of different consortia differ), evaluated on the held-out documents; the
        staleness of what each read, rounds and bytes (``async_report``)."""
        from fedtopic.algorithms.lda.async_report import write_async_run

        extra = dict(run.extra)
        max_delay = float(extra.pop("max_delay", 0.0))
        return write_async_run(run.data, run.spec, run, out, algorithm=self.name, max_delay=max_delay, extra=extra)

    def write_async_party(self, out: Path, run: AsyncPartyRun) -> dict[str, Any]:
        """θ_p (its own, never published) and Φ_Σ, evaluated on its own held-out documents."""
        from fedtopic.algorithms.lda.run_folder import write_party_model

        log = run.log
        return write_party_model(out, run.party, run.test, run.tokenizer, {
            "algorithm": self.name, "dataset": run.dataset, "parties": run.n_parties,
            "wall_seconds": log.compute_seconds + log.comm_seconds + log.delay_seconds, "bytes_sent": log.bytes_sent,
            "rounds": log.rounds, "stopped_by": log.stopped_by, "bytes_received": log.bytes_received,
            "comm_seconds_per_round": log.comm_seconds / max(log.rounds, 1),
            "mean_staleness": float(np.mean(log.staleness)) if log.staleness else 0.0,
            "peers_behind": dict(log.behind), "sweeps": log.sweeps, "planned_sweeps": log.planned_sweeps,
            "short_of_planned_sweeps": max(0, log.planned_sweeps - log.sweeps)} | dict(run.extra))
