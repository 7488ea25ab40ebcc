"""``fednmf``: FedNMF and FedNMF+MI (Si et al.), synchronous rounds through the aggregator (paper Alg. 1)."""

from __future__ import annotations

from typing import Any

from fedtopic.algorithms.base import Algorithm, Mode, TrainSpec, UpdateSpec
from fedtopic.algorithms.nmf_options import FEDERATED_OPTIONS, SGD_OPTIONS
from fedtopic.corpus.types import Corpus


class FedNMF(Algorithm):
    name = "fednmf"
    summary = ("federated NMF: clients train W (and the MI critic θ) locally by SGD, the server rule "
               "(avg/adagrad/yogi/adam) steps the global model; H_i never leaves its client")
    paper = "FedNMF+MI (Si et al.), Alg. 1; Table III/IV rows FedAvg … FedAdam(+MI)"
    modes = frozenset({Mode.sync})
    options = SGD_OPTIONS + FEDERATED_OPTIONS
    update = UpdateSpec("dense", ("dense-sum", "mask"),
                        "[N_i·(W_i − W), N_i·(θ_i − θ), N_i] float64 (zeros from unselected clients); "
                        "mask: fixed point 2^-60, bound ±2^20")
    family = "nmf"

    def party(self, party_id: str, index: int, corpus: Corpus, spec: TrainSpec, *,
              secret: bytes | None = None) -> Any:
        """The client; its number of peers comes from the session's party list (``run_fednmf_party``)."""
        from fedtopic.algorithms.fednmf_party import FedNMFParty

        return FedNMFParty(party_id, index, None, corpus, spec)
