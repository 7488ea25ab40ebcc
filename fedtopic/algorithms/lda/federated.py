"""What CSFed-LDA and DAFed-LDA share: the LDA party, its count update, and its DP releases.

Both exchange a party's word-topic counts N_p (int32[V,K]) and combine them by
summing (Eq. 8: N_Σ = Σ_p N_p: the aggregator's count combiners, or a DAFed
reader's own sum); they differ in when a party reads (every
round, all parties in step, through the aggregator; or whenever it likes,
latest channel contents, over the chain) and so in their modes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from fedtopic.algorithms.base import Algorithm, OptionValue, Privacy, TrainSpec
from fedtopic.algorithms.lda.dp_options import federated_dp_settings, switch_dp_on
from fedtopic.algorithms.lda.options import hyper_from_spec
from fedtopic.corpus.types import Corpus
from fedtopic.errors import ConfigError


class FederatedLDA(Algorithm):
    """Base of the two federated LDA algorithms: one ``LDAParty`` per party, updates summed; with ``dp`` on, a
    ``DPLDAParty`` whose publications are differentially private releases."""

    def parse_options(self, raw: Mapping[str, object], *, where: str = "--opt") -> dict[str, OptionValue]:
        options = super().parse_options(raw, where=where)
        try:
            return switch_dp_on(raw, options)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None

    def rounds(self, spec: TrainSpec) -> int:
        """⌈iterations / steps⌉ training rounds: one publication per ``steps`` sweeps, after the genesis."""
        return math.ceil(spec.iterations / int(spec.options["steps"]))  # type: ignore[arg-type]

    def setup_rounds(self, spec: TrainSpec) -> int:
        """The genesis counts, history round 0."""
        return 1

    def privacy(self, spec: TrainSpec) -> Privacy:
        """Every publication a DP release when ``dp`` is on (docs/privacy.md)."""
        dp = federated_dp_settings(spec.options)
        return Privacy() if dp is None else Privacy(True, dp.epsilon_budget, dp.delta)

    def publication_shape(self, spec: TrainSpec, n_words: int) -> tuple[int, int]:
        """The counts a party publishes each round: N_p, [V, K]."""
        return n_words, spec.topics

    def channel_party(self, party_id: str, index: int, corpus: Corpus, spec: TrainSpec, *,
                  secret: bytes | None = None):  # -> LDAParty
        """Party ``index`` samples with seed ``spec.seed + index`` (every harness and node alike); with DP on,
        ``secret`` keys its releases."""
        from fedtopic.algorithms.lda.party import LDAParty

        dp = federated_dp_settings(spec.options)
        steps, seed = int(spec.options["steps"]), spec.seed + index  # type: ignore[arg-type]
        if dp is None:
            return LDAParty(party_id, corpus, hyper_from_spec(spec), steps=steps, seed=seed)
        if dp.distributed:
            from fedtopic.algorithms.lda.ddp_party import DistributedDPLDAParty

            return DistributedDPLDAParty(party_id, corpus, hyper_from_spec(spec), dp, steps=steps, seed=seed,
                                         secret=secret)
        from fedtopic.algorithms.lda.dp_party import DPLDAParty

        return DPLDAParty(party_id, corpus, hyper_from_spec(spec), dp, steps=steps, seed=seed, secret=secret)
