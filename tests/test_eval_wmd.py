"""Word Mover's Distance between topic descriptions (exact transport) and AMWMD (gFedNTM Eq. 7), on small
hand-made word vectors where the optimum is known, and against a brute-force search over transport plans."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.errors import EvalError
from fedtopic.eval.embeddings import WordVectors
from fedtopic.eval.wmd import amwmd, earth_movers, topic_wmd


def _vectors(points: dict[str, tuple[float, float]]) -> WordVectors:
    v = np.array(list(points.values()), dtype=np.float32)
    return WordVectors(tuple(points), v / np.linalg.norm(v, axis=1, keepdims=True))


VEC = _vectors({"cat": (1, 0), "dog": (0.9, 0.1), "bank": (0, 1), "money": (0.1, 0.9), "tree": (1, 1)})


def test_identical_descriptions_are_at_zero_and_the_nearest_words_are_matched():
    assert topic_wmd(["cat", "bank"], ["bank", "cat"], VEC) == pytest.approx(0.0, abs=1e-12)
    d = topic_wmd(["cat", "bank"], ["dog", "money"], VEC)  # cat↔dog and bank↔money, not the crossing
    u = VEC.unit.astype(np.float64)
    expected = (np.linalg.norm(u[0] - u[1]) + np.linalg.norm(u[2] - u[3])) / 2
    assert d == pytest.approx(expected, rel=1e-9)
    assert topic_wmd(["cat", "unknown"], ["cat"], VEC) == pytest.approx(0.0, abs=1e-12)  # no vector: dropped
    with pytest.raises(EvalError):
        topic_wmd(["unknown"], ["cat"], VEC)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 4), m=st.integers(1, 4), seed=st.integers(0, 10_000))
def test_exact_transport_matches_brute_force_over_vertex_plans(n, m, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(n, 3)), rng.normal(size=(m, 3))
    cost = np.linalg.norm(a[:, None] - b[None], axis=2)
    # with uniform weights, an optimal plan on a common grid of 1/(n·m) units: every assignment of n·m unit
    # masses, each row holding m units and each column n units, is a vertex candidate; search them exhaustively
    # for tiny sizes through the equivalent assignment problem on replicated points
    big_a, big_b = np.repeat(a, m, axis=0), np.repeat(b, n, axis=0)
    big = np.linalg.norm(big_a[:, None] - big_b[None], axis=2)
    if n * m <= 6:
        best = min(big[np.arange(n * m), list(p)].sum() for p in itertools.permutations(range(n * m))) / (n * m)
    else:
        from scipy.optimize import linear_sum_assignment
        r, c = linear_sum_assignment(big)
        best = big[r, c].sum() / (n * m)
    assert earth_movers(a, b) == pytest.approx(best, rel=1e-9, abs=1e-12)
    assert earth_movers(a, b) == pytest.approx(earth_movers(b, a), rel=1e-9, abs=1e-12)
    assert earth_movers(a, b) <= cost.max() + 1e-12


def test_amwmd_is_zero_for_the_own_model_and_averages_the_nearest_topics():
    own = [["cat", "dog"], ["bank", "money"]]
    assert amwmd(own, own, VEC) == pytest.approx(0.0, abs=1e-12)
    other = [["cat", "dog"], ["tree"]]
    expected = (0.0 + min(topic_wmd(["bank", "money"], t, VEC) for t in other)) / 2
    assert amwmd(own, other, VEC) == pytest.approx(expected, rel=1e-12)
    assert amwmd(own, own + other, VEC) <= amwmd(own, other, VEC)  # more topics can only get nearer


@pytest.mark.slow
def test_gfedntm_real_quick_form_writes_the_amwmd_matrix(tmp_path, capsys):
    """`fedtopic experiment gfedntm-real --quick`: bbc-news's five labels as five nodes, CombinedTM per node and
    federated at two K, AMWMD of every node against every model (0 against its own)."""
    import json
    from pathlib import Path

    pytest.importorskip("torch")
    from fedtopic.cli.main import main

    assert main(["experiment", "gfedntm-real", "--quick", "--max-vocabulary", "400", "--out", str(tmp_path / "r"),
                 "--format", "json"]) == 0
    s = json.loads(capsys.readouterr().out)
    matrix = s["amwmd"]
    assert s["vocabulary"] == 400  # the consensus cut (quick form 500, default 2,000 as contextualized-topic-models)
    assert list(matrix) == [f"node {i}" for i in range(1, 6)]
    assert all(set(row) == {*matrix, "federated K=4", "federated K=8"} for row in matrix.values())
    assert all(matrix[n][n] == 0.0 and all(v >= 0 for v in matrix[n].values()) for n in matrix)
    assert all(Path(p).is_file() for p in s["plots"])
