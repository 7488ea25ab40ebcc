"""``dafed-lda``: decentralised asynchronous federated LDA (CSFed/DAFed paper §7, Alg. 3).

Every party publishes N_p, encrypted for the readers CP allows (Def. 4), on its
own channel contract, and trains on the latest, possibly stale, counts of the
channels it may read: N_Σ = N_p + Σ_q N_q (Eq. 8), no server and no waiting.
A party stops when a party it reads has finished (§8.1), or optionally when
fewer than ``converge_tol`` of its tokens changed topic in a round.
"""

from __future__ import annotations

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
