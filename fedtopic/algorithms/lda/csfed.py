"""``csfed-lda``: centralised synchronous federated LDA (CSFed/DAFed paper §6, Alg. 1 and 2).

Every round each party sends N_p to the aggregator under a protection
(``none``, δ-IPHE / UPHE Paillier, packed Paillier, or pairwise masks), the
aggregator sums them, and each party takes N_Σ − N_p as the others' counts for
its next ``steps`` sweeps (``LDAParty.others_from_aggregate``). The protocol
itself is the party runtime's (``fedtopic.node.sync_runtime``: sessions, secrets, crash safety), the party's
(``csfed_party``: the word ranking, the rounds); the numbers are the lock-step simulation's.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedtopic.algorithms.base import Mode, TrainSpec, UpdateSpec
from fedtopic.algorithms.federated import ConsortiumRun, PartyRun
from fedtopic.algorithms.lda.dp_options import (
    SECURE_SUM_DP_OPTIONS,
    federated_dp_settings,
)
from fedtopic.algorithms.lda.federated import FederatedLDA
from fedtopic.algorithms.lda.options import (
    LDA_OPTIONS,
    PRIOR_OPTIONS,
    STEPS_OPTION,
    check_prior_options,
)
from fedtopic.corpus.types import Corpus
from fedtopic.errors import ConfigError

if TYPE_CHECKING:
    from fedtopic.algorithms.lda.csfed_party import CSFedParty

class CSFedLDA(FederatedLDA):
    name = "csfed-lda"
    summary = "synchronous federated LDA: parties send word-topic counts to an aggregator that sums them"
    paper = "CSFed/DAFed-LDA §6 (Alg. 1, 2)"
    modes = frozenset({Mode.sync})
    options = LDA_OPTIONS + (STEPS_OPTION,) + PRIOR_OPTIONS + SECURE_SUM_DP_OPTIONS
    update = UpdateSpec("counts",
                        "N_p int32[V,K] word-topic counts, summed (Eq. 8)")
    compares_centralized = True

    def check_protection(self, spec: TrainSpec, protection: str, n_parties: int) -> None:
        """Also: distributed DP (``dp.distributed``) needs a protection under which the aggregator sees only the
        sum, and a planned minimum of contributors the consortium can reach."""
        super().check_protection(spec, protection, n_parties)
        check_prior_options(spec)
        dp = federated_dp_settings(spec.options)
        if dp is None or not dp.distributed:
            return
        from fedtopic.protections import get_protection, protection_names

        if not get_protection(protection).secure_sum:
            sums = ", ".join(n for n in protection_names() if get_protection(n).secure_sum)
            raise ConfigError(f"dp.distributed adds only a share of the noise to each update, so it needs a protection "
                              f"under which the aggregator sees only the sum ({sums}); under {protection!r} it "
                              "would see each update with a fraction of the noise")
        planned = dp.min_contributors or n_parties
        if not 2 <= planned <= n_parties:
            raise ConfigError(f"dp.min_contributors must be between 2 and the consortium's {n_parties} parties, "
                              f"got {planned}")

    def party(self, party_id: str, index: int, corpus: Corpus, spec: TrainSpec, *,
              secret: bytes | None = None) -> CSFedParty:
        """The party runtime's CSFed party around ``channel_party`` (the lock-step harness uses that one directly)."""
        from fedtopic.algorithms.lda.csfed_party import CSFedParty

        return CSFedParty(self.channel_party(party_id, index, corpus, spec, secret=secret), spec.iterations)

    def write_simulation(self, out: Path, run: ConsortiumRun) -> dict[str, Any]:
        """Φ_Σ (every party holds the same), evaluated on the held-out documents; optionally beside centralised
        LDA with the same sweeps (``compare_centralized``)."""
        from fedtopic.algorithms.lda.csfed_report import write_csfed_simulation

        return write_csfed_simulation(out, run)

    def write_party(self, out: Path, run: PartyRun) -> dict[str, Any]:
        """Φ_Σ and θ_p (which never leaves the party) evaluated on its own held-out documents."""
        from fedtopic.algorithms.lda.csfed_report import write_csfed_party

        return write_csfed_party(out, run)
