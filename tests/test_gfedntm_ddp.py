"""gFedNTM with distributed DP (DP-SGD of the per-document ProdLDA, Skellam shares under mask): each document's
gradient against a slow per-document reference, no coupling between a batch's documents, the clipped sum, the
model file, the audit of the DP-SGD release, and a run through the real aggregator whose summary says what each
node spent."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _texts import theme_texts, write_jsonl

from fedtopic.algorithms.dp_sgd import DPSGD, privacy
from fedtopic.cli.main import main

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.xdist_group("agg-gfedntm_ddp")


def _setup(context: int = 0, docs: int = 5):
    from fedtopic.neural.prodlda import Shapes, draw_noise, init_params

    rng = np.random.default_rng(4)
    shapes = Shapes(20, 3, context, "document")
    flat = init_params(shapes, rng)
    x = rng.poisson(0.7, (docs, 20)).astype(np.float64)
    ctx = rng.standard_normal((docs, context)) if context else None
    return shapes, flat, x, ctx, draw_noise(rng, docs, 3)


def _reference_gradient(shapes, flat, x, ctx, noise, j: int) -> np.ndarray:
    """Document j's gradient by autograd on that document alone."""
    from fedtopic.neural.prodlda import document_losses, flat_gradient, leaves

    p = leaves(flat.copy(), shapes)
    loss = document_losses(p, torch.from_numpy(x[j:j + 1]), None if ctx is None else torch.from_numpy(ctx[j:j + 1]),
                           noise.rows(j, j + 1)).sum()
    return flat_gradient(loss, p)


@pytest.mark.parametrize("context", [0, 4])
def test_each_documents_gradient_matches_autograd_on_that_document_alone(context):
    from fedtopic.neural.ntm_dp import per_document_gradients

    shapes, flat, x, ctx, noise = _setup(context)
    got = per_document_gradients(flat, shapes, x, ctx, noise)
    assert got.shape == (5, shapes.size)
    for j in range(5):
        assert np.allclose(got[j], _reference_gradient(shapes, flat, x, ctx, noise, j), rtol=1e-10, atol=1e-12)


def test_a_documents_loss_does_not_depend_on_the_rest_of_its_batch():
    from fedtopic.neural.prodlda import document_losses, unflatten

    shapes, flat, x, _, noise = _setup()
    p = {k: torch.from_numpy(v) for k, v in unflatten(flat, shapes).items()}
    batch = document_losses(p, torch.from_numpy(x), None, noise).numpy()
    alone = [float(document_losses(p, torch.from_numpy(x[j:j + 1]), None, noise.rows(j, j + 1))[0]) for j in range(5)]
    assert np.allclose(batch, alone, rtol=1e-12)
    x2 = x.copy()
    x2[1:] = 0.0  # the others change: document 0's loss does not
    assert float(document_losses(p, torch.from_numpy(x2), None, noise)[0]) == pytest.approx(batch[0], rel=1e-12)


def test_the_clipped_sum_clips_every_document_in_chunks(monkeypatch):
    import scipy.sparse as sp

    from fedtopic.neural import ntm_dp

    monkeypatch.setattr(ntm_dp, "CHUNK", 2)  # 5 documents: chunks 2, 2, 1
    shapes, flat, x, ctx, noise = _setup()
    refs = [_reference_gradient(shapes, flat, x, ctx, noise, j) for j in range(5)]
    clip = float(np.median([np.linalg.norm(g) for g in refs]))  # some clipped, some not
    want = sum(g * min(1.0, clip / np.linalg.norm(g)) for g in refs)
    got = ntm_dp.clipped_gradient_sum(flat, shapes, sp.csr_matrix(x), None, noise, clip)
    assert np.allclose(got, want, rtol=1e-10, atol=1e-12)
    assert np.linalg.norm(got) <= 5 * clip * (1 + 1e-12)


def test_the_per_document_model_survives_its_file_and_old_files_stay_batchnorm():
    from fedtopic.neural.ntm_model import model_from_network, network_arrays
    from fedtopic.neural.ntm_train import NTMModel
    from fedtopic.neural.prodlda import Shapes, initial_running

    shapes, flat, x, _, _ = _setup()
    model = NTMModel(shapes, flat, initial_running(shapes))
    back = model_from_network(network_arrays(model))
    assert back.shapes == shapes
    import scipy.sparse as sp

    theta = back.theta(sp.csr_matrix(x))
    assert np.allclose(theta, model.theta(sp.csr_matrix(x))) and np.allclose(theta.sum(axis=1), 1.0)
    batch = Shapes(20, 3)
    arrays = network_arrays(NTMModel(batch, np.zeros(batch.size), initial_running(batch)))
    assert arrays["shapes"].tolist() == [20, 3, 0] and model_from_network(arrays).shapes.norm == "batch"


def test_the_audit_holds_for_the_dp_sgd_release_and_catches_it_without_noise():
    from fedtopic.experiments.dp_audit import AuditSettings, audit_releases

    common = dict(sampling_rate=1.0, releases=3, runs=600, seed=2, distributed=3, mechanism="dp-sgd")
    honest = audit_releases(AuditSettings(noise_multiplier=2.0, **common))
    assert honest["holds"] and honest["epsilon_lower_bound"] <= honest["accountant_epsilon"]
    broken = audit_releases(AuditSettings(noise_multiplier=0.0, **common))
    assert broken["epsilon_lower_bound"] > honest["accountant_epsilon"]  # it would have failed the honest claim


def _simulate(tmp_path, corpus, name: str, *extra: str) -> int:
    return main(["simulate", "--algorithm", "gfedntm-prodlda", "--corpus", str(corpus), "--parties", "3", "-k", "3",
                 "--iterations", "2", "--opt", "dp.distributed=true", "--opt", "dp.sampling_rate=0.25",
                 *extra, "--out", str(tmp_path / name), "--format", "json"])


def test_gfedntm_with_distributed_dp_through_the_aggregator_reports_each_nodes_epsilon(tmp_path, capsys):
    corpus = write_jsonl(tmp_path / "d.jsonl", theme_texts(120, seed=3))
    assert _simulate(tmp_path, corpus, "run", "--protection", "mask") == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    spent = summary["privacy"]
    assert set(spent) == {"p1", "p2", "p3"} and summary["steps"] == 8  # 2 epochs of ⌈1/0.25⌉ steps
    model = np.load(tmp_path / "run" / "model.npz")
    assert model["net_shapes"].tolist()[3:] == [1]  # the per-document model
    cells = int(model["net_flat"].size) + 1  # the release: every weight's gradient and the count
    for p in spent.values():
        assert p["releases"] == 8 and p["contributors"] == [3] * 8 and p["planned_contributors"] == 3
        dp = DPSGD(p["noise_multiplier"], p["sampling_rate"], p["clip"], 1e-5, None, 4096)
        assert p["epsilon"] == pytest.approx(privacy(dp, [3] * 8, 3, cells).epsilon)
    assert np.isfinite(summary["npmi"]) and len(summary["loss"]) == 2
    capsys.readouterr()
    assert _simulate(tmp_path, corpus, "again", "--protection", "mask") == 0  # same seed, same model
    first, second = np.load(tmp_path / "run" / "model.npz"), np.load(tmp_path / "again" / "model.npz")
    assert np.array_equal(first["phi"], second["phi"])


def test_gfedntm_distributed_dp_is_refused_without_a_secure_sum(tmp_path, capsys):
    corpus = write_jsonl(tmp_path / "d.jsonl", theme_texts(60, seed=2))
    assert _simulate(tmp_path, corpus, "x", "--protection", "none") == 2
    err = capsys.readouterr().err
    assert "needs a protection under which the aggregator sees only the sum" in err and "Traceback" not in err
