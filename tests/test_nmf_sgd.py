"""NMF by projected SGD and the SMILE critic (torch) against slow numpy references; FedAvg(1 client) = centralised."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("torch")

import torch  # noqa: E402

from fedtopic.algorithms.fednmf.party import FedNMFParty  # noqa: E402
from fedtopic.algorithms.registry import get_algorithm  # noqa: E402
from fedtopic.corpus.types import Corpus  # noqa: E402
from fedtopic.models.nnls import counts_matrix  # noqa: E402
from fedtopic.neural.dense_rows import dense_rows  # noqa: E402
from fedtopic.neural.nmf_sgd import NMFClient, SGDSettings, init_w, reconstruction_loss  # noqa: E402
from fedtopic.neural.smile import Critic, critic_size, init_critic, smile_lower_bound  # noqa: E402


def random_counts(n: int, v: int, seed: int) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    dense = rng.poisson(0.3, size=(n, v)).astype(np.float64)
    return sp.csr_matrix(dense)


@pytest.mark.parametrize(("precision", "rtol"), [("float64", 1e-12), ("float32", 2e-5)])
def test_one_full_batch_epoch_matches_the_numpy_step(precision: str, rtol: float) -> None:
    a = random_counts(12, 30, 0)
    k, lr = 4, 0.05
    client = NMFClient(a, k, index=0, seed=1, precision=precision)
    w0 = init_w(30, k, np.random.default_rng(2)).astype(precision).astype(np.float64)  # what the client starts from
    h0 = client.h.astype(np.float64)
    w1, theta = client.client_update(w0, None, SGDSettings(lr, batch=12, mi_weight=0.0), epochs=1)
    assert theta is None
    dense, b = a.toarray(), 12
    r = dense - h0 @ w0.T
    grad_w = -(2.0 / b) * r.T @ h0  # ∇_W of (1/B)Σ‖a_j − W h_j‖²
    grad_h = -(2.0 / b) * r @ w0
    # the caps: the exact minimiser of each block's quadratic along its gradient
    step_w = min(lr, b * np.sum(grad_w ** 2) / (2 * np.sum((h0 @ grad_w.T) ** 2)))
    d = b * grad_h
    step_h = np.minimum(lr, np.sum(d ** 2, axis=1) / (2 * np.sum((d @ w0.T) ** 2, axis=1)))
    assert w1.dtype == np.float64 and client.h.dtype == np.dtype(precision)
    np.testing.assert_allclose(w1, np.maximum(w0 - step_w * grad_w, 0.0), rtol=rtol, atol=rtol * 1e-3)
    np.testing.assert_allclose(client.h, np.maximum(h0 - step_h[:, None] * d, 0.0), rtol=rtol, atol=rtol * 1e-3)


def test_one_full_batch_step_with_mi_matches_autograd_of_eq3() -> None:
    """The closed-form reconstruction gradients plus autograd through SMILE only = autograd of all of Eq. 3."""
    a = random_counts(10, 15, 7)
    k, lr, lam, tau = 3, 0.02, 0.3, 5.0
    client = NMFClient(a, k, index=0, seed=3)
    w0, h0 = init_w(15, k, np.random.default_rng(5)), client.h.copy()
    theta0 = init_critic(15, k, np.random.default_rng(6))
    w1, theta1 = client.client_update(w0, theta0, SGDSettings(lr, batch=10, mi_weight=lam, tau=tau), epochs=1)
    critic = Critic(theta0, 15, k)
    at = torch.tensor(a.toarray())
    w, h = torch.tensor(w0, requires_grad=True), torch.tensor(h0, requires_grad=True)
    mi = smile_lower_bound(critic.pair_scores(at, h), tau)
    loss = ((at - h @ w.T) ** 2).sum() / 10 - lam * mi  # Eq. 3
    grad_w, grad_h = (g.numpy() for g in torch.autograd.grad(loss, [w, h], retain_graph=True))
    grads_theta = torch.autograd.grad(mi, critic.params)
    step_w = min(lr, 10 * np.sum(grad_w ** 2) / (2 * np.sum((h0 @ grad_w.T) ** 2)))
    d = 10 * grad_h
    step_h = np.minimum(lr, np.sum(d ** 2, axis=1) / (2 * np.sum((d @ w0.T) ** 2, axis=1)))
    np.testing.assert_allclose(w1, np.maximum(w0 - step_w * grad_w, 0.0), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(client.h, np.maximum(h0 - step_h[:, None] * d, 0.0), rtol=1e-12, atol=1e-15)
    want_theta = theta0 + lr * np.concatenate([g.numpy().reshape(-1) for g in grads_theta])
    np.testing.assert_allclose(theta1, want_theta, rtol=1e-12, atol=1e-15)


def test_the_batch_rows_written_dense_equal_scipys() -> None:
    rng = np.random.default_rng(11)
    rows = np.sort(rng.integers(0, 9, 60))
    cols, data = rng.integers(0, 13, 60), rng.integers(1, 4, 60).astype(np.float32)
    indptr = np.searchsorted(rows, np.arange(10))
    csr = sp.csr_matrix((data, cols, indptr), shape=(9, 13))  # duplicate (row, column) entries kept: they add up
    assert not csr.has_canonical_format
    out = np.full((6, 13), np.nan, dtype=np.float32)
    for idx in (np.array([3, 0, 8, 3]), np.array([5]), np.arange(6)[::-1]):
        out[:] = np.nan
        dense_rows(csr.indptr, csr.indices, csr.data, idx, out)
        np.testing.assert_array_equal(out[:len(idx)], csr[idx].toarray())
        assert np.isnan(out[len(idx):]).all()  # rows past the batch untouched


def test_a_huge_learning_rate_is_capped_instead_of_diverging() -> None:
    a = random_counts(40, 30, 9) * 20  # long repetitive documents
    client = NMFClient(a, 4, index=0, seed=0)
    w = init_w(30, 4, np.random.default_rng(0))
    before = reconstruction_loss(a, w, client.h)
    for _ in range(5):
        w, _ = client.client_update(w, None, SGDSettings(50.0, 8, 0.0), 1)
    assert np.isfinite(w).all() and np.isfinite(client.h).all()
    assert reconstruction_loss(a, w, client.h) < before


def test_projection_keeps_factors_non_negative_and_sgd_lowers_the_loss() -> None:
    a = random_counts(80, 40, 3)
    client = NMFClient(a, 5, index=0, seed=0)
    w = init_w(40, 5, np.random.default_rng(0))
    before = reconstruction_loss(a, w, client.h)
    for _ in range(10):
        w, _ = client.client_update(w, None, SGDSettings(0.05, 8, 0.0), 1)
    assert w.min() >= 0 and client.h.min() >= 0
    assert reconstruction_loss(a, w, client.h) < 0.8 * before
    np.testing.assert_allclose(reconstruction_loss(a, w, client.h), np.sum((a.toarray() - client.h @ w.T) ** 2))


def mlp_reference(flat: np.ndarray, v: int, k: int, x: np.ndarray, y: np.ndarray) -> float:
    """T_θ(x, y) by the plain two-hidden-layer network on the concatenation [x; y]."""
    h1, h2 = 32, 256
    at = 0

    def take(*shape: int) -> np.ndarray:
        nonlocal at
        n = int(np.prod(shape))
        out = flat[at:at + n].reshape(shape)
        at += n
        return out

    u, g, b1, w2, b2, w3, b3 = take(h1, v), take(h1, k), take(h1), take(h2, h1), take(h2), take(1, h2), take(1)
    first = np.concatenate([u, g], axis=1) @ np.concatenate([x, y]) + b1
    second = np.maximum(w2 @ np.maximum(first, 0) + b2, 0)
    return float((w3 @ second + b3)[0])


def test_pair_scores_and_smile_match_the_numpy_reference() -> None:
    v, k, b, tau = 9, 3, 5, 0.7
    rng = np.random.default_rng(4)
    flat = init_critic(v, k, rng) * 3
    assert flat.shape == (critic_size(v, k),)
    x, y = rng.poisson(1.0, (b, v)).astype(float), rng.random((b, k))
    critic = Critic(flat, v, k)
    scores = critic.pair_scores(torch.tensor(x), torch.tensor(y)).detach().numpy()
    want = np.array([[mlp_reference(flat, v, k, x[j], y[jj]) for jj in range(b)] for j in range(b)])
    np.testing.assert_allclose(scores, want, rtol=1e-10, atol=1e-12)
    off = [want[j, jj] for j in range(b) for jj in range(b) if j != jj]
    clipped = [min(max(math.exp(t), math.exp(-tau)), math.exp(tau)) for t in off]  # Song & Ermon's clip
    smile = np.mean(np.diag(want)) - math.log(np.mean(clipped))
    assert float(smile_lower_bound(torch.tensor(want), tau)) == pytest.approx(smile, rel=1e-12)
    np.testing.assert_array_equal(critic.flat(), flat)
    # the gradient is the Jensen-Shannon bound's: d/db3 = mean_diag σ(−T) − mean_offdiag σ(T)
    t = torch.tensor(want, requires_grad=True)
    (grad,) = torch.autograd.grad(smile_lower_bound(t + 0.0, tau), [t])
    sig = 1 / (1 + np.exp(-want))
    expect = np.where(np.eye(b, dtype=bool), (1 - sig) / b, -sig / (b * (b - 1)))
    np.testing.assert_allclose(grad.numpy(), expect, rtol=1e-10)


def test_the_critic_ascends_its_bound() -> None:
    a = random_counts(16, 20, 5)
    client = NMFClient(a, 3, index=0, seed=0)
    w = init_w(20, 3, np.random.default_rng(0))
    theta0 = init_critic(20, 3, np.random.default_rng(1))

    def bound(theta: np.ndarray, h: np.ndarray) -> float:
        c = Critic(theta, 20, 3)
        scores = c.pair_scores(torch.tensor(a.toarray()), torch.tensor(h)).detach().numpy()
        n = len(scores)
        off = scores[~np.eye(n, dtype=bool)]
        return float(-np.mean(np.logaddexp(0, -np.diag(scores))) - np.mean(np.logaddexp(0, off)))  # the JS bound

    h0 = client.h.copy()
    _, theta1 = client.client_update(w, theta0, SGDSettings(1e-3, 16, 0.5), 1)
    assert theta1 is not None and not np.array_equal(theta1, theta0)
    assert bound(theta1, h0) > bound(theta0, h0)  # θ ascends the bound whose gradient it follows (one batch)


def corpus_of(a: sp.csr_matrix, labels: np.ndarray | None = None) -> Corpus:
    words, ptr = [], [0]
    dense = a.toarray().astype(int)
    for d in range(a.shape[0]):
        for w in range(a.shape[1]):
            words += [w] * dense[d, w]
        ptr.append(len(words))
    vocab = tuple(f"w{i}" for i in range(a.shape[1]))
    return Corpus(np.array(words, dtype=np.int32), np.array(ptr, dtype=np.int64), vocab,
                  labels=None if labels is None else labels.astype(np.int32))


@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("mi_weight", [0.0, 0.2])
def test_fedavg_with_one_client_and_c1_equals_centralised_sgd_step_for_step(mi_weight: float, precision: str) -> None:
    corpus = corpus_of(random_counts(40, 25, 6))
    assert np.array_equal(counts_matrix(corpus).toarray(), random_counts(40, 25, 6).toarray())
    opts = {"lr": "0.05", "batch": "8", "mi_weight": str(mi_weight), "local_epochs": "2", "fraction": "1",
            "server_rule": "avg", "precision": precision}
    fed_spec = get_algorithm("fednmf").spec(4, 3, seed=9, options=opts)
    party = FedNMFParty("p1", 0, 1, corpus, fed_spec)
    for _ in range(3):
        party.apply(party.local_update())
    sgd = get_algorithm("nmf-sgd")
    central_opts = {k: v for k, v in opts.items() if k in {o.name for o in sgd.options}}
    (fitted,) = sgd.fit([corpus], sgd.spec(4, 6, seed=9, options=central_opts))
    assert fitted.model.factors is not None
    np.testing.assert_allclose(party.w.T, fitted.model.factors, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(party.topic_weights(), fitted.theta, rtol=1e-10, atol=1e-14)


def test_same_seed_same_bits() -> None:
    corpus = corpus_of(random_counts(30, 20, 8))
    spec = get_algorithm("nmf-sgd").spec(3, 2, seed=4, options={"mi_weight": "0.1", "batch": "4"})
    one = get_algorithm("nmf-sgd").fit([corpus], spec)[0]
    two = get_algorithm("nmf-sgd").fit([corpus], spec)[0]
    assert np.array_equal(one.model.factors, two.model.factors) and np.array_equal(one.theta, two.theta)
