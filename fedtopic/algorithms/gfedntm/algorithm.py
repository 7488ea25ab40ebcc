"""``gfedntm-prodlda``: gFedNTM (Calvo-Bartolomé et al.), federated ProdLDA by synchronous per-mini-batch
aggregation (Alg. 1 stage 2, Eqs. 1-3) through the aggregator, exact under BatchNorm (``neural.sync_opt``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fedtopic.algorithms.base import Algorithm, Mode, TrainSpec, UpdateSpec, metric
from fedtopic.algorithms.dp_sgd import (
    DP_SGD_OPTIONS,
    DPSGD,
    check_distributed_protection,
)
from fedtopic.algorithms.federated import ConsortiumRun, PartyRun
from fedtopic.algorithms.ntm.options import FEDERATED_OPTIONS
from fedtopic.corpus.types import Corpus
from fedtopic.errors import ConfigError


class GFedNTMProdLDA(Algorithm):
    name = "gfedntm-prodlda"
    summary = ("federated ProdLDA: at every mini-batch step the nodes' gradients (and BatchNorm statistics) are "
               "summed and every node applies the same Adam step, so it trains the centralised model")
    paper = "gFedNTM (Calvo-Bartolomé et al.), Alg. 1 and Eqs. 1-3"
    modes = frozenset({Mode.sync})
    options = FEDERATED_OPTIONS + DP_SGD_OPTIONS
    update = UpdateSpec("dense",
                        "per step five float64 sums: encoder and decoder BatchNorm sums, their gradients, and the "
                        "gradient of the union batch's loss (mask: fixed point 2^-60)")
    family = "ntm"

    def party(self, party_id: str, index: int, corpus: Corpus, spec: TrainSpec, *,
              secret: bytes | None = None) -> Any:
        """The node (``GFedNTMParty`` over ``neural.ntm_train.FederatedNode``; under distributed DP
        ``GFedNTMDDPParty`` over ``neural.ntm_dp.DPNode``, its sampling and noise keyed by ``secret``)."""
        from fedtopic.algorithms.gfedntm.party import GFedNTMParty
        from fedtopic.algorithms.ntm.options import ntm_settings
        from fedtopic.models.nnls import counts_matrix

        if corpus.n_words < 1:
            raise ConfigError(f"node {party_id} has an empty vocabulary")
        settings = ntm_settings(spec.options, spec.iterations)
        dp = DPSGD.from_options(spec.options)
        if dp is not None:
            from fedtopic.algorithms.gfedntm.ddp_party import GFedNTMDDPParty
            from fedtopic.neural.ntm_dp import DPNode

            keyed = () if secret is None else (int.from_bytes(secret, "big"),)
            return GFedNTMDDPParty(party_id, DPNode(index, counts_matrix(corpus), self.embeddings(corpus),
                                                    spec.topics, settings, spec.seed, dp.rate, dp.clip, keyed), dp)
        from fedtopic.neural.ntm_train import FederatedNode

        return GFedNTMParty(party_id, FederatedNode(index, counts_matrix(corpus), self.embeddings(corpus),
                                                    spec.topics, settings, spec.seed))

    def check_protection(self, spec: TrainSpec, protection: str, n_parties: int) -> None:
        """As every algorithm, and distributed DP only under a protection whose aggregator sees only the sum and
        that carries integer releases (``mask``)."""
        super().check_protection(spec, protection, n_parties)
        dp = DPSGD.from_options(spec.options)
        if dp is not None:
            check_distributed_protection(protection)
            dp.planned(n_parties)

    def headline(self, summary: Mapping[str, Any]) -> str:
        """NPMI, diversity, and TSS/DSS (synthetic data) or macro-F1 (labelled corpora)."""
        return (f"NPMI {metric(summary, 'npmi', '.3f')}, diversity {metric(summary, 'topic_diversity', '.2f')}"
                + (f", TSS {metric(summary, 'tss', '.2f')} of {metric(summary, 'tss_perfect', '.0f')}, "
                   f"DSS {metric(summary, 'dss', '.4f')}" if summary.get("tss") is not None else "")
                + (f", macro-F1 {metric(summary, 'macro_f1', '.3f')}" if summary.get("macro_f1") is not None else ""))

    def write_simulation(self, out: Path, run: ConsortiumRun) -> dict[str, Any]:
        """The federated model (every node must hold the same weights), evaluated as the centralised one."""
        from fedtopic.algorithms.gfedntm.report import write_gfedntm_simulation

        return write_gfedntm_simulation(out, run, self.name)

    def write_party(self, out: Path, run: PartyRun) -> dict[str, Any]:
        """The federated model, θ of the node's own documents (theta.npy, which stays with it), NPMI on them."""
        from fedtopic.algorithms.gfedntm.report import write_gfedntm_party

        return write_gfedntm_party(out, run, self.name)

    def embeddings(self, corpus: Corpus) -> Any:
        """The encoder's extra input per document (None: ProdLDA's bag of words only)."""
        return None


class GFedNTMCombinedTM(GFedNTMProdLDA):
    name = "gfedntm-combinedtm"
    summary = ("federated CombinedTM: as gfedntm-prodlda, the encoder also reading each document's sentence "
               "embedding, computed by its own node")
    paper = "gFedNTM (Calvo-Bartolomé et al.), Alg. 1, §4.2; Bianchi et al. 2021"

    def embeddings(self, corpus: Corpus) -> Any:
        from fedtopic.neural.sentence_embeddings import embed_corpus

        return embed_corpus(corpus).astype("float64")
