"""`iftm-lda` end to end: simulate through the real aggregator (its topic-merge combiner is the master) with
heterogeneous K, train as one party alone, the combiner's validation, and bad input as one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _texts import THEMES, theme_texts, write_jsonl

from fedtopic.cli.main import main
from fedtopic.models.topic_merge import normalize_topics
from fedtopic.network.errors import InvalidMeta, InvalidPayload
from fedtopic.network.topic_merge import (
    TopicMergeCombiner,
    decode_global,
    encode_update,
)

pytestmark = pytest.mark.xdist_group("agg-iftm")
META = {"vocabulary": 8, "xi": 0.5, "top_words": 3, "max_topics": 4}


@pytest.mark.parametrize(("algorithm", "epsilon"), [("iftm-lda", "inf"), ("iftm-lda", "11"),
                                                     ("iftm-sentencelda", "inf"), ("iftm-sentencelda", "11")])
def test_simulate_through_the_aggregator_with_heterogeneous_parties(tmp_path, capsys, algorithm, epsilon):
    corpus = write_jsonl(tmp_path / "docs.jsonl", theme_texts(150, seed=4, sentence_length=4))
    out = tmp_path / "run"
    assert main(["simulate", "--algorithm", algorithm, "--corpus", str(corpus), "--parties", "3", "-k", "4",
                 "--iterations", "6", "--opt", "local_iterations=3", "--opt", f"epsilon={epsilon}",
                 "--opt", "party_topics=2,3,4", "--opt", "alpha=0.1", "--out", str(out), "--format", "json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["algorithm"] == algorithm and s["rounds"] == 2 and s["party_topics"] == [2, 3, 4]
    assert 1 <= s["global_model"]["topics"] <= 9
    assert set(s["each_party_alone"]) == {"p1", "p2", "p3"}
    assert all(np.isfinite(a["heldout_loglik_per_token"]) for a in s["each_party_alone"].values())
    assert np.isfinite(s["global_model"]["heldout_loglik_per_token"])
    assert (out / "model.npz").is_file() and (out / "aggregator.log").is_file()


@pytest.mark.parametrize("algorithm", ["iftm-lda", "iftm-sentencelda"])
def test_train_as_one_party_alone(tmp_path, capsys, algorithm):
    corpus = write_jsonl(tmp_path / "docs.jsonl", theme_texts(120, seed=5, sentence_length=4))
    assert main(["train", "--algorithm", algorithm, "--corpus", str(corpus), "-k", "2", "--iterations", "40",
                 "--opt", "epsilon=inf", "--opt", "alpha=0.1", "--out", str(tmp_path / "r"), "--format", "json"]) == 0
    s = json.loads(capsys.readouterr().out)
    topics = json.loads((tmp_path / "r" / "topics.json").read_text())
    themes = [set(words) for words in THEMES.values()]
    assert s["algorithm"] == algorithm
    assert all(any(len(set(t["words"][:5]) & th) >= 4 for th in themes) for t in topics)  # one theme per topic


def test_sentencelda_without_sentence_boundaries_is_one_line(tmp_path, capsys):
    assert main(["train", "--algorithm", "iftm-sentencelda", "--dataset", "synthetic", "-k", "3", "--iterations",
                 "2", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert "sentence boundaries" in err and "\n" not in err


def test_the_combiner_refuses_what_is_not_a_normalised_model():
    comb = TopicMergeCombiner()
    comb.check_meta(META)
    good = normalize_topics(np.random.default_rng(0).random((3, 8)))
    comb.validate(encode_update(good, 10), META)
    for bad in (good * 2, np.vstack([good, good]), good[:, :7], -good):  # not normalised, K > 4, V ≠ 8, negative
        with pytest.raises(InvalidPayload):
            comb.validate(encode_update(bad, 10), META)
    with pytest.raises(InvalidPayload):
        comb.validate(encode_update(good, 0), META)
    with pytest.raises(InvalidPayload):
        comb.validate(b"junk" * 10, META)
    for meta in ({**META, "xi": 0}, {**META, "top_words": 0}, {**META, "vocabulary": 0}, {"xi": 0.5}):
        with pytest.raises(InvalidMeta):
            comb.check_meta(meta)
    assert comb.max_update_bytes(META) >= len(encode_update(np.full((4, 8), 1 / 8), 1.0))


def test_the_combine_is_pure_and_in_party_order():
    class Ctx:
        meta = META

    rng = np.random.default_rng(1)
    a, b = normalize_topics(rng.random((2, 8))), normalize_topics(rng.random((3, 8)))
    one = TopicMergeCombiner().combine([encode_update(a, 5), encode_update(b, 7)], Ctx())
    assert one == TopicMergeCombiner().combine([encode_update(a, 5), encode_update(b, 7)], Ctx())
    model = decode_global(one, 8)
    np.testing.assert_allclose(model.topics.sum(axis=1), 1.0)
    assert model.weights.sum() == pytest.approx(2 * 5 + 3 * 7)


@pytest.mark.parametrize("opt", ["epsilon=0", "epsilon=-1", "tau=-0.1", "xi=0", "xi=1.5", "top_words=0",
                                 "party_topics=2,x"])
def test_bad_options_are_one_line(tmp_path, capsys, opt):
    assert main(["train", "--algorithm", "iftm-lda", "--dataset", "synthetic", "-k", "3", "--iterations", "2",
                 "--opt", opt, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err


def _iftm_consortium(root: Path, iterations: int):
    from _csfed_setup import make_consortium

    from fedtopic.consortium.config import load_consortium, save_consortium

    config, cfg = make_consortium(root, protection="none", iterations=iterations)
    cfg = cfg.model_copy(update={"algorithm": cfg.algorithm.model_copy(update={
        "name": "iftm-lda", "topics": 4,
        "options": {"epsilon": "inf", "local_iterations": 3, "party_topics": "3,4,5", "alpha": 0.2}})})
    save_consortium(cfg, config)
    return config, load_consortium(config)


def test_iftm_node_processes_through_the_aggregator(tmp_path):
    """Three `fedtopic node run` processes with different K federate through a real aggregator; one is killed
    -9 after its first round and resumes; the global model equals a run without the kill."""
    from _node_procs import run_node_processes

    from fedtopic.simulation.aggregator_proc import AggregatorProcess

    results = {}
    for label, kill in (("clean", False), ("killed", True)):
        config, cfg = _iftm_consortium(tmp_path / label, iterations=9)
        logs = {p: tmp_path / f"{label}-{p}.log" for p in cfg.party_ids}
        with AggregatorProcess(config, tmp_path / f"{label}-agg", tmp_path / f"{label}-agg.log") as agg:
            outs = run_node_processes(config, cfg.party_ids, agg.url, logs, kill="p2" if kill else None)
        summaries = {p: json.loads(out) for p, out in outs.items()}
        assert [summaries[p]["topics"] for p in cfg.party_ids] == [3, 4, 5]
        assert all(s["rounds"] == 3 and np.isfinite(s["global_heldout_loglik_per_token"]) for s in summaries.values())
        phis = [np.load(config.parent / "state" / p / "model" / "model.npz")["phi"] for p in cfg.party_ids]
        assert all(np.array_equal(phis[0], x) for x in phis[1:])  # every party holds the same M*
        results[label] = phis[0]
        if kill:
            assert "p2: resumed at round" in logs["p2"].read_text()
    assert np.array_equal(results["clean"], results["killed"])


def test_a_party_secret_keys_the_privatisation():
    from fedtopic.algorithms.registry import get_algorithm
    from fedtopic.corpus.synthetic import generate_synthetic

    corpus = generate_synthetic(n_parties=1, n_topics=3, n_shared=1, n_words=80, docs_per_party=10, doc_length=12,
                                seed=1).parties[0]
    algo = get_algorithm("iftm-lda")
    spec = algo.spec(3, 2, seed=4, options={"epsilon": "8"})
    public = algo.party("p1", 0, corpus, spec)  # what a peer holding the config and seed can build
    mine, again = (algo.party("p1", 0, corpus, spec, secret=b"\x07" * 32) for _ in range(2))
    assert mine.model.key == again.model.key != public.model.key
    assert not np.array_equal(mine.model.ckw, public.model.ckw)  # other privatised vectors


@pytest.mark.parametrize(("xi", "said"), [("1.0", "none similar enough to merge at ξ = 1"), ("0.05", "merged at ξ")])
def test_the_last_line_says_why_the_global_model_has_its_topics(tmp_path, capsys, xi, said):
    """`iftm-lda -k 10` returned a 30-topic model without a word: K is each party's, M* merges at ξ."""
    from fedtopic.algorithms.registry import get_algorithm

    corpus = write_jsonl(tmp_path / "docs.jsonl", theme_texts(90, seed=6))
    assert main(["simulate", "--algorithm", "iftm-lda", "--corpus", str(corpus), "--parties", "3", "-k", "3",
                 "--iterations", "3", "--opt", f"xi={xi}", "--out", str(tmp_path / "run"), "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    line = get_algorithm("iftm-lda").headline(summary)
    glob = summary["global_model"]["topics"]
    assert said in line and f"M* has {glob} topic" in line and "the parties' 9" in line, line
    with np.load(tmp_path / "run" / "model.npz") as model:  # the perplexity says what vocabulary it is over
        assert summary["vocabulary"] == model["phi"].shape[1]
    assert f"of M* over its {summary['vocabulary']:,}-word vocabulary" in line, line
    if xi == "1.0":
        assert glob == 9
    # topic shares are M*'s topics' shares of the training tokens (fold-in), not the parties' data amounts
    # (with equal parties every topic used to show 1/K*)
    topics = json.loads((tmp_path / "run" / "topics.json").read_text())
    shares = np.array([t["prevalence"] for t in (topics["topics"] if isinstance(topics, dict) else topics)])
    assert shares.shape == (glob,) and abs(shares.sum() - 1) < 1e-4 and (glob == 1 or not np.allclose(shares, 1 / glob, atol=1e-4))
