"""One FedNMF(+MI) client's state and steps (paper Alg. 1), free of any transport.

The global state x = [vec(W), θ] (θ only when λ > 0) and the server rule's state live at every party: each
applies the same deterministic rule (``server_rules``) to the same public aggregate, so all hold identical
copies and the aggregator only sums (which ``mask`` protection requires: it never sees the sum in clear).

Round t: the selected clients G_t (seeded, ``select_clients``) run ClientUpdate from x and send
u_i = [N_i·(x_i − x), N_i]; the others send zeros (the aggregator, which sees only masked residues under
``mask``, then cannot tell who trained). The sum gives Δ = Σ N_i (x_i − x) / Σ N_i, the FedAvg weighting of
the paper's Agg over the round's participants, and every party steps x with the rule. W is projected onto
W ≥ 0 after the step: a weighted mean of non-negative W_i stays non-negative (FedAvg: no-op), but an adaptive
step need not. H_i never leaves the client.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from fedtopic.algorithms.base import TrainSpec
from fedtopic.algorithms.dp_sgd import decode_sum, privacy_summary, release
from fedtopic.algorithms.dp_sgd import privacy as ddp_privacy
from fedtopic.algorithms.federated import Channel, Exchange, StepRecord
from fedtopic.algorithms.fednmf.ddp import clipped_gradient_sum, nmf_dp
from fedtopic.algorithms.fednmf.server_rules import (
    RuleState,
    rule_params,
    select_clients,
    server_step,
    weighted_delta,
)
from fedtopic.algorithms.nmf.options import client_fraction, sgd_settings
from fedtopic.corpus.types import Corpus
from fedtopic.errors import TrainingError
from fedtopic.eval.coherence import heaviest_ids
from fedtopic.models.nnls import counts_matrix


def initial_global(vocabulary: int, spec: TrainSpec) -> tuple[np.ndarray, np.ndarray | None]:
    """(W⁽⁰⁾ float64[V,k], θ⁽⁰⁾ or None): the server's initialisation (Alg. 1 line 2), derived by every party
    from the consortium seed."""
    from fedtopic.neural.nmf_sgd import init_w
    from fedtopic.neural.smile import init_critic

    rng = np.random.default_rng([spec.seed, 0x57])
    w = init_w(vocabulary, spec.topics, rng)
    theta = init_critic(vocabulary, spec.topics, rng) if float(spec.options["mi_weight"]) > 0 else None  # type: ignore[arg-type]
    return w, theta


class FedNMFParty:
    """Client ``index`` of ``n_clients`` (set by the loop from the session's party list when not given): its
    documents, H_i, and its copy of the global state."""

    def __init__(self, party_id: str, index: int, n_clients: int | None, corpus: Corpus, spec: TrainSpec, *,
                 secret: bytes | None = None) -> None:
        from fedtopic.neural.nmf_sgd import NMFClient

        self.party_id, self.index, self.n_clients, self.spec = party_id, index, n_clients, spec
        self.dp = nmf_dp(spec.options)  # distributed DP (``ddp``), or None
        self._secret = () if secret is None else (int.from_bytes(secret, "big"),)
        self.releases: list[int] = []  # contributors of every released round in which this party trained (DP)
        self.corpus = corpus
        self.client = NMFClient(counts_matrix(corpus), spec.topics, index=index, seed=spec.seed,
                                precision=str(spec.options["precision"]))
        self.settings = sgd_settings(spec.options)
        self.w, self.theta = initial_global(corpus.n_words, spec)
        self.rule = str(spec.options["server_rule"])
        lr = spec.options.get("server_lr")
        self.params = rule_params(self.rule, None if lr is None else float(lr))  # type: ignore[arg-type]
        self.state_rule = RuleState.zeros(self.size)
        self.round = 0  # server rounds done

    @property
    def size(self) -> int:
        """n, the length of x (the update carries n + 1 values: the weighted change and N_i)."""
        return self.w.size + (0 if self.theta is None else self.theta.size)

    @property
    def x(self) -> np.ndarray:
        return self.w.reshape(-1) if self.theta is None else np.concatenate([self.w.reshape(-1), self.theta])

    def selected(self, round: int) -> bool:
        """Whether this client is in G_round."""
        if self.n_clients is None:
            raise ValueError("the number of clients is not known yet")
        return self.index in select_clients(self.n_clients, client_fraction(self.spec.options, self.n_clients), round,
                                            self.spec.seed)

    def state(self) -> dict[str, np.ndarray]:
        """Everything a resumed client needs, as arrays (a checkpoint)."""
        out = {"w": self.w, "h": self.client.h, "m": self.state_rule.m, "v": self.state_rule.v,
               "round": np.array(self.round), "epochs_done": np.array(self.client.epochs_done)}
        if self.dp is not None:
            out["releases"] = np.array(self.releases, dtype=np.int64)
            out["n_clients"] = np.array(self.n_clients or 0)
        return out | ({} if self.theta is None else {"theta": self.theta})

    def restore(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Back to ``state()``'s arrays; ValueError if they do not fit this client."""
        if arrays["w"].shape != self.w.shape or arrays["h"].shape != self.client.h.shape or \
                ("theta" in arrays) != (self.theta is not None):
            raise ValueError("checkpoint shapes do not match this client's data and options")
        self.w, self.client.h[:] = arrays["w"].copy(), arrays["h"]
        self.theta = arrays["theta"].copy() if "theta" in arrays else None
        self.state_rule = RuleState(arrays["m"].copy(), arrays["v"].copy())
        self.round, self.client.epochs_done = int(arrays["round"]), int(arrays["epochs_done"])
        if self.dp is not None:
            self.releases = [int(c) for c in arrays.get("releases", np.zeros(0, dtype=np.int64))]
            self.n_clients = int(arrays.get("n_clients", 0)) or self.n_clients

    def local_update(self) -> np.ndarray:
        """u_i float64[n + 1] for the current round (zeros when not selected)."""
        if not self.selected(self.round) or self.client.n_docs == 0:
            return np.zeros(self.size + 1)
        w_i, theta_i = self.client.client_update(self.w, self.theta, self.settings,
                                                 int(self.spec.options["local_epochs"]))  # type: ignore[arg-type]
        n_i = float(self.client.n_docs)
        u = np.empty(self.size + 1)
        np.subtract(w_i.reshape(-1), self.w.reshape(-1), out=u[:self.w.size])
        if theta_i is not None:
            np.subtract(theta_i, self.theta, out=u[self.w.size:-1])
        u[:-1] *= n_i
        u[-1] = n_i
        return u

    def apply(self, total: np.ndarray) -> None:
        """Step x with the rule from the round's summed updates float64[n + 1]."""
        if total.shape != (self.size + 1,):
            raise ValueError(f"aggregate has {total.shape} values, expected {self.size + 1}")
        delta = weighted_delta(total[:-1], total[-1])
        x = self.x  # a view of W when there is no θ (stepped in place), else a new vector
        server_step(self.rule, x, delta, self.state_rule, self.round + 1, self.params)
        if self.theta is not None:
            self.w[:] = x[:self.w.size].reshape(self.w.shape)
            self.theta = x[self.w.size:].copy()
        np.maximum(self.w, 0.0, out=self.w)
        self.round += 1

    def topic_weights(self) -> np.ndarray:
        """H_i float[N_i,k] in the client's precision (stays here)."""
        return self.client.h

    # the party protocol (algorithms.federated) ----------------------------------------------------
    def channels(self, n_parties: int) -> list[Channel]:
        """One dense channel: u_i, float64[n + 1]; under distributed DP one counts channel of the integer
        releases, int[V·k + 1] (``ddp``), whose sums the aggregator releases only with the planned contributors."""
        self.n_clients = n_parties
        if self.dp is None:
            return [Channel("update", "dense", self.size + 1)]
        planned = self.dp.planned(n_parties)
        return [Channel("update", "counts", self.w.size + 1, self.dp.channel_meta(self.w.size + 1, planned))]

    def setup(self, exchange: Exchange) -> None:
        """Nothing to agree on beyond the session's params."""

    def step(self, round: int, exchange: Exchange) -> StepRecord:
        """Server round ``round`` of Alg. 1: ClientUpdate if selected, the sum, the server rule."""
        if round != self.round:
            raise TrainingError(f"client {self.party_id} is at round {self.round}, asked for {round}")
        selected = self.selected(round)
        start = {"loss_at_start": self.loss()} if round == 0 else {}  # what ``learned_little`` measures from
        if self.dp is not None:
            record = self._dp_step(round, selected, exchange)
            return replace(record, extra=record.extra | start)
        total = exchange.sum("update", round, self.local_update()).value
        if total[-1] <= 0:
            raise TrainingError(f"round {round}: no selected client contributed (the sum of N_i is {total[-1]:g})")
        self.apply(total)
        return StepRecord(quality=self.loss(), quality_name="loss", extra={"selected": selected} | start)

    def _dp_step(self, round: int, selected: bool, exchange: Exchange) -> StepRecord:
        """One DP-SGD step of the consortium (``ddp``): this party's release, the noisy sum, the rule, H's step."""
        assert self.dp is not None and self.n_clients is not None
        planned = self.dp.planned(self.n_clients)
        rng = np.random.default_rng([self.spec.seed, 0x4450, self.index, round, *self._secret])
        if selected and self.client.n_docs:
            self.dp.check_batch(f"client {self.party_id}", self.client.n_docs)
            idx = np.flatnonzero(rng.random(self.client.n_docs) < self.dp.rate)
        else:
            idx = np.zeros(0, dtype=np.int64)
        grad = clipped_gradient_sum(self.client.counts[idx].toarray(), self.w, self.client.h[idx].astype(np.float64),
                                    self.dp.clip) if idx.size else np.zeros_like(self.w)
        agg = exchange.sum("update", round, release(grad, int(idx.size), self.dp, planned, rng).reshape(-1, 1))
        contributors = len(agg.contributors)
        g_sum, n_sum = decode_sum(np.asarray(agg.value), contributors, self.dp, planned, self.w.shape)
        delta = -float(self.spec.options["lr"]) * g_sum.reshape(-1) / max(n_sum, 1.0)  # type: ignore[arg-type]
        x = self.x
        server_step(self.rule, x, delta, self.state_rule, self.round + 1, self.params)
        np.maximum(self.w, 0.0, out=self.w)
        self.client.h_step(self.w, self.settings.lr)  # private: every h_j on its own term against the new W
        if selected:
            self.releases.append(contributors)
        self.round += 1
        report = ddp_privacy(self.dp, self.releases, planned, self.w.size + 1)
        return StepRecord(quality=self.loss(), quality_name="loss", epsilon=report.epsilon,
                          extra={"selected": selected, "noisy_documents": float(np.round(n_sum, 1))})

    def privacy(self) -> dict[str, Any] | None:
        """What this party's releases cost (summary.json's ``privacy``), None without DP."""
        if self.dp is None or self.n_clients is None:
            return None
        return privacy_summary(self.dp, self.releases, self.dp.planned(self.n_clients), self.w.size + 1)

    def done(self) -> bool:
        return self.round >= self.spec.iterations

    def loss(self) -> float:
        """‖A_i − H_i Wᵀ‖²_F / N_i (Eq. 1 per document) of this client's documents under the current global W."""
        from fedtopic.neural.nmf_sgd import reconstruction_loss

        return reconstruction_loss(self.client.counts, self.w, self.client.h) / max(self.client.n_docs, 1)

    def top_words_ids(self, n: int) -> np.ndarray:
        """int[k, n]: every topic's n heaviest words in W."""
        return heaviest_ids(self.w.T, n)

    def topic_distribution(self) -> tuple[np.ndarray, np.ndarray]:
        """Wᵀ with rows normalised, float64[k,n], and the topics' prevalence float64[k]: their share of this
        client's H_i (the only document weights it holds)."""
        w = np.maximum(self.w.T, 0.0)
        phi = w / np.maximum(w.sum(axis=1, keepdims=True), 1e-300)
        mass = np.maximum(self.client.h, 0.0).sum(axis=0) * w.sum(axis=1)
        total = float(mass.sum())
        return phi, (mass / total if total > 0 else np.full(len(mass), 1.0 / len(mass)))
