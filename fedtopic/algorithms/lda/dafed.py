"""``dafed-lda``: decentralised asynchronous federated LDA (CSFed/DAFed paper §7, Alg. 3).

Every party publishes N_p, encrypted for the readers CP allows (Def. 4), on its
own channel contract, and trains on the latest, possibly stale, counts of the
channels it may read: N_Σ = N_p + Σ_q N_q (Eq. 8), no server and no waiting.
A party stops when a party it reads has finished (§8.1), or optionally when
fewer than ``converge_tol`` of its tokens changed topic in a round.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.asynchronous import AsyncPartyRun, AsyncRun
from fedtopic.algorithms.base import Mode, Option, TrainSpec, UpdateSpec
from fedtopic.algorithms.lda.dp_options import FEDERATED_DP_OPTIONS
from fedtopic.algorithms.lda.federated import FederatedLDA
from fedtopic.algorithms.lda.options import (
    LDA_OPTIONS,
    PRIOR_OPTIONS,
    STEPS_OPTION,
    check_prior_options,
    hyper_from_spec,
)
from fedtopic.corpus.types import Corpus

WIDTH_OPTION = Option("optim_width", int, 4096,
                      "with optim_interval: columns of the histograms a party publishes; a document of this many "
                      "tokens or more is counted in the last (exact below it)", minimum=2)


class DAFedLDA(FederatedLDA):
    name = "dafed-lda"
    summary = "asynchronous federated LDA: parties publish encrypted counts on chain channels, no server"
    paper = "CSFed/DAFed-LDA §7 (Alg. 3)"
    modes = frozenset({Mode.async_})
    options = LDA_OPTIONS + (
        STEPS_OPTION,
        Option("converge_tol", float, None, "also stop when fewer than this fraction of a party's tokens changed "
               "topic in a round", minimum=0.0, maximum=1.0, default_text="off"),
    ) + PRIOR_OPTIONS + (WIDTH_OPTION,) + FEDERATED_DP_OPTIONS
    update = UpdateSpec("counts", "N_p int32[V,K] word-topic counts, sparse-encoded, AES-256-GCM per channel; "
                                  "readers sum them")

    def check_data(self, parts: Sequence[Corpus], spec: TrainSpec) -> None:
        """Also: learned priors need the dense sampler and no DP (the histograms would be published unnoised)."""
        super().check_data(parts, spec)
        check_prior_options(spec)

    def channel_party(self, party_id: str, index: int, corpus: Corpus, spec: TrainSpec, *,
                  secret: bytes | None = None):  # -> LDAParty
        """With ``optim_interval``, a party that publishes its histograms and learns α (``prior_party``)."""
        if not spec.options.get("optim_interval"):
            return super().channel_party(party_id, index, corpus, spec, secret=secret)
        from fedtopic.algorithms.lda.prior_party import LearningLDAParty

        return LearningLDAParty(party_id, corpus, hyper_from_spec(spec), width=int(spec.options["optim_width"]),
                                steps=int(spec.options["steps"]), seed=spec.seed + index)  # type: ignore[arg-type]

    def publication_shape(self, spec: TrainSpec, n_words: int) -> tuple[int, int]:
        """N_p's [V, K], with the histograms' rows below it when α is learned."""
        if not spec.options.get("optim_interval"):
            return super().publication_shape(spec, n_words)
        from fedtopic.algorithms.lda.published_priors import extra_rows

        return n_words + extra_rows(spec.topics, int(spec.options["optim_width"])), spec.topics  # type: ignore[arg-type]

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
            "short_of_planned_sweeps": max(0, log.planned_sweeps - log.sweeps)} | dict(run.extra) |
            ({} if not hasattr(run.party, "clipped_documents") else  # learned α: documents past optim_width
             {"optim_clipped_documents": run.party.clipped_documents}))
