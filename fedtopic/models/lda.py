"""GibbsLDA: a whole collapsed-Gibbs LDA model over one corpus (paper §5.1 with P = 1).

The federated algorithms drive ``.sweep(frozen_wk=..., frozen_k=...)`` themselves;
``.fit`` is the centralised / stand-alone baseline. (save/load are the only file
access in fedtopic.models: one .npz for arrays and one .json for settings.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numpy as np

from fedtopic.corpus.types import Corpus
from fedtopic.errors import ModelError
from fedtopic.models.distributions import log_joint, phi_from_counts, theta_from_counts
from fedtopic.models.gibbs import SAMPLERS, sweep
from fedtopic.models.hyperopt import (
    DocTopicHistogram,
    doc_topic_histogram,
    optimize_alpha,
    optimize_beta,
)
from fedtopic.models.prior import (
    DEFAULT_ALPHA,
    Alpha,
    alpha_json,
    alpha_vector,
    check_alpha,
)
from fedtopic.models.state import (
    LDAState,
    check_corpus_arrays,
    check_state,
    init_state,
    state_from_phi,
)

_FORMAT = "fedtopic.GibbsLDA/1"


class GibbsLDA:
    """LDA trained by collapsed Gibbs sampling (Eq. 10).

    alpha=None uses 0.1 as tomotopy does (``models.prior.DEFAULT_ALPHA``; the start where optim_interval learns
    it); beta defaults to 0.01. sampler is
    "dense", "sparse" (alias MH), "mh" (exact MH, O(min(k_d, 256)) a token) or "auto"; threads > 1 samples
    document shards in parallel (see fedtopic.models.gibbs). optim_interval > 0 learns an asymmetric α every
    that many sweeps of ``fit`` (and a symmetric β with optim_beta) by Minka's fixed point (models.hyperopt),
    as tomotopy's optim_interval does; the dense sampler only. The same seed gives the same model.
    """

    def __init__(
        self,
        n_topics: int,
        alpha: float | None = None,
        beta: float = 0.01,
        sampler: str = "auto",
        threads: int = 1,
        seed: int = 0,
        optim_interval: int = 0,
        optim_beta: bool = False,
    ) -> None:
        if not isinstance(n_topics, (int, np.integer)) or n_topics < 2:
            raise ModelError(f"need at least 2 topics, got K={n_topics}")
        alpha = check_alpha(DEFAULT_ALPHA if alpha is None else alpha, int(n_topics))
        if not float(beta) > 0:
            raise ModelError(f"beta must be positive, got beta={beta}")
        if sampler not in SAMPLERS:
            raise ModelError(f"unknown sampler {sampler!r}; choose one of {', '.join(SAMPLERS)}")
        if not isinstance(threads, (int, np.integer)) or threads < 1:
            raise ModelError(f"threads must be a positive integer, got {threads}")
        if not isinstance(optim_interval, (int, np.integer)) or optim_interval < 0:
            raise ModelError(f"optim_interval must be a non-negative integer, got {optim_interval}")
        if optim_interval and sampler not in ("dense", "auto"):
            raise ModelError(f"learning alpha (optim_interval) needs the dense sampler, not {sampler!r}")
        if optim_beta and not optim_interval:
            raise ModelError("optim_beta learns beta every optim_interval sweeps: give optim_interval > 0 too")
        self.n_topics = int(n_topics)
        self.alpha: Alpha = alpha
        self.optim_interval = int(optim_interval)
        self.optim_beta = bool(optim_beta)
        self.beta = float(beta)
        self.sampler = "dense" if optim_interval and sampler == "auto" else sampler  # auto's MH takes no learned α
        self.threads = int(threads)
        self.seed = int(seed)
        self.iterations_done = 0
        self.corpus: Corpus | None = None
        self.state: LDAState | None = None

    def initialize(self, corpus: Corpus, start_phi: np.ndarray | None = None) -> None:
        """Attach the corpus and draw topic assignments: uniformly, or from a saved model's topics ``start_phi``
        (float64[K, V] over this corpus's vocabulary: ``models.state.state_from_phi``)."""
        if corpus.n_tokens == 0:
            raise ModelError("empty corpus: there are no tokens to train on")
        self.corpus = corpus
        if start_phi is None:
            self.state = init_state(corpus.words, corpus.doc_ptr, corpus.n_words, self.n_topics, self.seed)
        else:
            if start_phi.shape != (self.n_topics, corpus.n_words):
                raise ModelError(f"the starting topics are {start_phi.shape}, this model is K={self.n_topics} over "
                                 f"V={corpus.n_words}")
            self.state = state_from_phi(corpus.words, corpus.doc_ptr, start_phi, self.seed)
        self.iterations_done = 0

    def _ready(self) -> tuple[Corpus, LDAState]:
        if self.corpus is None or self.state is None:
            raise ModelError("model is not initialised: call initialize(corpus) or fit(corpus, ...) first")
        return self.corpus, self.state

    def sweep(self, frozen_wk: np.ndarray | None = None, frozen_k: np.ndarray | None = None) -> None:
        """One Gibbs sweep over the corpus; frozen_* are other parties' counts (read only)."""
        corpus, state = self._ready()
        sweep(
            state, corpus.words, corpus.doc_ptr, self.alpha, self.beta,
            frozen_wk=frozen_wk, frozen_k=frozen_k, sampler=self.sampler, threads=self.threads,
        )
        self.iterations_done += 1

    def fit(
        self, corpus: Corpus, iterations: int, callback: Callable[[int, "GibbsLDA"], None] | None = None
    ) -> "GibbsLDA":
        """Initialise on corpus (unless already attached to it) and run `iterations` sweeps.

        callback(i, self) runs after sweep i (1-based). After the last sweep the sampler's caches are dropped
        (``LDAState.drop_caches``) before the callback evaluates the model: they are rebuilt if it sweeps again.
        """
        if iterations < 0:
            raise ModelError(f"iterations must be >= 0, got {iterations}")
        if self.corpus is not corpus or self.state is None:
            self.initialize(corpus)
        for i in range(1, iterations + 1):
            self.sweep()
            if self.optim_interval and self.iterations_done % self.optim_interval == 0:
                self.learn_priors()
            if i == iterations:
                self._ready()[1].drop_caches()
            if callback is not None:
                callback(i, self)
        return self

    def learn_priors(self, histogram: DocTopicHistogram | None = None, n_wk: np.ndarray | None = None) -> None:
        """One optimisation of α (asymmetric) and, with optim_beta, β (models.hyperopt).

        histogram: the consortium's summed document-topic histograms (default: this model's own documents);
        n_wk int[V, K]: the counts β is learned from (default: this model's own).
        """
        state = self._ready()[1]
        histogram = doc_topic_histogram(state.n_dk) if histogram is None else histogram
        self.alpha = optimize_alpha(alpha_vector(self.alpha, self.n_topics), histogram)
        if self.optim_beta:
            self.beta = optimize_beta(self.beta, state.n_wk if n_wk is None else n_wk)

    def phi(self) -> np.ndarray:
        """float64[K,V] topic-word distributions from this model's counts (Eq. 9)."""
        return phi_from_counts(self._ready()[1].n_wk, self.beta)

    def theta(self) -> np.ndarray:
        """float64[D,K] document-topic distributions (Eq. 6)."""
        return theta_from_counts(self._ready()[1].n_dk, self.alpha)

    def log_likelihood(self) -> float:
        """Collapsed log p(w, z) per token (Griffiths & Steyvers); higher is better."""
        corpus, state = self._ready()
        return log_joint(state.n_dk, state.n_wk, self.alpha, self.beta) / corpus.n_tokens

    def save(self, path: str | Path) -> Path:
        """Write <path>.npz (state, corpus arrays, vocabulary) and <path>.json (settings); return the .npz path."""
        corpus, state = self._ready()
        npz = Path(path).with_suffix(".npz")
        meta = {
            "format": _FORMAT, "n_topics": self.n_topics, "alpha": alpha_json(self.alpha), "beta": self.beta,
            "sampler": self.sampler, "threads": self.threads, "seed": self.seed,
            "optim_interval": self.optim_interval, "optim_beta": self.optim_beta,
            "iterations_done": self.iterations_done,
        }
        np.savez_compressed(
            npz, z=state.z, n_dk=state.n_dk, n_wk=state.n_wk, n_k=state.n_k, rng=state.rng,
            words=corpus.words, doc_ptr=corpus.doc_ptr, vocab=np.array(corpus.vocab, dtype=str),
        )
        npz.with_suffix(".json").write_text(json.dumps(meta, indent=2))
        return npz

    @classmethod
    def load(cls, path: str | Path) -> "GibbsLDA":
        """Read a model written by save(); ModelError if the files are missing or inconsistent."""
        npz, meta_path = Path(path).with_suffix(".npz"), Path(path).with_suffix(".json")
        try:
            meta = json.loads(meta_path.read_text())
            with np.load(npz, allow_pickle=False) as f:
                arrays = {k: f[k] for k in f.files}
        except (OSError, ValueError) as exc:
            raise ModelError(f"cannot read model {npz}: {exc}") from exc
        if meta.get("format") != _FORMAT:
            raise ModelError(f"{meta_path} is not a {_FORMAT} model file")
        try:
            model = cls(meta["n_topics"], meta["alpha"], meta["beta"], meta["sampler"], meta["threads"], meta["seed"],
                        int(meta.get("optim_interval", 0)), bool(meta.get("optim_beta", False)))
            corpus = Corpus(words=arrays["words"], doc_ptr=arrays["doc_ptr"], vocab=tuple(arrays["vocab"].tolist()))
            state = LDAState(*(arrays[k] for k in ("z", "n_dk", "n_wk", "n_k", "rng")))
        except (KeyError, TypeError) as exc:
            raise ModelError(f"model file {npz} is incomplete: missing {exc}") from exc
        try:
            check_corpus_arrays(corpus.words, corpus.doc_ptr, corpus.n_words)
            check_state(state, corpus.words, corpus.doc_ptr, corpus.n_words)
            if state.n_topics != model.n_topics:
                raise ModelError(f"K is {state.n_topics} in the arrays but {model.n_topics} in the metadata")
        except ModelError as exc:
            raise ModelError(f"model file {npz} is inconsistent: {exc}") from None
        model.corpus, model.state, model.iterations_done = corpus, state, int(meta["iterations_done"])
        return model
