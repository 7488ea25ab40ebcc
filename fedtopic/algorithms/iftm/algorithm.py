"""``iftm-lda`` and ``iftm-sentencelda``: Industrial Federated Topic Modeling (Jiang et al., Algs. 1–5).

Every party trains a local LDA on *privatised* input (each token's word vector
with Laplace(1/ε) noise, entries ≤ τ dropped: Eqs. 9–10) by private
Metropolis–Hastings (Alg. 1), sends its topic-wise normalised model to a
master that merges similar topics across parties (weighted Jaccard over the
top-L words ≥ ξ, Eq. 29; Alg. 3), and gets back a new local model composed from
the global one (Alg. 4). Parties may train different numbers of topics
(``party_topics``). The privacy guarantee is on the input: ε-DP per token for
everything computed from it (the paper's claim; docs/privacy.md).

``iftm-sentencelda`` is the same framework over SentenceLDA (Alg. 2): one topic
per sentence, so it needs corpora with sentence boundaries (any built from raw
text). Its models, messages and master are LDA's (Φ has the same form, §3.2).

Modes: centralised (one party alone, `fedtopic train`) and synchronous through
the aggregator, whose ``topic-merge`` combiner is the master.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fedtopic.algorithms.base import (
    Algorithm,
    Fitted,
    IterationCallback,
    Mode,
    OptionValue,
    Privacy,
    TrainSpec,
    UpdateSpec,
    metric,
)
from fedtopic.algorithms.federated import ConsortiumRun, PartyRun
from fedtopic.algorithms.iftm.options import (
    IFTM_OPTIONS,
    check_noise,
    parse_party_topics,
)
from fedtopic.algorithms.lda.train_writer import LDATrainWriter
from fedtopic.corpus.types import Corpus
from fedtopic.errors import ConfigError


class IFTMLDA(LDATrainWriter, Algorithm):
    name = "iftm-lda"
    summary = "federated LDA on Laplace-privatised input; a master merges the parties' (possibly different) topics"
    paper = "Jiang et al., iFTM (Algs. 1, 3-5)"
    modes = frozenset({Mode.centralised, Mode.sync})
    options = IFTM_OPTIONS
    update = UpdateSpec("topics",
                        "M̂_p float64[K_p,V], the local model with every topic normalised, and the data amount n_p")
    sentences = False  # True: SentenceLDA (Alg. 2) instead of LDA (Alg. 1)

    def parse_options(self, raw: Mapping[str, object], *, where: str = "--opt") -> dict[str, OptionValue]:
        options = super().parse_options(raw, where=where)
        try:
            parse_party_topics(options)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        return options

    def check_data(self, parts: Sequence[Corpus], spec: TrainSpec) -> None:
        """Also refuse ε and τ whose privatised input would be mostly noise at this vocabulary (``check_noise``);
        the paper's experiments (``experiment iftm-…``) keep their settings."""
        super().check_data(parts, spec)
        check_noise(spec.options, max(c.n_words for c in parts))

    def privacy(self, spec: TrainSpec) -> Privacy:
        """Every token's word vector is Laplace-privatised with ε (§3.1.2: pure ε-local DP, δ = 0) unless ε = ∞."""
        epsilon = float(spec.options["epsilon"])  # type: ignore[arg-type]
        return Privacy() if math.isinf(epsilon) else Privacy(True, None, 0.0)

    def fit(self, parts: Sequence[Corpus], spec: TrainSpec,
            callback: IterationCallback | None = None) -> list[Fitted]:
        """One party alone: private MH on the pooled corpora for ``iterations`` local iterations."""
        from fedtopic.algorithms.iftm.party import fit_alone

        return [fit_alone(parts, spec, callback, sentences=self.sentences)]

    def party(self, party_id: str, index: int, corpus: Corpus, spec: TrainSpec, *,
              secret: bytes | None = None):  # -> IFTMParty
        """Party ``index``; ``secret`` keys its privatisation (else the seed does)."""
        from fedtopic.algorithms.iftm.party import IFTMParty

        return IFTMParty(party_id, index, corpus, spec, secret=secret, sentences=self.sentences)

    def rounds(self, spec: TrainSpec) -> int:
        """Exchanges with the master: ⌈iterations / local_iterations⌉."""
        from fedtopic.algorithms.iftm.options import global_rounds

        return global_rounds(spec)

    def headline(self, summary: Mapping[str, Any]) -> str:
        """Perplexity with the vocabulary it is over (a perplexity compares only with one over the same words), and
        why M* has the number of topics it has: the parties' local topics, less those merged because their
        similarity reached ξ (Alg. 4); K is each party's, not M*'s."""
        glob = int(summary["global_topics"] if "global_topics" in summary else summary["global_model"]["topics"])
        local = int(sum(summary["party_topics"]) if "party_topics" in summary else summary["topics"] * summary["parties"])
        merged = local - glob
        how = (f"{merged} merged at ξ = {summary['xi']:g}" if merged else
               f"none similar enough to merge at ξ = {summary['xi']:g}; a lower --opt xi merges more")
        alone = [p.get("perplexity") for p in (summary.get("each_party_alone") or {}).values()]
        alone = [a for a in alone if a is not None and math.isfinite(a)]
        beside = f" (each party alone: {min(alone):.1f}–{max(alone):.1f}, the paper's baseline)" if alone else ""
        words = f" over its {summary['vocabulary']:,}-word vocabulary" if "vocabulary" in summary else ""
        return (f"perplexity {metric(summary, 'perplexity', '.1f')} of M*{words}{beside}; M* has {glob} "
                f"topic{'s' * (glob != 1)} from the parties' {local} ({how})")

    def write_simulation(self, out: Path, run: ConsortiumRun) -> dict[str, Any]:
        """M* and each party alone (the paper's Fig. 5 baseline), evaluated on the held-out documents."""
        from fedtopic.algorithms.iftm.report import write_iftm_simulation

        return write_iftm_simulation(out, run, self)

    def write_party(self, out: Path, run: PartyRun) -> dict[str, Any]:
        """M*, the party's own θ, and the held-out log-likelihood of M* and of its own model."""
        from fedtopic.algorithms.iftm.report import write_iftm_party

        return write_iftm_party(out, run, self.name)


class IFTMSentenceLDA(IFTMLDA):
    name = "iftm-sentencelda"
    summary = "iFTM over SentenceLDA (one topic per sentence) on Laplace-privatised input; needs raw-text corpora"
    paper = "Jiang et al., iFTM (Algs. 2-5)"
    sentences = True

    def check_data(self, parts: Sequence[Corpus], spec: TrainSpec) -> None:
        if any(c.sent_ptr is None for c in parts):
            raise ConfigError("iftm-sentencelda needs sentence boundaries: use raw text with punctuation (--corpus "
                              "FILE, or bbc-news, sms-spam, rt-snippets, trec); 20newsgroups and reuters-* are "
                              "punctuation-free in their registry copy, and synthetic or bag-of-words corpora and "
                              "token stores have no sentences")
        super().check_data(parts, spec)
