"""``fednmf``: FedNMF and FedNMF+MI (Si et al.), synchronous rounds through the aggregator (paper Alg. 1)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.base import (
    Algorithm,
    Fitted,
    Mode,
    TrainSpec,
    UpdateSpec,
    metric,
)
from fedtopic.algorithms.dp_sgd import DP_SGD_OPTIONS, check_distributed_protection
from fedtopic.algorithms.federated import ConsortiumRun, PartyRun, history_totals
from fedtopic.algorithms.fednmf.ddp import nmf_dp
from fedtopic.algorithms.fednmf.learned_little import learned_little
from fedtopic.algorithms.nmf.options import (
    FEDERATED_OPTIONS,
    SGD_OPTIONS,
    client_fraction,
)
from fedtopic.corpus.types import Corpus
from fedtopic.errors import TrainingError


class FedNMF(Algorithm):
    name = "fednmf"
    summary = ("federated NMF: clients train W (and the MI critic θ) locally by SGD, the server rule "
               "(avg/adagrad/yogi/adam) steps the global model; H_i never leaves its client")
    paper = "FedNMF+MI (Si et al.), Alg. 1; Table III/IV rows FedAvg … FedAdam(+MI)"
    modes = frozenset({Mode.sync})
    options = SGD_OPTIONS + FEDERATED_OPTIONS + DP_SGD_OPTIONS
    update = UpdateSpec("dense", "[N_i·(W_i − W), N_i·(θ_i − θ), N_i] float64 (zeros from unselected clients); "
                                 "mask: fixed point 2^-60, bound ±2^20")
    family = "nmf"

    def party(self, party_id: str, index: int, corpus: Corpus, spec: TrainSpec, *,
              secret: bytes | None = None) -> Any:
        """The client (``FedNMFParty``); its number of peers comes from the consortium (``channels``)."""
        from fedtopic.algorithms.fednmf.party import FedNMFParty

        return FedNMFParty(party_id, index, None, corpus, spec, secret=secret)

    def check_protection(self, spec: TrainSpec, protection: str, n_parties: int) -> None:
        """As every algorithm, and distributed DP only under a protection whose aggregator sees only the sum and
        that carries integer releases (``mask``)."""
        super().check_protection(spec, protection, n_parties)
        dp = nmf_dp(spec.options)
        if dp is None:
            return
        check_distributed_protection(protection)
        dp.planned(n_parties)

    def contributors_per_round(self, spec: TrainSpec, n_parties: int) -> int:
        """|G_t| = max(⌊C·P⌋, 1) selected clients (Alg. 1); the others send zeros."""
        from fedtopic.algorithms.fednmf.server_rules import select_clients

        return len(select_clients(n_parties, client_fraction(spec.options, n_parties), 0, spec.seed))

    def more_contributors_hint(self, spec: TrainSpec, n_parties: int, needed: int) -> str:
        """The client fraction C that selects ``needed`` clients a round."""
        return (f"select at least {needed} clients a round (--opt fraction=C with C·{n_parties} ≥ {needed}; now "
                f"{client_fraction(spec.options, n_parties):g})")

    def headline(self, summary: Mapping[str, Any]) -> str:
        """WE coherence and NPMI, and the SVM's macro-F1 and accuracy where the corpus has labels."""
        return (f"WE coherence {metric(summary, 'we_coherence', '.3f')}, NPMI {metric(summary, 'npmi', '.3f')}"
                + (f", macro-F1 {metric(summary, 'macro_f1', '.3f')}, accuracy {metric(summary, 'accuracy', '.3f')}"
                   if summary.get("macro_f1") is not None else ""))

    def write_simulation(self, out: Path, run: ConsortiumRun) -> dict[str, Any]:
        """The global W (every client must hold the same) and every client's H_i, scored as the paper does
        (§IV-B, §IV-D)."""
        from fedtopic.algorithms.nmf.model import nmf_topic_model
        from fedtopic.algorithms.nmf.run_folder import write_nmf_run

        parties, data = run.parties, run.data
        w = parties[0].w
        disagree = max(float(np.max(np.abs(p.w - w))) for p in parties)
        if disagree != 0.0:
            raise TrainingError(f"clients ended with different global W (max difference {disagree:g})")
        theta = np.vstack([p.topic_weights() for p in parties])
        fitted = Fitted(nmf_topic_model(w, data.train.vocab, self.name, data.tokenizer), theta)
        sent = [row["bytes_up"] for rows in run.histories for row in rows]
        first = run.histories[0]
        extra = {
            "protection": run.protection, "rounds": len(first), "train_wall_seconds": run.wall_seconds,
            "bytes_sent": int(sum(sent)), "bytes_per_client_round": int(np.median(sent)) if sent else 0,
            "selected_per_round": [sum(bool(rows[r]["extra"]["selected"]) for rows in run.histories)
                                   for r in range(len(first))],
            "client_documents": [p.client.n_docs for p in parties],
        }
        if parties[0].dp is not None:
            extra["privacy"] = {p.party_id: p.privacy() for p in parties}
        extra["warnings"] = learned_little(run.histories, dp=parties[0].dp is not None)
        return write_nmf_run(out, data, self.name, run.spec, fitted, wall_seconds=run.wall_seconds, extra=extra)

    def write_party(self, out: Path, run: PartyRun) -> dict[str, Any]:
        """The global model (model.npz with W, topics.json), this client's H_i (theta.npy, which never leaves
        it) and the paper's scores on its own documents."""
        from fedtopic.algorithms.nmf.model import nmf_topic_model
        from fedtopic.eval.nmf_report import evaluate_nmf
        from fedtopic.eval.topic_table import topic_table
        from fedtopic.runs.folder import (
            TopicModelFile,
            save_theta,
            save_topic_model,
            write_summary,
            write_topics,
        )

        party, spec = run.party, run.spec
        out.mkdir(parents=True, exist_ok=True)
        model = nmf_topic_model(party.w, run.train.vocab, self.name, dict(run.tokenizer))
        save_theta(out, party.topic_weights(), run.train.doc_names, run.test.doc_names)
        write_topics(out, topic_table(model.phi, run.train.vocab, run.train, theta=party.topic_weights()))
        save_topic_model(out, TopicModelFile(phi=model.phi, alpha=0.0, beta=0.0, vocab=run.train.vocab,
                                             tokenizer=dict(run.tokenizer), algorithm=self.name,
                                             factors=model.factors))
        scores = evaluate_nmf(model.phi, party.topic_weights(), run.train, seed=spec.seed)
        totals = history_totals(run.history)
        summary = {"algorithm": self.name, "dataset": run.dataset, "parties": run.n_parties,
                   "party": party.party_id, "topics": spec.topics, "iterations": spec.iterations, "seed": spec.seed,
                   "rounds_selected": sum(bool(r["extra"].get("selected")) for r in run.history),
                   "protection": run.protection, "perplexity": float("nan"), **totals,
                   **scores,
                   "scores_on": "this client's own documents (H_i); WE coherence and NPMI of the global topics"}
        if party.dp is not None:
            summary["privacy"] = {party.party_id: party.privacy()}
        summary["warnings"] = learned_little([run.history], dp=party.dp is not None)
        write_summary(out, summary)
        return summary | {"run": str(out)}
