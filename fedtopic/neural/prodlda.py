"""ProdLDA (Srivastava & Sutton 2017) and CombinedTM (Bianchi et al. 2021) as pure functions of a parameter dict.

Architecture, the contextualized-topic-models defaults gFedNTM used (§4.1): encoder x → Linear(·, 100) →
softplus → Linear(100, 100) → softplus → dropout(0.2) → (μ, log σ²) = BN(Linear(100, K)) each; z = μ + σ·ε;
θ = dropout(softmax(z), 0.2); decoder p(w | θ) = softmax(BN(θ β)). Every BatchNorm is ``affine=False`` (as in
that package: a learned scale would let the decoder undo the normalisation that keeps ProdLDA from collapsing).
Prior N(0, σ₀²) with learnable σ₀² = 1 − 1/K (Laplace approximation of Dir(1)).

Three parameters of that package are left out because their exact gradient is identically zero: the biases of
the μ and log σ² layers (the BatchNorm right after subtracts the batch mean, so a bias cannot change anything)
and the prior mean μ₀ (under that BatchNorm the batch's μ has mean exactly 0, so ∂L/∂μ₀ = N·μ₀/σ₀², which
vanishes at its initial 0). In floating point their gradients are rounding residues of ~1e-11 that Adam
(ε = 1e-8) turns into steps of ~1e-5: a random walk that differs with the summation order, so it would break
the federated = centralised equivalence without changing any model. Loss per document:
reconstruction −Σ_w x_w log p(w | θ) plus KL(q ‖ prior); a batch's loss is the sum over its documents.
CombinedTM's encoder input is [x ; A·e] with e the document's sentence embedding and A a learned
Linear(d, V), as in that package.

Explicit randomness: ``Noise`` holds ε and the two dropout masks for a batch, drawn by ``draw_noise`` from a
generator the caller seeds per step, so federated and centralised training can use the same draws.

Under distributed DP (``Shapes.norm == "document"``, ``neural.ntm_dp``) a document's loss must depend on that
document alone, so that its gradient can be clipped: BatchNorm ties every document of a batch to the others
(Opacus refuses it for that reason and puts GroupNorm in its place). That model has no batch statistics: μ and
log σ² get the biases BatchNorm made useless, and the decoder's θβ is standardised per document over the words
(``document_norm``: LayerNorm without affine parameters, GroupNorm with one group). On bbc-news at V 2,000, K 10,
30 epochs, that keeps ProdLDA's topics (NPMI 0.29 vs 0.16 with BatchNorm, diversity 0.72 vs 0.96) where removing
the normalisation altogether collapses them (NPMI 0.08, diversity 0.15); normalising μ and log σ² per document
too gives 0.26 and 0.49 (docs/privacy.md §3e).

BatchNorm over a batch split among nodes: a layer's batch mean and variance are functions of per-node sums
(Σ y, Σ y², n), so ``forward`` takes the layer statistics as inputs and ``layer_sums`` gives a node's sums.
The exact gradient of the union batch's loss then follows from the chain rule through those statistics
(``fedtopic.neural.sync_opt``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedtopic.neural.require import require_torch

torch: Any = require_torch("ProdLDA / CombinedTM")

HIDDEN = 100
DROPOUT = 0.2
BN_EPS = 1e-5
BN_MOMENTUM = 0.1


@dataclass(frozen=True)
class Shapes:
    """V words, K topics, the sentence-embedding size d (0: ProdLDA), and the normalisation: "batch" (BatchNorm,
    the papers') or "document" (per-document, for DP-SGD; μ and log σ² then have biases)."""

    vocabulary: int
    topics: int
    context: int = 0
    norm: str = "batch"

    def params(self) -> list[tuple[str, tuple[int, ...]]]:
        """(name, shape) of every trainable tensor, in the fixed order of the flat vector."""
        v, k, d, h = self.vocabulary, self.topics, self.context, HIDDEN
        adapt = [("adapt_w", (v, d)), ("adapt_b", (v,))] if d else []
        biases = [("mu_b", (k,)), ("lv_b", (k,))] if self.norm == "document" else []
        return adapt + [("in_w", (h, 2 * v if d else v)), ("in_b", (h,)), ("h1_w", (h, h)), ("h1_b", (h,)),
                        ("mu_w", (k, h)), ("lv_w", (k, h)), *biases, ("beta", (k, v)), ("prior_var", (k,))]

    @property
    def size(self) -> int:
        return sum(int(np.prod(s)) for _, s in self.params())


def init_params(shapes: Shapes, rng: np.random.Generator) -> np.ndarray:
    """W⁽⁰⁾ as a flat float64 vector: Linear layers U(±1/√fan_in) (PyTorch's default), β Xavier-uniform,
    μ₀ = 0, σ₀² = 1 − 1/K."""
    parts = []
    for name, shape in shapes.params():
        if name == "beta":
            bound = math.sqrt(6.0 / (shape[0] + shape[1]))
            parts.append(rng.uniform(-bound, bound, shape))
        elif name == "prior_var":
            parts.append(np.full(shape, 1.0 - 1.0 / shapes.topics))
        else:
            fan_in = dict(shapes.params())[name.replace("_b", "_w")][1]
            parts.append(rng.uniform(-1, 1, shape) / math.sqrt(fan_in))
    return np.concatenate([p.reshape(-1) for p in parts])


def unflatten(flat: Any, shapes: Shapes) -> dict[str, Any]:
    """Named views into the flat parameter tensor."""
    out, at = {}, 0
    for name, shape in shapes.params():
        n = int(np.prod(shape))
        out[name] = flat[at:at + n].reshape(shape)
        at += n
    return out


def leaves(flat: np.ndarray, shapes: Shapes) -> dict[str, Any]:
    """Each parameter as its own autograd leaf over ``flat``'s memory (float64[|W|], not copied, not written).

    Not views of one flat leaf: autograd would then give every parameter's gradient as a zero |W|-vector with
    its slice filled, and add the ten up (44 % of a CombinedTM step at 1.27 M parameters)."""
    return {name: torch.from_numpy(view).requires_grad_(True) for name, view in unflatten(flat, shapes).items()}


def flat_gradient(loss: Any, params: dict[str, Any]) -> np.ndarray:
    """d loss / dW float64[|W|] over ``leaves``, in the flat vector's order (a parameter the loss does not
    reach gets zeros)."""
    grads = torch.autograd.grad(loss, list(params.values()), allow_unused=True, materialize_grads=True)
    return np.concatenate([g.detach().reshape(-1).numpy() for g in grads])


@dataclass(frozen=True)
class Noise:
    """ε float64[B,K], the encoder's dropout keep-mask bool[B,100] and θ's bool[B,K] (None: no dropout, as in
    evaluation, where a dropout layer is the identity)."""

    eps: Any
    keep_hidden: Any | None
    keep_theta: Any | None

    def rows(self, start: int, stop: int) -> Noise:
        """The draws of batch rows start..stop (a node's slice of the union batch)."""
        return Noise(self.eps[start:stop], None if self.keep_hidden is None else self.keep_hidden[start:stop],
                     None if self.keep_theta is None else self.keep_theta[start:stop])

    def at(self, places: np.ndarray) -> Noise:
        """The draws of the batch rows at ``places`` int64[n] (a node's documents' places in the union batch)."""
        pick = torch.from_numpy(np.asarray(places, dtype=np.int64))
        return Noise(self.eps[pick], None if self.keep_hidden is None else self.keep_hidden[pick],
                     None if self.keep_theta is None else self.keep_theta[pick])


def draw_noise(rng: np.random.Generator, batch: int, topics: int, training: bool = True) -> Noise:
    """The batch's ε and dropout masks (no dropout and ε = 0 when not training)."""
    if not training:
        return Noise(torch.zeros(batch, topics, dtype=torch.float64), None, None)
    eps = torch.from_numpy(rng.standard_normal((batch, topics)))
    return Noise(eps, torch.from_numpy(rng.random((batch, HIDDEN)) >= DROPOUT),
                 torch.from_numpy(rng.random((batch, topics)) >= DROPOUT))


@dataclass
class Stats:
    """Batch statistics of the three BatchNorm layers: mean and (biased) variance each."""

    mu: tuple[Any, Any]
    lv: tuple[Any, Any]
    dec: tuple[Any, Any]


def batch_norm(y: Any, stats: tuple[Any, Any]) -> Any:
    """(y − mean) / √(var + ε) for the layer's (mean, var): BatchNorm without affine parameters."""
    mean, var = stats
    return (y - mean) / torch.sqrt(var + BN_EPS)


def encode(p: dict[str, Any], x: Any, ctx: Any | None, keep_hidden: Any | None) -> tuple[Any, Any]:
    """(μ_pre, logσ²_pre) float[B,K] before their BatchNorm; inverted dropout with ``keep_hidden``, none when
    it is None."""
    inp = x if ctx is None else torch.cat([x, ctx @ p["adapt_w"].T + p["adapt_b"]], dim=1)
    return _encoder_heads(p, inp @ p["in_w"].T + p["in_b"], keep_hidden)


def _encoder_heads(p: dict[str, Any], pre: Any, keep_hidden: Any | None) -> tuple[Any, Any]:
    """The encoder after its first linear layer ``pre`` [B,100]: softplus, the second layer, dropout, μ/logσ²."""
    hidden = torch.nn.functional.softplus(pre)
    hidden = torch.nn.functional.softplus(hidden @ p["h1_w"].T + p["h1_b"])
    if keep_hidden is not None:
        hidden = hidden * keep_hidden / (1.0 - DROPOUT)
    return hidden @ p["mu_w"].T, hidden @ p["lv_w"].T


def encode_eval(p: dict[str, Any], x: Any, ctx: Any | None) -> tuple[Any, Any]:
    """``encode`` without dropout for a block of documents (evaluation, no gradients), regrouped for CombinedTM:
    the first layer's context half composed with the adapter once (W_c·A, 100×d), so the block never forms its
    V-wide adapted input. Equal to ``encode(p, x, ctx, None)`` up to rounding; at V = 2,000, d = 384 it is a
    quarter of the multiply-adds (a validation pass over 2,823 documents took 0.26 s, a tenth of an epoch)."""
    if ctx is None:
        return encode(p, x, None, None)
    v = x.shape[1]
    w_x, w_c = p["in_w"][:, :v], p["in_w"][:, v:]
    return _encoder_heads(p, x @ w_x.T + ctx @ (w_c @ p["adapt_w"]).T + (w_c @ p["adapt_b"] + p["in_b"]), None)


def decode_pre(p: dict[str, Any], mu: Any, lv: Any, noise: Noise) -> tuple[Any, Any]:
    """(θ β before its BatchNorm float[B,V], the posterior (μ, logσ²) after theirs) given normalised μ, logσ²."""
    z = mu + torch.exp(0.5 * lv) * noise.eps
    theta = torch.softmax(z, dim=1)
    if noise.keep_theta is not None:
        theta = theta * noise.keep_theta / (1.0 - DROPOUT)
    return theta @ p["beta"], (mu, lv)


def doc_losses(p: dict[str, Any], x: Any, dec_pre: Any, dec_stats: tuple[Any, Any], mu: Any, lv: Any) -> Any:
    """Per-document loss float[B]: reconstruction −Σ x log softmax(BN(θβ)) + KL(N(μ, σ²) ‖ N(μ₀, σ₀²))."""
    return _loss(p, x, batch_norm(dec_pre, dec_stats), mu, lv)


def document_norm(y: Any) -> Any:
    """Each row of y float[B,n] standardised over its n values: (y − mean) / √(var + ε) (LayerNorm, no affine)."""
    mean = y.mean(dim=-1, keepdim=True)
    centred = y - mean
    return centred / torch.sqrt((centred * centred).mean(dim=-1, keepdim=True) + BN_EPS)


def document_losses(p: dict[str, Any], x: Any, ctx: Any | None, noise: Noise) -> Any:
    """Per-document loss float[B] of the per-document model (``Shapes.norm == "document"``): each document's
    depends on it alone."""
    mu_pre, lv_pre = encode(p, x, ctx, noise.keep_hidden)
    dec_pre, (mu, lv) = decode_pre(p, mu_pre + p["mu_b"], lv_pre + p["lv_b"], noise)
    return _loss(p, x, document_norm(dec_pre), mu, lv)


def _loss(p: dict[str, Any], x: Any, logits: Any, mu: Any, lv: Any) -> Any:
    """−Σ x log softmax(logits) + KL(N(μ, σ²) ‖ N(0, σ₀²)) per document, float[B]."""
    log_p = torch.log_softmax(logits, dim=1)
    recon = -(x * log_p).sum(dim=1)
    var, pv = torch.exp(lv), p["prior_var"]
    kl = 0.5 * ((var / pv).sum(dim=1) + (mu ** 2 / pv).sum(dim=1) - mu.shape[1]
                + torch.log(pv).sum() - lv.sum(dim=1))
    return recon + kl


def moments(y: Any) -> tuple[Any, Any]:
    """(mean, biased variance) over the batch rows, the variance in two passes as the mean square of y − mean
    (``torch.var`` over dim 0 reads the batch by column: 3× slower forward and back at 64 × 2,000)."""
    mean = y.mean(dim=0)
    centred = y - mean
    return mean, (centred * centred).mean(dim=0)


def batch_loss(p: dict[str, Any], x: Any, ctx: Any | None, noise: Noise) -> tuple[Any, Stats]:
    """Σ over the batch of the per-document loss, BatchNorm on this batch's own statistics (centralised); ``p``
    the parameters (``leaves``)."""
    mu_pre, lv_pre = encode(p, x, ctx, noise.keep_hidden)
    s_mu, s_lv = moments(mu_pre), moments(lv_pre)
    dec_pre, (mu, lv) = decode_pre(p, batch_norm(mu_pre, s_mu), batch_norm(lv_pre, s_lv), noise)
    s_dec = moments(dec_pre)
    return doc_losses(p, x, dec_pre, s_dec, mu, lv).sum(), Stats(s_mu, s_lv, s_dec)


def posterior_theta(flat: Any, shapes: Shapes, x: Any, ctx: Any | None, running: Stats) -> np.ndarray:
    """θ float64[B,K] of documents: softmax of the posterior mean, BatchNorm on the running statistics (no
    sampling, no dropout: the same document always gets the same θ)."""
    with torch.no_grad():
        p = unflatten(flat, shapes)
        mu_pre, _ = encode_eval(p, x, ctx)
        mu = mu_pre + p["mu_b"] if shapes.norm == "document" else batch_norm(mu_pre, running.mu)
        return torch.softmax(mu, dim=1).numpy()


def eval_losses(flat: Any, shapes: Shapes, x: Any, ctx: Any | None, running: Stats) -> Any:
    """Per-document loss float[B] in evaluation mode: running statistics, no dropout, ε = 0 (no gradients)."""
    with torch.no_grad():
        p = unflatten(flat, shapes)
        noise = draw_noise(np.random.default_rng(0), x.shape[0], shapes.topics, training=False)
        mu_pre, lv_pre = encode_eval(p, x, ctx)
        if shapes.norm == "document":
            dec, (mu, lv) = decode_pre(p, mu_pre + p["mu_b"], lv_pre + p["lv_b"], noise)
            return _loss(p, x, document_norm(dec), mu, lv)
        dec, (mu, lv) = decode_pre(p, batch_norm(mu_pre, running.mu), batch_norm(lv_pre, running.lv), noise)
        return doc_losses(p, x, dec, running.dec, mu, lv)


def topics(flat: np.ndarray, shapes: Shapes) -> np.ndarray:
    """Φ float64[K,V]: softmax over words of each row of β (the topic-word weights the decoder mixes)."""
    with torch.no_grad():
        return torch.softmax(unflatten(torch.from_numpy(flat), shapes)["beta"], dim=1).numpy()


def update_running(running: Stats, batch: Stats, n: int) -> Stats:
    """Running statistics after one training batch of n documents (PyTorch's rule: momentum 0.1, the running
    variance unbiased by n/(n − 1))."""
    def one(r: tuple[Any, Any], b: tuple[Any, Any]) -> tuple[Any, Any]:
        unbiased = b[1] * (n / max(n - 1, 1))
        return ((1 - BN_MOMENTUM) * r[0] + BN_MOMENTUM * b[0].detach(),
                (1 - BN_MOMENTUM) * r[1] + BN_MOMENTUM * unbiased.detach())

    return Stats(one(running.mu, batch.mu), one(running.lv, batch.lv), one(running.dec, batch.dec))


def initial_running(shapes: Shapes) -> Stats:
    """Zero means and unit variances."""
    k, v = shapes.topics, shapes.vocabulary
    z = torch.zeros

    return Stats((z(k, dtype=torch.float64), torch.ones(k, dtype=torch.float64)),
                 (z(k, dtype=torch.float64), torch.ones(k, dtype=torch.float64)),
                 (z(v, dtype=torch.float64), torch.ones(v, dtype=torch.float64)))
