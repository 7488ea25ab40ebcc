"""One CSFed-LDA party (paper Alg. 1 and 2, §6.1) as a ``FederatedParty``: the word ranking in setup, then N_p up
and N_Σ down every round.

Setup (channel ``freq``, where the consortium's secrets are sealed): every party sends its word-frequency vector
f_p (a DP release when the party has DP on) under the session's protection (packed Paillier for the Paillier
schemes) and gets Σ_p f_p: IPHE/UPHE encrypt the δ·V most frequent words' rows, and the largest global frequency,
rounded up to 2^m − 1 (so the session meta tells only its bit length), bounds every cell of any N_p, which sizes
packing and masks.

Round r (channel ``counts``): N_p after r training rounds (round 0 = genesis) up, N_Σ down; N_Σ − N_p are the
others' frozen counts (Eq. 8; N_Σ itself when a straggler deadline closed the round without this party) for the
next ``steps`` sweeps (Eq. 10); the last aggregate gives Φ_Σ (Eq. 9).

Learned priors (``optim_interval``, models.hyperopt): setup also sums, on channel ``docs``, a one-hot of the bit
length of each party's longest document and its number of documents, which fix the histograms' width and bound
their cells; then every ``optim_interval`` sweeps each party sends its document-topic and length histograms on
channel ``priors`` ([K + 1, width]: what Minka's fixed point needs, under the session's protection) and every
party takes the same α step from the same sums (β from the same N_Σ).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from fedtopic.algorithms.asynchronous import ChannelSnapshot
from fedtopic.algorithms.federated import Channel, Exchange, StepRecord
from fedtopic.algorithms.lda.party import LDAParty
from fedtopic.models.state import LDAState

SETUP_MAX_VALUE = (1 << 24) - 1
"""Bound on one party's frequency of one word in the ranking exchange (packed slots are sized for P times it)."""
LENGTH_BITS = 40  # rows of the docs channel's one-hot: documents up to 2^40 − 1 tokens


class CSFedParty:
    """``party`` (an ``LDAParty``, or its DP subclass) behind the party protocol, training ``iterations`` sweeps."""

    def __init__(self, party: LDAParty, iterations: int) -> None:
        self.party, self.party_id, self.iterations = party, party.party_id, iterations
        self.begun = False  # genesis drawn (round 0 sends its counts)
        self.finished = False
        self.max_value = 0
        self.word_totals: np.ndarray | None = None
        self.others: np.ndarray | None = None  # the peers' counts of the last aggregate (Φ_Σ needs them)
        self.learns = bool(party.hyper.optim_interval)
        self.prior_width = 0  # learned priors: the histograms' width (2^bits of the longest document) ...
        self.prior_bound = 0  # ... and the bound on a cell (the consortium's documents, rounded up to 2^m − 1)
        self.prior_rounds = 0  # exchanges done on the priors channel

    # the protocol ------------------------------------------------------------------------------
    def setup_channels(self, n_parties: int) -> list[Channel]:
        v = self.party.corpus.n_words
        meta = {"shape": [v, 1], "max_value": SETUP_MAX_VALUE, "setup": True}
        plan = getattr(self.party, "plan", None)
        if plan is not None:  # distributed DP: shares sized for the planned contributors, releases offset
            planned = plan(n_parties)
            meta |= {"max_value": self.party.release_bound(SETUP_MAX_VALUE), "min_contributors": planned}
        channels = [Channel("freq", "counts", v, meta)]
        if self.learns:
            channels.append(Channel("docs", "counts", LENGTH_BITS + 1,
                                    {"shape": [LENGTH_BITS + 1, 1], "max_value": SETUP_MAX_VALUE, "every_cell": True}))
        return channels

    def setup(self, exchange: Exchange) -> None:
        """The global word frequencies (Alg. 2's ranking) and the bound they give every cell."""
        v = self.party.corpus.n_words
        freqs = np.asarray(self.party.word_frequencies()).reshape(v, 1)
        summed = exchange.sum("freq", 0, freqs)
        total = np.asarray(summed.value).reshape(-1)
        decode = getattr(self.party, "frequencies_from_sum", None)
        if decode is not None:
            total = decode(total, len(summed.contributors))
        self.max_value = (1 << max(1, int(total.max())).bit_length()) - 1
        self.party.cap_releases(self.max_value)  # a DP party's noisy releases must stay within the session's bound
        self.word_totals = total
        if self.learns:
            self._setup_priors(exchange)

    def _setup_priors(self, exchange: Exchange) -> None:
        """The histograms' width and cell bound from the docs channel's sum (one-hots of the longest documents'
        bit lengths, and the documents)."""
        lengths = self.party.corpus.doc_lengths()
        mine = np.zeros((LENGTH_BITS + 1, 1), dtype=np.int64)
        mine[min(int(lengths.max(initial=0)).bit_length(), LENGTH_BITS - 1), 0] = 1
        mine[LENGTH_BITS, 0] = min(len(lengths), SETUP_MAX_VALUE)
        total = np.asarray(exchange.sum("docs", 0, mine).value).reshape(-1)
        self.prior_width = 1 << int(np.flatnonzero(total[:LENGTH_BITS]).max())
        self.prior_bound = (1 << max(1, int(total[LENGTH_BITS])).bit_length()) - 1

    def channels(self, n_parties: int) -> list[Channel]:
        v, k = self.party.corpus.n_words, self.party.hyper.n_topics
        meta = {"shape": [v, k], "max_value": self.max_value, "word_frequencies": self.word_totals}
        if getattr(self.party, "plan", None) is not None:
            meta |= {"max_value": self.party.release_bound(self.max_value), "min_contributors": self.party.planned}
        channels = [Channel("counts", "counts", v, meta)]
        if self.learns:
            channels.append(Channel("priors", "counts", k + 1,
                                    {"shape": [k + 1, self.prior_width], "max_value": self.prior_bound,
                                     "every_cell": True}))
        return channels

    def step(self, round: int, exchange: Exchange) -> StepRecord:
        """N_p up, N_Σ down; then ``steps`` sweeps, or (after the last) Φ_Σ from the final aggregate."""
        if not self.begun:
            self.party.genesis()
            self.begun = True
        aggregate = exchange.sum("counts", round, self.party.own_counts())
        contributed = self.party_id in aggregate.contributors
        snapshot = self.party.others_from_aggregate(aggregate.value, round, contributed=contributed,
                                                    contributors=len(aggregate.contributors))
        self.others = snapshot.n_wk
        if self.party.sweeps >= self.party.max_sweeps(self.iterations):
            self.party.absorb([snapshot])
            self.finished = True
        else:
            self.party.train_round([snapshot])
            if self.party.priors_due(self.prior_rounds):
                self._learn_priors(exchange, np.asarray(aggregate.value))
        spent = self.party.privacy()
        return StepRecord(quality=self.party.log_likelihood(), quality_name="loglik_per_token",
                          epsilon=None if spent is None else spent.epsilon,
                          extra={"accepted": contributed, "aggregate_tokens": int(np.sum(aggregate.value)),
                                 "sweeps": self.party.sweeps})

    def _learn_priors(self, exchange: Exchange, global_counts: np.ndarray) -> None:
        """This party's histograms up, the consortium's down; the same α (and β) step as every other party."""
        from fedtopic.models.hyperopt import (
            doc_topic_histogram,
            histogram_cells,
            histogram_from_cells,
        )

        cells = histogram_cells(doc_topic_histogram(self.party.model.state.n_dk), self.prior_width)
        total = exchange.sum("priors", self.prior_rounds, cells).value
        self.prior_rounds += 1
        self.party.learn_priors(histogram_from_cells(total), global_counts)

    def done(self) -> bool:
        return self.finished

    def state(self) -> dict[str, np.ndarray]:
        s = self.party.model.state
        out = {"z": s.z, "n_dk": s.n_dk, "n_wk": s.n_wk, "n_k": s.n_k, "rng": s.rng,
               "progress": np.array([self.party.round, self.party.sweeps, self.begun, self.finished]),
               # what setup learnt (a node redoes setup after a restart; a party rebuilt from its state does not)
               "setup": np.array([self.max_value, getattr(self.party, "frequency_releases", 0)])} | self._prior_state()
        return out | ({} if self.others is None else {"others": self.others}) | \
            ({} if self.word_totals is None else {"word_totals": self.word_totals}) | self._dp_state()

    def _prior_state(self) -> dict[str, np.ndarray]:
        if not self.learns:
            return {}
        return {"priors": np.array([self.prior_rounds, self.prior_width, self.prior_bound])} | \
            self.party.prior_state()

    def _dp_state(self) -> dict[str, np.ndarray]:
        if getattr(self.party, "plan", None) is None:
            return {}
        from fedtopic.algorithms.lda.ddp_party import state_of

        return state_of(self.party)  # type: ignore[arg-type]

    def restore(self, arrays: Mapping[str, np.ndarray]) -> None:
        from fedtopic.errors import ModelError

        rnd, sweeps, begun, finished = (int(x) for x in arrays["progress"])
        try:
            self.party.resume(LDAState(**{k: arrays[k] for k in ("z", "n_dk", "n_wk", "n_k", "rng")}), round=rnd,
                              sweeps=sweeps)
        except ModelError as exc:
            raise ValueError(str(exc)) from None
        self.begun, self.finished = bool(begun), bool(finished)
        if "setup" in arrays:
            max_value, frequency_releases = (int(x) for x in arrays["setup"])
            if max_value:
                self.max_value = max_value
                self.party.cap_releases(max_value)
            if frequency_releases:
                self.party.frequency_releases = frequency_releases  # type: ignore[attr-defined]
        if "word_totals" in arrays:
            self.word_totals = arrays["word_totals"].copy()
        if "priors" in arrays:  # learned priors: how far the learning went, and where it stands
            self.prior_rounds, self.prior_width, self.prior_bound = (int(x) for x in arrays["priors"])
            self.party.restore_priors(arrays)
        if "ddp" in arrays:
            from fedtopic.algorithms.lda.ddp_party import restore_into

            restore_into(self.party, arrays)  # type: ignore[arg-type]
        if "others" in arrays:  # Φ_Σ after a restart (a party killed after its last round has only this)
            self.others = arrays["others"].copy()
            self.party.absorb([ChannelSnapshot("aggregate", rnd, self.others)])

    def top_words_ids(self, n: int) -> np.ndarray:
        return self.party.top_words_ids(n)

    def topic_distribution(self) -> tuple[np.ndarray, np.ndarray]:
        """Φ float64[K,V] and prevalence float64[K] of the consortium's counts (``LDAParty``)."""
        return self.party.topic_distribution()
