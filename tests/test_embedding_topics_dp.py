"""Distributed DP of ``fed-embedding-topics`` (issue 63): the accountant against dp-accounting, σ calibrated to the
asked ε, the releases' sums decoded exactly up to noise of the stated deviation, an audit that a canary
document's keyword cannot be told apart beyond the accountant's ε (and that catches the release without its
noise), a simulated consortium under mask that reports ε per party, one-line refusals."""

from __future__ import annotations

import json
import math

import dp_accounting
import numpy as np
import pytest
import scipy.sparse as sp
from _texts import theme_texts, write_jsonl
from dp_accounting.rdp import rdp_privacy_accountant as dpa
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.algorithms.embedding_topics import dp as D
from fedtopic.cli.main import main
from fedtopic.privacy.audit import run_scores, threshold_audit
from fedtopic.privacy.rdp import DEFAULT_ORDERS

MECH = D.EmbeddingDP(epsilon=1.0, delta=1e-5, words=4, candidates=10, min_contributors=None,
                     max_documents=1000)


@settings(max_examples=15, deadline=None)
@given(st.floats(2.0, 60.0), st.integers(1, 12), st.integers(2, 10), st.integers(10, 5000))
def test_the_accountant_is_dp_accountings_gaussian_plus_the_integer_term(sigma, rounds, parties, cells):
    """Every release's Gaussian part composes as dp-accounting composes the Gaussian mechanism at the same
    variance; Skellam's integer term (Thm. 3.5) keeps ours above it, and within 2 % at these noise levels."""
    plan = D.plan(sigma, cells, cells + 7, 2 * cells, rounds, parties)
    ours = D.spent(parties, plan, 1e-5)
    acc = dpa.RdpAccountant(list(DEFAULT_ORDERS))
    for c, n, s in plan:
        variance = 2.0 * n * D.share_lambda(s, D.SCALE, parties)
        acc.compose(dp_accounting.GaussianDpEvent(math.sqrt(variance) / D.sensitivities(c)[1]))
    theirs = acc.get_epsilon(1e-5)
    assert theirs <= ours <= theirs * 1.02 + 1e-9, (ours, theirs)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 8.0])
def test_sigma_is_the_smallest_noise_that_spends_the_asked_epsilon(epsilon):
    sigma = D.calibrate(epsilon, 1e-5, 3, 20 * 384, 5000, 20 * 1000 + 20, 5)
    assert D.spent(3, D.plan(sigma, 20 * 384, 5000, 20 * 1020, 5, 3), 1e-5) <= epsilon
    assert D.spent(3, D.plan(sigma * 0.99, 20 * 384, 5000, 20 * 1020, 5, 3), 1e-5) > epsilon


@settings(max_examples=20, deadline=None)
@given(st.integers(2, 6), st.integers(1, 40), st.integers(0, 2**31 - 1))
def test_the_summed_releases_decode_to_the_summed_parts_plus_noise_of_the_stated_deviation(parties, cells, seed):
    rng = np.random.default_rng(seed)
    sigma = 3.0
    parts = [rng.uniform(-20, 20, cells) for _ in range(parties)]
    total = sum(D.encode(p, sigma, parties, MECH, np.random.default_rng([seed, i])) for i, p in enumerate(parts))
    assert total.min() >= 0 and total.max() <= parties * MECH.max_value(sigma, parties)
    noisy = D.decode(total, parties, sigma, parties, MECH)
    deviation = D.noise_deviation(sigma, parties, parties)
    assert deviation == pytest.approx(sigma)  # every planned share came: the central noise is σ a cell
    assert np.all(np.abs(noisy - sum(parts)) < 8 * deviation + parties / D.SCALE)


def _unit(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    x = rng.standard_normal(shape)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_a_documents_part_has_norm_at_most_one():
    counts = sp.csr_matrix(np.random.default_rng(0).poisson(3.0, size=(30, 12)).astype(np.float64))
    x = _unit(np.random.default_rng(1), (30, 7))
    chosen = D.keywords(counts, 4, x, _unit(np.random.default_rng(3), (12, 7)))
    labels = np.random.default_rng(2).integers(0, 3, 30)
    words = np.array([0, 2, 3, 5, 8, 11])
    for j in range(30):
        one = np.zeros(30, bool)
        one[j] = True
        assert np.linalg.norm(D.word_parts(chosen, labels, one, words, 8, 3, 4)) <= 1.0 + 1e-12
        assert np.linalg.norm(D.vocabulary_parts(chosen, one, 4)) <= 1.0 + 1e-12
        assert np.linalg.norm(D.lloyd_parts(x[j:j + 1], labels[j:j + 1], 3)) <= 1.0 + 1e-12


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 25), st.integers(2, 15), st.integers(1, 6), st.integers(0, 2**31 - 1))
def test_keywords_are_a_documents_own_words_nearest_its_embedding(n_docs, n_words, m, seed):
    """Against a direct loop: each document's min(m, distinct) words of highest cosine, or without embeddings of
    highest count (ties: the lower id)."""
    rng = np.random.default_rng(seed)
    dense = rng.poisson(0.6, size=(n_docs, n_words)).astype(np.float64)
    x, vectors = _unit(rng, (n_docs, 5)), _unit(rng, (n_words, 5))
    chosen = D.keywords(sp.csr_matrix(dense), m, x, vectors).toarray()
    frequent = D.keywords(sp.csr_matrix(dense), m).toarray()
    for j in range(n_docs):
        own = np.flatnonzero(dense[j])
        expect = sorted(own, key=lambda w: (-float(vectors[w] @ x[j]), w))[:m]
        assert sorted(np.flatnonzero(chosen[j])) == sorted(expect) and set(chosen[j]) <= {0.0, 1.0}
        most = sorted(own, key=lambda w: (-dense[j, w], w))[:m]
        assert sorted(np.flatnonzero(frequent[j])) == sorted(most) and set(frequent[j]) <= {0.0, 1.0}


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 20), st.integers(3, 12), st.integers(1, 4), st.integers(0, 2**31 - 1))
def test_the_words_release_counts_each_clusters_keywords_among_the_candidates(n_docs, n_words, k, seed):
    """word_parts then noisy_class_counts (without noise) give the class keyword counts, direct, restricted to
    the candidates; the vocabulary release's totals are every keyword's uses, and the candidates their N largest."""
    rng = np.random.default_rng(seed)
    dense = rng.poisson(0.8, size=(n_docs, n_words)).astype(np.float64)
    chosen = D.keywords(sp.csr_matrix(dense), 3, _unit(rng, (n_docs, 4)), _unit(rng, (n_words, 4)))
    labels, keep = rng.integers(0, k, n_docs), rng.random(n_docs) < 0.8
    marks = chosen.toarray()
    totals = D.vocabulary_parts(chosen, keep, 3) * math.sqrt(3)
    assert np.allclose(totals, marks[keep].sum(axis=0))
    words = D.candidates(totals, n_words // 2, 0.2)
    above = np.sort(totals)[::-1][:n_words // 2] > 0.8
    assert len(words) == max(int(above.sum()), min(10, n_words // 2)) and np.all(np.diff(words) > 0)
    assert totals[words].min() >= np.delete(totals, words).max(initial=-1.0)
    width = n_words // 2 + 2
    parts = D.word_parts(chosen, labels, keep, words, width, k, 3)
    assert not parts[:k * width].reshape(k, width)[:, len(words):].any()
    counts, sizes = D.noisy_class_counts(parts, k, words, width, n_words, 3)
    expect = np.zeros((k, n_words))
    for j in np.flatnonzero(keep):
        expect[labels[j], words] += marks[j, words]
    assert np.allclose(counts, expect) and np.allclose(sizes, np.bincount(labels[keep], minlength=k))


def _canary_release(with_canary: bool, sigma: float):
    """The vocabulary release of three parties (V = 10) whose 40 documents never use word 9; with the canary, one
    more document of party 1 names only word 9. Score: word 9's decoded total."""
    rng0 = np.random.default_rng(7)
    dense = rng0.poisson(2.0, size=(40, 10)).astype(np.float64)
    dense[:, 9] = 0
    parties = [dense[:14], dense[14:27], dense[27:]]
    if with_canary:
        canary = np.zeros((1, 10))
        canary[0, 9] = 1.0
        parties[0] = np.vstack([parties[0], canary])

    def score(seed: int) -> float:
        total = 0
        for i, rows in enumerate(parties):
            chosen = D.keywords(sp.csr_matrix(rows), 4)
            parts = D.vocabulary_parts(chosen, np.ones(len(rows), bool), 4)
            total = total + D.encode(parts, sigma, 3, MECH, np.random.default_rng([seed, i]))
        return float(D.decode(total, 3, sigma, 3, MECH)[9])
    return score


def test_a_canary_documents_keyword_is_hidden_as_the_accountant_says_and_caught_without_noise():
    sigma = D.calibrate(1.0, 1e-5, 3, 3 * 8, 10, 3 * 10 + 3, 5)
    one_release = D.spent(3, [(10, 3, sigma)], 1e-5)
    audit = threshold_audit(run_scores(_canary_release(True, sigma), 300, 1),
                            run_scores(_canary_release(False, sigma), 300, 10_001), delta=1e-5)
    assert audit.epsilon_lower_bound <= one_release, (audit, one_release)
    broken = threshold_audit(run_scores(_canary_release(True, 1e-3), 300, 1),
                             run_scores(_canary_release(False, 1e-3), 300, 10_001), delta=1e-5)
    assert broken.epsilon_lower_bound > 3.0, broken


def _simulate(tmp_path, *extra: str) -> tuple[int, dict]:
    write_jsonl(tmp_path / "d.jsonl", theme_texts(240, seed=3))
    code = main(["simulate", "--algorithm", "fed-embedding-topics", "--corpus", str(tmp_path / "d.jsonl"),
                 "--parties", "3", "-k", "4", "--iterations", "3", "--opt", "embedding=hashed",
                 "--opt", "dp.distributed=true", "--out", str(tmp_path / "run"), "--format", "json", *extra])
    summary = tmp_path / "run" / "summary.json"
    return code, json.loads(summary.read_text()) if summary.exists() else {}


def test_a_masked_consortium_under_dp_reports_what_each_party_spent(tmp_path, capsys):
    """(ε = 50: 240 documents are too few for four clusters to rise above the noise at small ε; the warning
    below is what a user then reads.)"""
    code, summary = _simulate(tmp_path, "--protection", "mask", "--opt", "dp.epsilon=50")
    assert code == 0
    spent = summary["privacy"]
    assert sorted(spent) == ["p1", "p2", "p3"]
    for party in spent.values():
        assert party["releases"] == 4 + 2 and party["contributors"] == [3] * 6
        assert 49 < party["epsilon"] <= 50 and party["delta"] == 1e-5
    history = [json.loads(line) for line in (tmp_path / "run" / "history" / "p1.jsonl").read_text().splitlines()]
    eps = [row["epsilon"] for row in history if row.get("epsilon") is not None]
    assert len(eps) == 6 and eps == sorted(eps) and eps[-1] == pytest.approx(spent["p1"]["epsilon"])
    assert summary["topics"] == 4 and summary["parties_hold_same_model"] and "warnings" not in summary
    assert summary["npmi"] > 0


def test_too_few_documents_for_the_noise_say_so_in_one_line(tmp_path, capsys):
    code, summary = _simulate(tmp_path, "--protection", "mask", "--opt", "dp.epsilon=0.5")
    err = capsys.readouterr().err
    assert code == 0 and summary["topics"] < 4
    line = [x for x in err.splitlines() if x.startswith("warning:")]
    assert len(line) == 1 and "a larger dp.epsilon" in line[0] and summary["warnings"] == [line[0][9:]], err


@pytest.mark.parametrize(("extra", "says"), [
    ([], "dp.distributed needs a protection under which the aggregator sees only the sum"),
    (["--protection", "mask", "--opt", "dp.max_documents=10"], "more than dp.max_documents=10"),
])
def test_dp_refusals_are_one_line(tmp_path, capsys, extra, says):
    code, _ = _simulate(tmp_path, *extra)
    err = capsys.readouterr().err.strip()
    assert code != 0 and says in err and "Traceback" not in err, err


def test_train_refuses_dp_in_one_line(tmp_path, capsys):
    write_jsonl(tmp_path / "d.jsonl", theme_texts(40, seed=1))
    assert main(["train", "--algorithm", "fed-embedding-topics", "--corpus", str(tmp_path / "d.jsonl"), "-k", "2",
                 "--iterations", "2", "--opt", "embedding=hashed", "--opt", "dp.distributed=true",
                 "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert "train is the exact pooled twin" in err and "\n" not in err, err


@pytest.mark.xdist_group("agg-embedding_topics_dp")
def test_node_processes_under_dp_hold_one_model_and_report_what_each_spent(tmp_path):
    """Three `fedtopic node run` processes through a real aggregator under mask with distributed DP: every party
    ends with the same topics, and each reports the ε its documents spent, in its summary and history."""
    from _embedding_nodes import run_embedding_nodes

    options = {"embedding": "hashed", "dp.distributed": True, "dp.epsilon": 50.0}
    config, cfg, outs = run_embedding_nodes(tmp_path, options, iterations=3)
    state = config.parent / "state"
    phis = [np.load(state / p / "model" / "model.npz")["phi"] for p in cfg.party_ids]
    assert all(np.array_equal(phis[0], p) for p in phis[1:])
    for p, out in outs.items():
        summary = json.loads(out)
        spent = summary["privacy"][p]
        assert summary["protection"] == "mask" and 49 < spent["epsilon"] <= 50 and spent["releases"] == 4 + 2
        history = [json.loads(line) for line in (state / p / "history.jsonl").read_text().splitlines()]
        eps = [row["epsilon"] for row in history if row.get("epsilon") is not None]
        assert len(eps) == 6 and eps == sorted(eps) and eps[-1] == pytest.approx(spent["epsilon"])


def test_a_words_hashed_embedding_is_that_of_a_document_of_that_word_alone():
    """embed_words puts the vocabulary in the documents' space: word w's vector is the embedding of the one-word
    document "w" (hashed: its row of the seeded projection), so a cosine to a document embedding means one thing."""
    from fedtopic.algorithms.embedding_topics.embeddings import embed, embed_words
    from fedtopic.corpus.types import Corpus

    vocab = tuple(f"w{i}" for i in range(9))
    alone = Corpus(words=np.arange(9, dtype=np.int32), doc_ptr=np.arange(10, dtype=np.int64), vocab=vocab)
    np.testing.assert_allclose(embed_words(vocab, "hashed", 4), embed(alone, "hashed", 4), atol=1e-12)
    assert not np.allclose(embed_words(vocab, "hashed", 5), embed_words(vocab, "hashed", 4))
