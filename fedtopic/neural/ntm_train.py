"""Training loops of ProdLDA / CombinedTM: centralised (early stopping) and one gFedNTM node (Sync-Opt).

No I/O: the federated node gets a ``sum`` callable that returns the elementwise sum of every node's vector for
a (phase, step) — the aggregator over HTTP in production, a plain sum in tests — so the same node code runs
everywhere. Settings are the contextualized-topic-models defaults gFedNTM used: Adam lr 2e-3, betas 0.99/0.99,
batch 64, early stopping with patience 5 on a 25 % validation split.

Stopping is the same rule in both modes (``EarlyStopping``): every node holds out its part of the centralised
trainer's quarter of the pooled documents (``pooled_split``, from every node's document count, exchanged at
setup), so the consortium trains and validates on exactly the centralised run's documents (before, each node
held out a random quarter of its own, and the two runs stopped at different epochs on different validation sets:
44 against 88 epochs on unequal parties, docs/RESULTS.md); the consortium's validation loss is Σ_ℓ (sum of node ℓ's validation losses) / Σ_ℓ
(its validation documents), summed through the aggregator like every other vector, and training stops after
``patience`` epochs without a better one, keeping the best epoch's weights and statistics. The relative weight
change below ``tolerance`` (the gFedNTM paper's rule, §3.2) is an optional further stop, off by default.

Batches: the centralised trainer's, exactly. Epoch e shuffles the pooled training documents with a generator
seeded (seed, 0, e), as the centralised trainer does, and ``batch`` B is the union batch: step s takes positions
sB … (s+1)B − 1 of that order, each node the documents of it that it holds (every node knows every node's
training count, so every node computes the same order; ``FederatedNode.train_epoch``). An epoch has the
centralised ⌈N / B⌉ steps whatever the nodes' sizes, and ε and the dropout masks of the union batch come from a
generator seeded (seed, 1, step), each node taking the rows at its documents' places in the batch, so the union
batch is the centralised batch document for document and draw for draw; only the order of the sums' additions
differs. Before session 31 each node shuffled its own documents and took B of them a step: unequal nodes made
union batches of up to P·B documents in fewer steps, and the run followed another trajectory than the
centralised one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from fedtopic.neural.prodlda import (
    Shapes,
    Stats,
    batch_loss,
    draw_noise,
    eval_losses,
    flat_gradient,
    init_params,
    initial_running,
    leaves,
    posterior_theta,
    update_running,
)
from fedtopic.neural.require import require_torch
from fedtopic.neural.sync_opt import Adam, NodeStep, decoder_size

torch: Any = require_torch("ProdLDA / CombinedTM")

SumFn = Callable[[str, int, np.ndarray], np.ndarray]
"""``sum(phase, step, vector)`` → the elementwise sum of every node's vector for that phase and step."""
StartFn = Callable[[str, int, np.ndarray], Callable[[], np.ndarray]]
"""``start(phase, step, vector)`` → a call that gives the same sum later: the exchange runs meanwhile."""


def synchronous_start(total: SumFn) -> StartFn:
    """``start`` for a ``total`` that cannot overlap: the sum at once, handed over later."""
    def start(phase: str, step: int, vector: np.ndarray) -> Callable[[], np.ndarray]:
        out = total(phase, step, vector)
        return lambda: out
    return start


@dataclass(frozen=True)
class NTMSettings:
    """Adam's rate, the batch size (gFedNTM: of the union batch, the centralised trainer's), the epoch budget and
    the stopping rules."""

    lr: float = 2e-3
    batch: int = 64
    epochs: int = 100
    patience: int = 5  # epochs without a better validation loss
    tolerance: float = 0.0  # also stop when ‖W_e − W_{e−1}‖ / ‖W_{e−1}‖ falls below it (0: never)
    wire: str = "float32"  # gFedNTM: the precision of the gradient's two sums on the wire (``gradient_on_wire``)


GRADIENT_PHASES = ("grad-enc", "grad-dec")
"""The phases that carry the gradient (nearly all of a step's bytes); ``wire`` sets their precision."""


def gradient_on_wire(wire: str) -> Callable[[np.ndarray], np.ndarray]:
    """What a gradient part and its sum become on the wire ``wire``: float64 unchanged; float32 rounded to
    nearest (kept in float64 arrays). The exchange rounds, not the node: a float32 session's party encodes its
    part in float32 and the aggregator sums the parts in float64 in the nodes' order and rounds the sum
    (``node.dense_session``, ``network.combiners``); the in-process run (``sync_local``) rounds the same way, so
    every node, either way, applies the same bits."""
    if wire == "float64":
        return lambda v: v
    if wire == "float32":
        return lambda v: v.astype(np.float32).astype(np.float64)
    raise ValueError(f"wire must be float64 or float32, got {wire!r}")


SPLIT_SEED = 0x50524F44


def split(n: int, seed: int, index: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(training, validation) document indices, sorted: a quarter held out (at least one document) when there are
    4 or more, none below. Seeded (seed, SPLIT_SEED) for node 0, as the centralised trainer, and
    (seed, SPLIT_SEED, index) for the others."""
    if n < 4:
        return np.arange(n), np.zeros(0, dtype=np.int64)
    order = np.random.default_rng([seed, SPLIT_SEED] + ([index] if index else [])).permutation(n)
    cut = n - max(1, n // 4)
    return np.sort(order[:cut]), np.sort(order[cut:])


def pooled_split(sizes: list[int], seed: int, index: int) -> tuple[np.ndarray, np.ndarray]:
    """Node ``index``'s (training, validation) indices, sorted, under the centralised trainer's ``split`` of the
    pooled documents (nodes' documents in node order, ``sizes`` all of them): the consortium trains and validates
    on exactly the documents the centralised run does."""
    train, val = split(sum(sizes), seed)
    low = sum(sizes[:index])
    high = low + sizes[index]
    return (train[(train >= low) & (train < high)] - low, val[(val >= low) & (val < high)] - low)


class EarlyStopping:
    """Keep the best epoch's (weights, statistics) by validation loss; stop after ``patience`` epochs without a
    better one. The same object decides in the centralised and the federated run."""

    def __init__(self, patience: int) -> None:
        self.patience = patience
        self.best_loss, self.best_epoch = np.inf, 0
        self.best: tuple[np.ndarray, Stats] | None = None

    def update(self, epoch: int, loss: float, flat: np.ndarray, running: Stats) -> bool:
        """Epoch ``epoch`` (from 1) ended with validation ``loss``; whether to stop now."""
        if loss < self.best_loss:
            self.best_loss, self.best_epoch, self.best = loss, epoch, (flat.copy(), running)
            return False
        return np.isfinite(self.best_loss) and epoch - self.best_epoch >= self.patience

    def state(self) -> dict[str, np.ndarray]:
        out = {"stop_best": np.array([self.best_loss, self.best_epoch], dtype=np.float64)}
        if self.best is not None:
            out["stop_flat"] = self.best[0]
            out |= {f"stop_{layer}_{i}": getattr(self.best[1], layer)[i].numpy()
                    for layer in ("mu", "lv", "dec") for i in range(2)}
        return out

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        self.best_loss, epoch = (float(x) for x in arrays["stop_best"])
        self.best_epoch = int(epoch)
        self.best = None
        if "stop_flat" in arrays:
            stats = Stats(*((torch.from_numpy(arrays[f"stop_{layer}_0"].copy()),
                             torch.from_numpy(arrays[f"stop_{layer}_1"].copy())) for layer in ("mu", "lv", "dec")))
            self.best = (arrays["stop_flat"].copy(), stats)


@dataclass
class NTMModel:
    """Trained weights, BatchNorm running statistics and the history of the run."""

    shapes: Shapes
    flat: np.ndarray
    running: Stats
    history: list[dict[str, float]] = field(default_factory=list)

    def theta(self, counts: sp.csr_matrix, ctx: np.ndarray | None = None, chunk: int = 2048) -> np.ndarray:
        """θ float64[D,K] of documents: the posterior mean's softmax (deterministic)."""
        out = []
        w = torch.from_numpy(self.flat)
        for start in range(0, counts.shape[0], chunk):
            x = torch.from_numpy(counts[start:start + chunk].toarray())
            c = None if ctx is None else torch.from_numpy(ctx[start:start + chunk])
            out.append(posterior_theta(w, self.shapes, x, c, self.running))
        return np.vstack(out) if out else np.zeros((0, self.shapes.topics))


def _tensor(counts: sp.csr_matrix, idx: np.ndarray) -> Any:
    return torch.from_numpy(counts[idx].toarray())


def eval_loss(flat: np.ndarray, shapes: Shapes, counts: sp.csr_matrix, ctx: np.ndarray | None,
               running: Stats, chunk: int = 2048) -> float:
    """Mean per-document loss in evaluation mode, in chunks of documents."""
    w, total = torch.from_numpy(flat), 0.0
    for start in range(0, counts.shape[0], chunk):
        idx = np.arange(start, min(start + chunk, counts.shape[0]))
        c = None if ctx is None else torch.from_numpy(ctx[idx])
        total += float(eval_losses(w, shapes, _tensor(counts, idx), c, running).sum())
    return total / max(counts.shape[0], 1)


def train_centralised(counts: sp.csr_matrix, ctx: np.ndarray | None, topics: int, settings: NTMSettings, *,
                      seed: int, on_epoch: Callable[[int, float], None] | None = None) -> NTMModel:
    """ProdLDA (ctx None) or CombinedTM on all documents: 75 % train, 25 % validation, the best epoch kept."""
    n = counts.shape[0]
    if n < 4:
        raise ValueError(f"need at least 4 documents to train with a validation split, got {n}")
    shapes = Shapes(counts.shape[1], topics, 0 if ctx is None else ctx.shape[1])
    train_idx, val_idx = split(n, seed)
    flat = init_params(shapes, np.random.default_rng([seed, 0x57]))
    adam, running = Adam(shapes.size, settings.lr), initial_running(shapes)
    stopping = EarlyStopping(settings.patience)
    model = NTMModel(shapes, flat, running)
    step = 0
    for epoch in range(settings.epochs):
        perm = train_idx[np.random.default_rng([seed, 0, epoch]).permutation(len(train_idx))]
        for start in range(0, len(perm), settings.batch):
            idx = perm[start:start + settings.batch]
            if len(idx) < 2:  # BatchNorm needs two documents
                continue
            params = leaves(flat, shapes)  # no copy: Adam returns a new W, this one is not written
            noise = draw_noise(np.random.default_rng([seed, 1, step]), len(idx), topics)
            loss, stats = batch_loss(params, _tensor(counts, idx), None if ctx is None else torch.from_numpy(ctx[idx]),
                                     noise)
            flat = adam.step(flat, flat_gradient(loss / len(idx), params))
            running = update_running(running, stats, len(idx))
            step += 1
        val = eval_loss(flat, shapes, counts[val_idx], None if ctx is None else ctx[val_idx], running)
        model.history.append({"epoch": epoch + 1, "validation_loss": val})
        if on_epoch is not None:
            on_epoch(epoch + 1, val)
        if stopping.update(epoch + 1, val, flat, running):
            break
    assert stopping.best is not None
    model.flat, model.running = stopping.best
    return model


def training_state(node: Any) -> dict[str, np.ndarray]:
    """A federated node's training as arrays (a checkpoint): W, Adam's moments and count, W at the epoch's start,
    the position (epoch, pos, step, the epoch's first step), the history [epoch, relative change, the node's
    quality figure] and whether training is over. Copies: a snapshot, since Adam updates its moments in place."""
    return {"flat": node.flat.copy(), "adam_m": node.adam.m.copy(), "adam_v": node.adam.v.copy(),
            "adam_t": np.array(node.adam.t), "epoch_start": node.epoch_start.copy(),
            "position": np.array([node.epoch, node.pos, node.step, node.epoch_first_step]),
            "history": np.array([[h["epoch"], h["relative_change"], h.get(node.quality_name, np.nan)]
                                 for h in node.history]).reshape(-1, 3),
            "finished": np.array(node.finished)}


def check_weights(node: Any, arrays: dict[str, np.ndarray]) -> None:
    """ValueError unless the checkpoint's weight vectors have the node's number of parameters."""
    n = node.shapes.size
    if any(arrays[k].shape != (n,) for k in ("flat", "adam_m", "adam_v", "epoch_start")):
        raise ValueError(f"the checkpoint's weights do not have this node's {n} parameters")


def restore_training(node: Any, arrays: dict[str, np.ndarray]) -> None:
    """``training_state``'s arrays back into ``node`` (``check_weights`` first)."""
    node.flat, node.epoch_start = arrays["flat"].copy(), arrays["epoch_start"].copy()
    node.adam.m, node.adam.v, node.adam.t = arrays["adam_m"].copy(), arrays["adam_v"].copy(), int(arrays["adam_t"])
    node.epoch, node.pos, node.step, node.epoch_first_step = (int(x) for x in arrays["position"])
    node.history = [{"epoch": int(e), "relative_change": float(c), node.quality_name: float(v)}
                    for e, c, v in arrays["history"]]
    node.finished = bool(arrays["finished"])


class FederatedNode:
    """Node ℓ of a gFedNTM consortium: its documents, the replicated W, Adam state and running statistics.

    Its position is (epoch, pos): ``pos`` steps of the current epoch are done (a checkpoint can fall mid-epoch,
    see ``state``), ``step`` counts steps over the whole run and names the aggregator rounds."""

    quality_name = "validation_loss"

    def __init__(self, index: int, counts: sp.csr_matrix, ctx: np.ndarray | None, topics: int,
                 settings: NTMSettings, seed: int) -> None:
        self.index, self.counts, self.ctx, self.settings, self.seed = index, counts, ctx, settings, seed
        self.shapes = Shapes(counts.shape[1], topics, 0 if ctx is None else ctx.shape[1])
        self.flat = init_params(self.shapes, np.random.default_rng([seed, 0x57]))
        self.adam, self.running = Adam(self.shapes.size, settings.lr), initial_running(self.shapes)
        self.step = 0
        self.epoch = 0
        self.pos = 0
        self.epoch_start = self.flat.copy()  # W when the current epoch began (for its relative change)
        self.epoch_first_step = 0  # ``step`` when the current (or last finished) epoch began
        self.history: list[dict[str, float]] = []
        self.train_idx, self.val_idx = split(counts.shape[0], seed, index)  # until ``adopt_split``
        self.stopping = EarlyStopping(settings.patience)
        self.finished = False  # the stopping rule (or the budget) ended training; W is the best epoch's

    @property
    def n_train(self) -> int:
        """Documents this node trains on (its size in the union batches)."""
        return len(self.train_idx)

    def adopt_split(self, sizes: list[int]) -> list[int]:
        """Train and validate on this node's part of the centralised split of the pooled documents (``sizes``:
        every node's documents, from the setup exchange); returns every node's training documents (the union
        batches' composition), which every node computes alike."""
        self.train_idx, self.val_idx = pooled_split(sizes, self.seed, self.index)
        return [len(pooled_split(sizes, self.seed, i)[0]) for i in range(len(sizes))]

    @property
    def best_epoch(self) -> int:
        """The epoch whose weights are kept (early stopping's best)."""
        return self.stopping.best_epoch

    def validation_sum(self) -> tuple[float, int]:
        """(Σ loss, number of documents) over this node's validation documents in evaluation mode."""
        n = len(self.val_idx)
        if n == 0:
            return 0.0, 0
        ctx = None if self.ctx is None else self.ctx[self.val_idx]
        return eval_loss(self.flat, self.shapes, self.counts[self.val_idx], ctx, self.running) * n, n

    def end_epoch(self, validation_loss: float) -> bool:
        """The consortium's validation loss of the epoch just ended; whether training is over (stopped, or the
        budget spent). When it is, W and the statistics become the best epoch's."""
        self.history[-1]["validation_loss"] = validation_loss
        change = self.history[-1]["relative_change"]
        stop = self.stopping.update(self.epoch, validation_loss, self.flat, self.running) if np.isfinite(
            validation_loss) else False
        stop = stop or change < self.settings.tolerance or self.epoch >= self.settings.epochs
        if stop:
            if self.stopping.best is not None:
                self.flat, self.running = self.stopping.best[0].copy(), self.stopping.best[1]
            self.finished = True
        return stop

    def steps_per_epoch(self, sizes: list[int]) -> int:
        """Steps of one epoch: the centralised trainer's on the pooled documents, ⌈Σ N_ℓ / B⌉."""
        return max(1, -(-sum(sizes) // self.settings.batch))

    def train_epoch(self, sizes: list[int], total: SumFn, after_step: Callable[[], None] | None = None,
                    start: StartFn | None = None) -> float:
        """The current epoch's remaining Sync-Opt steps; returns ‖ΔW‖ / ‖W‖ over the epoch. ``sizes``: every
        node's document count; ``after_step`` runs after every step (checkpoints); ``start``: an exchange that
        runs while the node goes on (the decoder's gradient travels during phases 4 and 5; default: ``total``)."""
        start = synchronous_start(total) if start is None else start
        if self.pos == 0:
            self.epoch_start, self.epoch_first_step = self.flat.copy(), self.step
        order = np.random.default_rng([self.seed, 0, self.epoch]).permutation(sum(sizes))  # the centralised order
        b, low = self.settings.batch, sum(sizes[:self.index])
        high = low + sizes[self.index]
        for s in range(self.pos, self.steps_per_epoch(sizes)):
            batch = order[s * b:(s + 1) * b]  # the centralised batch, positions in the pooled training documents
            places = np.flatnonzero((batch >= low) & (batch < high))  # this node's documents' places in it
            idx = self.train_idx[batch[places] - low]
            union = len(batch)
            self.pos = s + 1
            if union < 2:  # BatchNorm needs two documents; every node sees the same sizes and skips alike
                continue
            noise = draw_noise(np.random.default_rng([self.seed, 1, self.step]), union, self.shapes.topics)
            node = NodeStep(self.flat, self.shapes, self.counts[idx].toarray(),
                            None if self.ctx is None else self.ctx[idx], noise.at(places), union)
            enc = total("enc", self.step, node.sums_encoder())
            dec = total("dec", self.step, node.sums_decoder(enc))
            g_dec = total("gdec", self.step, node.grad_decoder_stats(dec))
            g_stats, g_decoder = node.grad_encoder_stats(g_dec)
            decoder_total = start("grad-dec", self.step, g_decoder)
            g_enc = total("genc", self.step, g_stats)
            encoder_total = total("grad-enc", self.step, node.gradient(g_enc))
            self.flat = self.adam.step_parts(self.flat, [encoder_total, decoder_total()])
            self.running = update_running(self.running, node.batch_stats(), union)
            self.step += 1
            if after_step is not None:
                after_step()
        before = self.epoch_start
        self.epoch, self.pos = self.epoch + 1, 0
        change = float(np.linalg.norm(self.flat - before) / max(np.linalg.norm(before), 1e-300))
        self.history.append({"epoch": self.epoch, "relative_change": change})
        return change

    def state(self) -> dict[str, np.ndarray]:
        """Everything a resumed node needs, as arrays: ``training_state``'s, the running statistics and the
        stopping rule's."""
        stats = {f"running_{layer}_{i}": getattr(self.running, layer)[i].numpy()
                 for layer in ("mu", "lv", "dec") for i in range(2)}
        return training_state(self) | stats | self.stopping.state()

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        """Back to ``state()``'s arrays; ValueError if they do not fit this node."""
        check_weights(self, arrays)
        running = {(layer, i): torch.from_numpy(arrays[f"running_{layer}_{i}"].copy())
                   for layer in ("mu", "lv", "dec") for i in range(2)}
        for (layer, i), t in running.items():
            if t.shape != getattr(self.running, layer)[i].shape:
                raise ValueError(f"the checkpoint's {layer} statistics do not fit this node")
        restore_training(self, arrays)
        self.running = Stats(*((running[(layer, 0)], running[(layer, 1)]) for layer in ("mu", "lv", "dec")))
        self.stopping.restore(arrays)

    def model(self) -> NTMModel:
        return NTMModel(self.shapes, self.flat.copy(), self.running, list(self.history))

    def phase_sizes(self) -> dict[str, int]:
        """Length of every phase's vector (one dense session each)."""
        k, v = self.shapes.topics, self.shapes.vocabulary
        tail = decoder_size(self.shapes)
        return {"enc": 4 * k, "dec": 2 * v, "gdec": 2 * v, "genc": 4 * k, "grad-dec": tail,
                "grad-enc": self.shapes.size - tail}
