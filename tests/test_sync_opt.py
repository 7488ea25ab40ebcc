"""gFedNTM's central claim: Sync-Opt on nodes' batches equals centralised ProdLDA / CombinedTM on their union,
BatchNorm included (every parameter within 1e-5 after 100 Adam steps)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fedtopic.neural.prodlda import (  # noqa: E402
    Shapes,
    batch_loss,
    batch_norm,
    decode_pre,
    doc_losses,
    draw_noise,
    encode,
    flat_gradient,
    init_params,
    initial_running,
    leaves,
    unflatten,
    update_running,
)
from fedtopic.neural.sync_opt import Adam, NodeStep, pull_back  # noqa: E402


def federated_gradient(flat, shapes, xs, ctxs, noise):
    """Σ_ℓ G_ℓ through the five summed phases (plain sums stand in for the aggregator)."""
    sizes = [len(x) for x in xs]
    n = sum(sizes)
    starts = np.cumsum([0, *sizes])
    nodes = [NodeStep(flat, shapes, x, c, noise.rows(a, b), n) for x, c, a, b in zip(xs, ctxs, starts, starts[1:])]
    enc = sum(node.sums_encoder() for node in nodes)
    dec = sum(node.sums_decoder(enc) for node in nodes)
    g_dec = sum(node.grad_decoder_stats(dec) for node in nodes)
    backs = [node.grad_encoder_stats(g_dec) for node in nodes]
    g_enc = sum(g_stats for g_stats, _ in backs)
    return sum(np.concatenate([node.gradient(g_enc), g_decoder]) for node, (_, g_decoder) in zip(nodes, backs)), \
        nodes[0].batch_stats()


def central_gradient(flat, shapes, x, ctx, noise):
    params = leaves(flat, shapes)
    loss, stats = batch_loss(params, torch.from_numpy(x), None if ctx is None else torch.from_numpy(ctx), noise)
    return flat_gradient(loss / len(x), params), stats


def data(seed: int, sizes, v: int, d: int):
    rng = np.random.default_rng(seed)
    xs = [rng.poisson(0.4, (n, v)).astype(float) for n in sizes]
    ctxs = [rng.standard_normal((n, d)) if d else None for n in sizes]
    return xs, ctxs


@pytest.mark.parametrize("context", [0, 6])
def test_one_step_gradient_equals_the_union_batch_gradient(context):
    shapes = Shapes(vocabulary=30, topics=4, context=context)
    flat = init_params(shapes, np.random.default_rng(0))
    xs, ctxs = data(1, (5, 7, 4), 30, context)
    noise = draw_noise(np.random.default_rng(2), 16, 4)
    fed, _ = federated_gradient(flat, shapes, xs, ctxs, noise)
    union_ctx = None if not context else np.vstack(ctxs)
    cen, _ = central_gradient(flat, shapes, np.vstack(xs), union_ctx, noise)
    np.testing.assert_allclose(fed, cen, rtol=1e-9, atol=1e-12)
    # a node's gradient on its own BatchNorm statistics is not a share of it: the federation of the statistics matters
    naive = sum(len(x) * central_gradient(flat, shapes, x, c, noise.rows(0, len(x)))[0] for x, c in zip(xs, ctxs))
    assert np.abs(naive / 16 - cen).max() > 1e-3


def whole_objective(flat, shapes, x, ctx, noise, n, node, g_dec_total, g_enc_total):
    """(∂/∂S₁ of L_ℓ + g_P₂·P₂_ℓ, d/dW of L_ℓ + g_P₂·P₂_ℓ + g_P₁·P₁_ℓ) by backward passes over one uncut graph,
    with the node's statistics S₁, S₂ as leaves: what ``NodeStep``'s staged phases 4 and 5 must give."""
    k, v = shapes.topics, shapes.vocabulary
    p = leaves(flat, shapes)
    x_t, ctx_t = torch.from_numpy(x), None if ctx is None else torch.from_numpy(ctx)
    mu_pre, lv_pre = encode(p, x_t, ctx_t, noise.keep_hidden)
    s1 = [tuple(t.detach().clone().requires_grad_(True) for t in layer) for layer in node.s1]
    dec_pre, (mu, lv) = decode_pre(p, batch_norm(mu_pre, s1[0]), batch_norm(lv_pre, s1[1]), noise)
    s2 = tuple(t.detach() for t in node.s2)
    loss = doc_losses(p, x_t, dec_pre, s2, mu, lv).sum() / n
    g_p2 = torch.from_numpy(pull_back(g_dec_total[:v], g_dec_total[v:], s2[0].numpy(), n))
    q4 = loss + (g_p2 * torch.cat([dec_pre.sum(0), (dec_pre ** 2).sum(0)])).sum()
    g_s1 = torch.autograd.grad(q4, [*s1[0], *s1[1]], retain_graph=True)
    g_p1 = torch.from_numpy(np.concatenate([
        pull_back(g_enc_total[2 * k * i:2 * k * i + k], g_enc_total[2 * k * i + k:2 * k * (i + 1)],
                  s1[i][0].detach().numpy(), n) for i in range(2)]))
    p1 = torch.cat([mu_pre.sum(0), (mu_pre ** 2).sum(0), lv_pre.sum(0), (lv_pre ** 2).sum(0)])
    return torch.cat(g_s1).numpy(), flat_gradient(q4 + (g_p1 * p1).sum(), p)


@pytest.mark.parametrize("context", [0, 6])
def test_the_staged_phases_give_the_whole_objectives_gradients(context):
    """Phases 4 and 5 differentiate each part of the graph once, from cut points; they must give what one
    backward pass over the uncut graph gives, and the decoder's part must be the flat vector's tail (what the
    node's two gradient exchanges rely on)."""
    from fedtopic.neural.sync_opt import decoder_size

    shapes = Shapes(vocabulary=30, topics=4, context=context)
    flat = init_params(shapes, np.random.default_rng(7))
    xs, ctxs = data(8, (6, 5), 30, context)
    noise = draw_noise(np.random.default_rng(9), 11, 4)
    rows = [noise.rows(0, 6), noise.rows(6, 11)]
    nodes = [NodeStep(flat, shapes, x, c, r, 11) for x, c, r in zip(xs, ctxs, rows)]
    enc = sum(node.sums_encoder() for node in nodes)
    dec = sum(node.sums_decoder(enc) for node in nodes)
    g_dec = sum(node.grad_decoder_stats(dec) for node in nodes)
    backs = [node.grad_encoder_stats(g_dec) for node in nodes]
    g_enc = sum(g for g, _ in backs)
    tail = decoder_size(shapes)
    assert tail == 4 * 30 + 4
    for node, x, c, r, (g_stats, g_decoder) in zip(nodes, xs, ctxs, rows, backs):
        want_stats, want = whole_objective(flat, shapes, x, c, r, 11, node, g_dec, g_enc)
        head = node.gradient(g_enc)
        assert head.shape == (shapes.size - tail,) and g_decoder.shape == (tail,)
        np.testing.assert_allclose(g_stats, want_stats, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(np.concatenate([head, g_decoder]), want, rtol=1e-12, atol=1e-15)
        assert np.abs(g_decoder).max() > 0 and np.abs(head).max() > 0


@pytest.mark.parametrize("context", [0, 6])
def test_one_hundred_adam_steps_stay_within_1e_5(context):
    shapes = Shapes(vocabulary=25, topics=3, context=context)
    w_fed = w_cen = init_params(shapes, np.random.default_rng(3))
    adam_fed, adam_cen = Adam(shapes.size), Adam(shapes.size)
    run_fed = run_cen = initial_running(shapes)
    rng = np.random.default_rng(4)
    for step in range(100):
        sizes = (int(rng.integers(2, 6)), int(rng.integers(2, 6)), int(rng.integers(2, 6)))
        xs, ctxs = data(step + 10, sizes, 25, context)
        noise = draw_noise(np.random.default_rng([5, step]), sum(sizes), 3)
        g_fed, s_fed = federated_gradient(w_fed, shapes, xs, ctxs, noise)
        g_cen, s_cen = central_gradient(w_cen, shapes, np.vstack(xs), None if not context else np.vstack(ctxs), noise)
        w_fed, w_cen = adam_fed.step(w_fed, g_fed), adam_cen.step(w_cen, g_cen)
        run_fed = update_running(run_fed, s_fed, sum(sizes))
        run_cen = update_running(run_cen, s_cen, sum(sizes))
    assert np.abs(w_fed - w_cen).max() < 1e-5 and np.abs(w_fed - init_params(shapes, np.random.default_rng(3))).max() > 1e-2
    for a, b in zip((run_fed.mu, run_fed.lv, run_fed.dec), (run_cen.mu, run_cen.lv, run_cen.dec)):
        np.testing.assert_allclose(a[0].numpy(), b[0].numpy(), atol=1e-8)
        np.testing.assert_allclose(a[1].numpy(), b[1].numpy(), atol=1e-8)


def test_adam_kernel_equals_the_numpy_formulas_bit_for_bit():
    """The one-pass kernel against the eight-pass numpy reference (what Adam.step computed before it)."""
    rng = np.random.default_rng(5)
    n, lr, b1, b2, eps = 10_001, 2e-3, 0.99, 0.99, 1e-8
    w = rng.standard_normal(n)
    m_ref, v_ref = np.zeros(n), np.zeros(n)
    ours = Adam(n)
    w_ref = w.copy()
    for t in range(1, 8):
        g = rng.standard_normal(n) * 10.0 ** rng.integers(-12, 3, n)  # gradients over 15 orders of magnitude
        m_ref = b1 * m_ref + (1 - b1) * g
        v_ref = b2 * v_ref + (1 - b2) * g * g
        w_ref = w_ref - lr * (m_ref / (1 - b1 ** t)) / (np.sqrt(v_ref / (1 - b2 ** t)) + eps)
        w = ours.step(w, g)
        assert np.array_equal(w, w_ref) and np.array_equal(ours.m, m_ref) and np.array_equal(ours.v, v_ref)


def test_adam_on_gradient_parts_equals_adam_on_the_joined_gradient_bit_for_bit():
    rng = np.random.default_rng(6)
    n = 1_001
    whole, parted = Adam(n), Adam(n)
    w_whole = w_parted = rng.standard_normal(n)
    for cut in (0, 1, 400, n):
        g = rng.standard_normal(n)
        w_whole, w_parted = whole.step(w_whole, g), parted.step_parts(w_parted, [g[:cut], g[cut:]])
        assert np.array_equal(w_whole, w_parted) and np.array_equal(whole.m, parted.m)
        assert np.array_equal(whole.v, parted.v) and whole.t == parted.t
    with pytest.raises(ValueError, match="gradient parts"):
        parted.step_parts(w_parted, [g[:5]])


def test_adam_on_float32_parts_is_adam_on_them_widened():
    """A sum carried in float32 goes to Adam as it is; the kernel widens each value exactly, so W and the moments
    are bit for bit those of the step on the widened parts."""
    rng = np.random.default_rng(5)
    n = 1_000
    wide, narrow = Adam(n), Adam(n)
    w_wide = w_narrow = rng.standard_normal(n)
    for _ in range(4):
        g = rng.standard_normal(n).astype(np.float32)
        w_wide = wide.step_parts(w_wide, [g[:300].astype(np.float64), g[300:].astype(np.float64)])
        w_narrow = narrow.step_parts(w_narrow, [g[:300], g[300:]])
        assert np.array_equal(w_wide, w_narrow)
    assert np.array_equal(wide.m, narrow.m) and np.array_equal(wide.v, narrow.v)


def test_adam_matches_torch_optim_adam():
    rng = np.random.default_rng(0)
    w = rng.standard_normal(7)
    t = torch.tensor(w.copy(), requires_grad=True)
    opt = torch.optim.Adam([t], lr=2e-3, betas=(0.99, 0.99))
    ours = Adam(7)
    for _ in range(5):
        g = rng.standard_normal(7)
        t.grad = torch.tensor(g)
        opt.step()
        w = ours.step(w, g)
    np.testing.assert_allclose(w, t.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_evaluation_mode_is_without_dropout():
    """Evaluation (validation loss, θ of new documents) passes the hidden layer and θ through unscaled, as a
    dropout layer in eval mode does: inverted dropout's 1/(1 − p) belongs to training only."""
    shapes = Shapes(vocabulary=12, topics=3, context=5)
    p = unflatten(torch.from_numpy(init_params(shapes, np.random.default_rng(1))), shapes)
    rng = np.random.default_rng(2)
    x, ctx = torch.from_numpy(rng.poisson(0.5, (4, 12)).astype(float)), torch.from_numpy(rng.standard_normal((4, 5)))
    mu_pre, lv_pre = encode(p, x, ctx, None)
    softplus = torch.nn.functional.softplus
    hidden = softplus(softplus(torch.cat([x, ctx @ p["adapt_w"].T + p["adapt_b"]], dim=1) @ p["in_w"].T + p["in_b"])
                      @ p["h1_w"].T + p["h1_b"])
    torch.testing.assert_close(mu_pre, hidden @ p["mu_w"].T)
    torch.testing.assert_close(lv_pre, hidden @ p["lv_w"].T)
    dec, _ = decode_pre(p, mu_pre, lv_pre, draw_noise(rng, 4, 3, training=False))
    torch.testing.assert_close(dec, torch.softmax(mu_pre, dim=1) @ p["beta"])
