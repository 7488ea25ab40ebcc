"""The private vocabulary consensus (issue 48, item 1) against a real aggregator process and three parties: the
aggregator learns no word, no party learns a word fewer than ``min_parties`` parties hold, every party ends with
the same ordered vocabulary, and the release's (ε, δ) is in the file and in the party's summary."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from _csfed_setup import make_consortium, run_parties
from _texts import THEMES, theme_texts, write_jsonl

from fedtopic.cli.main import main
from fedtopic.corpus.readers import read_corpus
from fedtopic.corpus.vocab_counts import VocabularyCounts, merge_counts
from fedtopic.corpus.vocabulary import Vocabulary
from fedtopic.node.private_vocab import align_privately
from fedtopic.privacy.vocab_release import ReleaseSettings, release_report
from fedtopic.simulation.aggregator_proc import AggregatorProcess

pytestmark = pytest.mark.xdist_group("agg-private_vocabulary")

SHARED = "zircon"  # held by two parties, each in many documents
ALONE = "xylophonist"  # held by the last party alone, in many of its documents


def _corpora(tmp_path, ids):
    """Theme documents per party; ``SHARED`` in the first two parties' documents, ``ALONE`` in the last's."""
    out = {}
    for i, pid in enumerate(ids):
        texts = theme_texts(60 + 10 * i, seed=70 + i)
        extra = SHARED if i < 2 else ALONE
        texts = [t + f" {extra}" if k % 2 == 0 else t for k, t in enumerate(texts)]
        out[pid] = write_jsonl(tmp_path / f"{pid}.jsonl", texts)
    return out


def _every_file_bytes(folder) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def test_private_alignment_reveals_no_word_to_the_aggregator_and_no_lone_word_to_anyone(tmp_path, capsys):
    config, cfg = make_consortium(tmp_path / "c", protection="mask", iterations=4)
    corpora = _corpora(tmp_path, cfg.party_ids)
    first, *others = cfg.party_ids
    out = tmp_path / "vocab.json"
    settings = ReleaseSettings(noise_multiplier=1.0, threshold=0.5)
    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as agg, \
            ThreadPoolExecutor(len(others)) as pool:
        futures = [pool.submit(align_privately, cfg, config, pid, corpora[pid], settings=settings, url=agg.url,
                               min_df=1, max_df=1.0, timeout=60, say=lambda _: None) for pid in others]
        assert main(["vocab", "align", str(corpora[first]), "--config", str(config), "--party", first,
                     "--url", agg.url, "--min-df", "1", "--max-df", "1.0", "--timeout", "60",
                     "--out", str(out), "--format", "json"]) == 0
        results = [f.result(timeout=60) for f in futures]
        # the nodes train on it; each summary carries the release and the party's total
        trained = run_parties(config, cfg, agg.url, per_party={pid: {"corpus": corpora[pid], "vocab": out}
                                                               for pid in cfg.party_ids})
    written = Vocabulary.from_json(out.read_text())
    assert out.stat().st_mode & 0o777 == 0o600  # the consortium's vocabulary: owner-only at rest
    assert all(r.words == written.words for r in results)  # the same ordered vocabulary everywhere
    assert list(written.words) == sorted(written.words)
    theme_words = {w for words in THEMES.values() for w in words}
    assert SHARED in written and ALONE not in written
    assert set(written.words) <= theme_words | {SHARED} and len(theme_words & set(written.words)) >= 20
    # the aggregator's data folder and log hold none of the words; nor does what the others were told
    stored = _every_file_bytes(tmp_path / "agg") + (tmp_path / "agg.log").read_bytes()
    for word in [*theme_words, SHARED, ALONE]:
        assert word.encode() not in stored, word
    summary = json.loads(capsys.readouterr().out)
    expected = release_report(settings)
    assert summary["method"] == "private" and summary["epsilon"] == pytest.approx(expected.epsilon)
    release = json.loads(out.read_text())["release"]
    assert release["epsilon"] == pytest.approx(expected.epsilon) and release["delta"] == settings.delta
    assert release["admitted"] == len(written) and release["settings"]["min_parties"] == 2
    for pid, summary in trained.items():
        assert isinstance(summary, dict), summary
        assert summary["vocabulary_release"]["epsilon"] == pytest.approx(expected.epsilon)
        assert summary["privacy_total"]["epsilon"] == pytest.approx(expected.epsilon)  # no DP in the training
        on_disk = json.loads((config.parent / "state" / pid / "model" / "summary.json").read_text())
        assert on_disk["privacy_total"] == summary["privacy_total"]


def test_min_parties_one_admits_a_lone_word_and_three_admits_only_what_all_hold(tmp_path):
    config, cfg = make_consortium(tmp_path / "c", protection="mask", iterations=4)
    corpora = _corpora(tmp_path, cfg.party_ids)
    got = {}
    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as agg:
        for k in (1, 3):
            settings = ReleaseSettings(min_parties=k)
            with ThreadPoolExecutor(len(cfg.party_ids)) as pool:
                futures = [pool.submit(align_privately, cfg, config, pid, corpora[pid], settings=settings,
                                       url=agg.url, session=f"mp{k}", min_df=1, max_df=1.0, timeout=60,
                                       say=lambda _: None) for pid in cfg.party_ids]
                got[k] = {f.result(timeout=60).words for f in futures}
    assert len(got[1]) == len(got[3]) == 1
    one, three = got[1].pop(), got[3].pop()
    assert ALONE in one and SHARED in one
    assert ALONE not in three and SHARED not in three and set(three) < set(one)


def test_private_alignment_with_counts_is_the_merge_of_the_admitted_words(tmp_path):
    """gFedNTM's consensus, privately: the pooled counts of the admitted words equal the offline merge's."""
    config, cfg = make_consortium(tmp_path / "c", protection="mask", iterations=4)
    corpora = _corpora(tmp_path, cfg.party_ids)
    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as agg, \
            ThreadPoolExecutor(len(cfg.party_ids)) as pool:
        futures = [pool.submit(align_privately, cfg, config, pid, corpora[pid], with_counts=True, url=agg.url,
                               min_df=3, max_df=0.9, max_size=12, timeout=60, say=lambda _: None)
                   for pid in cfg.party_ids]
        results = [f.result(timeout=60) for f in futures]
    owns = [VocabularyCounts.from_corpus(read_corpus(corpora[p], min_df=1, max_df=1.0)) for p in cfg.party_ids]
    admitted_words = set(results[0].counts.words)
    assert ALONE not in admitted_words
    full = merge_counts(owns, min_df=1, max_df=1.0)
    keep = [w for w in full.words if sum(w in o.words for o in owns) >= 2]
    restricted = [VocabularyCounts(tuple(keep), *_aligned(o, keep)) for o in owns]
    offline = merge_counts(restricted, min_df=3, max_df=0.9, max_size=12)
    for r in results:
        assert r.counts is not None and r.counts.words == offline.words
        assert np.array_equal(r.counts.document_frequency, offline.document_frequency)
        assert r.counts.documents == sum(o.documents for o in owns)


def _aligned(own: VocabularyCounts, words: list[str]):
    index = {w: i for i, w in enumerate(own.words)}
    df = np.array([own.document_frequency[index[w]] if w in index else 0 for w in words], dtype=np.int64)
    tf = np.array([own.term_frequency[index[w]] if w in index else 0 for w in words], dtype=np.int64)
    return df, tf, own.documents
