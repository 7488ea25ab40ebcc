"""``fed-embedding-topics`` (issue 63): c-TF-IDF against a direct form of BERTopic's formula, federated Lloyd
rounds equal to the pooled ones over random partitions, the merge into K topics, the centralised twin bit-equal to
a federated run under none and to fixed-point precision under mask, node processes under mask, one-line errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from _texts import theme_texts, write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.algorithms.embedding_topics.clustering import (
    assign,
    lloyd_step,
    lloyd_update,
    moment_update,
    starts,
    unit_rows,
)
from fedtopic.algorithms.embedding_topics.ctfidf import c_tf_idf, merge_plan
from fedtopic.cli.main import main


def _ctfidf_by_hand(x: np.ndarray) -> np.ndarray:
    """BERTopic's ClassTfidfTransformer, cell by cell: tf (L1 per class) · log(1 + int(mean words per class) / f_t)."""
    c, v = x.shape
    average = int(sum(x[i].sum() for i in range(c)) / c)
    out = np.zeros((c, v))
    for i in range(c):
        words = x[i].sum()
        for t in range(v):
            f = sum(x[j, t] for j in range(c))
            if words > 0 and f > 0:
                out[i, t] = x[i, t] / words * math.log(1 + average / f)
    return out


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 12), st.integers(0, 2**31 - 1))
def test_c_tf_idf_is_bertopics_formula(classes, words, seed):
    x = np.random.default_rng(seed).poisson(1.5, size=(classes, words)) * \
        (np.random.default_rng(seed + 1).random((classes, words)) < 0.7)
    np.testing.assert_allclose(c_tf_idf(x), _ctfidf_by_hand(x), rtol=1e-12, atol=0)


def _pooled_reference(x: np.ndarray, k: int, rounds: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Spherical k-means on all embeddings in one place, written out loop by loop."""
    c = starts(moment_update(x), x.shape[1], k, seed)
    for _ in range(rounds):
        labels = np.array([int(np.argmax([float(row @ cj) for cj in c])) for row in x])
        fresh = c.copy()
        for j in range(k):
            members = x[labels == j]
            if len(members):
                s = members.sum(axis=0)
                fresh[j] = s / np.linalg.norm(s)
        c = fresh
    return c, assign(x, c)


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 5), st.integers(2, 6), st.integers(0, 2**31 - 1))
def test_federated_lloyd_rounds_equal_the_pooled_ones_over_random_partitions(parties, k, seed):
    rng = np.random.default_rng(seed)
    centres = unit_rows(rng.standard_normal((k, 8)))
    x = unit_rows(centres[rng.integers(0, k, 120)] + 0.3 * rng.standard_normal((120, 8)))
    owner = rng.integers(0, parties, len(x))
    parts = [x[owner == p] for p in range(parties)]
    c = starts(sum(moment_update(p) for p in parts), 8, k, seed)
    for _ in range(6):
        c, _ = lloyd_step(sum(lloyd_update(p, c) for p in parts), c)
    reference, labels = _pooled_reference(x, k, 6, seed)
    np.testing.assert_allclose(c, reference, atol=1e-9)
    assert np.array_equal(assign(x, c), labels)


def test_merging_joins_the_most_similar_clusters_and_numbers_topics_by_size():
    weights = np.array([[5.0, 0, 0, 0], [4.0, 1, 0, 0], [0, 0, 3.0, 0], [0, 0, 2.9, 0.2], [0, 0, 0, 1.0]])
    sizes = np.array([10, 30, 5, 5, 1])
    plan = merge_plan(weights, sizes, 3)
    assert plan[0] == plan[1] == 0 and plan[2] == plan[3] == 1 and plan[4] == 2  # 40, 10, 1 documents
    assert list(merge_plan(weights, sizes, 5)) == [1, 0, 2, 3, 4]  # no merge: renumbered by size
    assert merge_plan(weights, np.array([10, 30, 0, 5, 1]), 3)[2] == merge_plan(weights, sizes, 3)[3]


def _run(tmp_path, command: str, name: str, *extra: str) -> tuple[dict, np.ndarray]:
    corpus = tmp_path / "docs.jsonl"
    if not corpus.exists():
        write_jsonl(corpus, theme_texts(240, seed=4))
    args = [command, "--algorithm", "fed-embedding-topics", "--corpus", str(corpus), "--parties", "3", "-k", "4",
            "--iterations", "8", "--opt", "embedding=hashed", "--opt", "clusters=8", "--opt", "outlier_cosine=0.7",
            "--out", str(tmp_path / name),
            "--format", "json", *extra]
    assert main(args) == 0
    with np.load(tmp_path / name / "model.npz") as npz:
        return json.loads((tmp_path / name / "summary.json").read_text()), npz["phi"]


def test_the_twin_equals_the_federated_run_and_mask_gives_the_same_topics(tmp_path, capsys):
    twin, phi_twin = _run(tmp_path, "train", "twin")
    plain, phi_plain = _run(tmp_path, "simulate", "plain")
    masked, phi_masked = _run(tmp_path, "simulate", "masked", "--protection", "mask")
    assert np.array_equal(phi_twin, phi_plain)  # summed statistics: the federated rounds are the pooled ones
    np.testing.assert_allclose(phi_masked, phi_plain, atol=1e-12)  # fixed point moves bits, not assignments
    assert phi_plain.shape[0] == 4 and plain["parties_hold_same_model"] and plain["rounds"] == 8 + 2
    assert masked["protection"] == "mask" and plain["npmi"] > 0 and 0 < plain["topic_diversity"] <= 1
    theta = np.load(tmp_path / "plain" / "theta.npy")
    np.testing.assert_allclose(theta.sum(axis=1), 1.0)
    assert twin["clusters"] == 8 and abs(twin["npmi"] - plain["npmi"]) < 1e-12
    # outliers (cosine to their centroid below 0.7): in θ, out of the c-TF-IDF counts, counted alike
    assert 0 < twin["outlier_documents"] == plain["outlier_documents"] == masked["outlier_documents"] < 240
    # pyLDAvis: Φ from c-TF-IDF, θ the soft membership, the training documents' lengths and term frequencies
    assert main(["export", "pyldavis", str(tmp_path / "plain"), "--out", str(tmp_path / "vis" / "vis.json")]) == 0
    vis = json.loads((tmp_path / "vis" / "vis.json").read_text())
    assert len(vis["topic_term_dists"]) == 4 and len(vis["doc_lengths"]) == theta.shape[0]
    assert sum(vis["term_frequency"]) == sum(vis["doc_lengths"])


@pytest.mark.parametrize(("extra", "says"), [
    (["--opt", "clusters=3"], "clusters=3 is below K=4"),
    (["--opt", "temperature=0"], "temperature must be > 0"),
    (["--opt", "clusters=100000"], "100000 clusters need at least as many non-empty documents"),
])
def test_bad_input_is_one_line(tmp_path, capsys, extra, says):
    """(An unknown embedding is refused by the option's choices: test_algorithms_layer's contract.)"""
    write_jsonl(tmp_path / "d.jsonl", theme_texts(40, seed=1))
    assert main(["train", "--algorithm", "fed-embedding-topics", "--corpus", str(tmp_path / "d.jsonl"), "-k", "4",
                 "--iterations", "2", "--opt", "embedding=hashed", "--out", str(tmp_path / "x"), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err and "Traceback" not in err, err


@pytest.mark.xdist_group("agg-embedding_topics")
def test_node_processes_under_mask_end_with_the_simulated_model(tmp_path):
    """Three `fedtopic node run` processes through a real aggregator under mask: each ends with the topics of
    the one-process twin of the same consortium."""
    from _embedding_nodes import run_embedding_nodes

    options = {"embedding": "hashed", "clusters": 8}
    config, cfg, outs = run_embedding_nodes(tmp_path, options, iterations=6)
    phis = [np.load(config.parent / "state" / p / "model" / "model.npz")["phi"] for p in cfg.party_ids]
    assert all(np.array_equal(phis[0], p) for p in phis[1:])
    assert all(json.loads(o)["protection"] == "mask" for o in outs.values())
    from fedtopic.algorithms.embedding_topics.options import settings_of
    from fedtopic.algorithms.embedding_topics.twin import _phi, pooled_rounds
    from fedtopic.algorithms.registry import get_algorithm

    algo = get_algorithm("fed-embedding-topics")
    spec = algo.spec(4, 6, cfg.algorithm.seed, options)
    from fedtopic.node.party_data import load_party_data

    parts = [load_party_data(cfg, p).train for p in cfg.party_ids]
    twin = pooled_rounds("fed-embedding-topics", parts, settings_of(spec))
    np.testing.assert_allclose(phis[0], _phi(twin.extra["weights"]), atol=1e-12)


def test_infer_gives_new_documents_their_soft_membership(tmp_path, capsys):
    """`infer` on a fed-embedding-topics run embeds the new texts as the parties did and gives their membership of
    the topic centroids (not a Gibbs fold-in on Φ); the same θ as ``TopicModel.transform``."""
    from fedtopic.algorithms.model import TopicModel

    _run(tmp_path, "train", "twin")
    capsys.readouterr()
    texts = ["bank inflation investor price budget trader", "striker referee stadium keeper team league"]
    assert main(["infer", str(tmp_path / "twin"), "--text", texts[0], "--text", texts[1], "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    theta = np.array([r["theta"] for r in rows])
    np.testing.assert_allclose(theta.sum(axis=1), 1.0, atol=1e-5)
    assert int(np.argmax(theta[0])) != int(np.argmax(theta[1]))
    model = TopicModel.load(tmp_path / "twin")
    np.testing.assert_allclose(model.transform(texts), theta, atol=1e-6)
    # no Gibbs fold-in: the fold-in's seed and sweeps change nothing
    assert main(["infer", str(tmp_path / "twin"), "--text", texts[0], "--text", texts[1], "--seed", "5",
                 "--iterations", "7", "--format", "json"]) == 0
    assert np.array_equal(np.array([r["theta"] for r in json.loads(capsys.readouterr().out)]), theta)


def test_a_second_run_takes_every_embedding_from_the_cache(tmp_path, capsys):
    """minilm: what one run embedded (texts no run has seen: a fresh token each), the next takes from the cache;
    round 0's history says how many came from where."""
    import secrets

    from fedtopic.corpus.readers import read_corpus
    from fedtopic.neural.sentence_embeddings import embed_corpus

    texts = [f"{t} {secrets.token_hex(6)}" for t in theme_texts(60, seed=8)]
    write_jsonl(tmp_path / "d.jsonl", texts)
    first: dict[str, int] = {}
    embed_corpus(read_corpus(tmp_path / "d.jsonl"), counts=first)
    assert first == {"embedded": 60, "cached": 0}
    assert main(["simulate", "--algorithm", "fed-embedding-topics", "--corpus", str(tmp_path / "d.jsonl"),
                 "--parties", "2", "-k", "3", "--iterations", "2", "--out", str(tmp_path / "run"),
                 "--format", "json"]) == 0
    rows = [json.loads((tmp_path / "run" / "history" / f"{p}.jsonl").read_text().splitlines()[0])["extra"]
            for p in ("p1", "p2")]
    assert all(r["embedded"] == 0 and r["cached"] > 0 for r in rows), rows
