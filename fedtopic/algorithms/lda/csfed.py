"""``csfed-lda``: centralised synchronous federated LDA (CSFed/DAFed paper §6, Alg. 1 and 2).

Every round each party sends N_p to the aggregator under a protection
(``none``, δ-IPHE / UPHE Paillier, packed Paillier, or pairwise masks), the
aggregator sums them, and each party takes N_Σ − N_p as the others' counts for
its next ``steps`` sweeps (``LDAParty.others_from_aggregate``). The protocol
itself (sessions, secrets, word ranking, crash safety) is the node's
(``fedtopic.node.csfed_loop``); the numbers are the lock-step simulation's.
"""

from __future__ import annotations

import math

from fedtopic.algorithms.base import Mode, TrainSpec, UpdateSpec
from fedtopic.algorithms.lda.dp_options import FEDERATED_DP_OPTIONS
from fedtopic.algorithms.lda.federated import FederatedLDA
from fedtopic.algorithms.lda.options import LDA_OPTIONS, STEPS_OPTION

COUNT_PROTECTIONS = ("none", "paillier-iphe", "paillier-uphe", "paillier-packed", "mask")


class CSFedLDA(FederatedLDA):
    name = "csfed-lda"
    summary = "synchronous federated LDA: parties send word-topic counts to an aggregator that sums them"
    paper = "CSFed/DAFed-LDA §6 (Alg. 1, 2)"
    modes = frozenset({Mode.sync})
    options = LDA_OPTIONS + (STEPS_OPTION,) + FEDERATED_DP_OPTIONS
    update = UpdateSpec("counts", COUNT_PROTECTIONS,
                        "N_p int32[V,K] word-topic counts, summed (Eq. 8)")

    def rounds(self, spec: TrainSpec) -> int:
        """Aggregator rounds: the genesis counts, then one per ``steps`` sweeps."""
        return math.ceil(spec.iterations / int(spec.options["steps"])) + 1  # type: ignore[arg-type]
