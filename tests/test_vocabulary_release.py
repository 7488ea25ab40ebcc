"""The private vocabulary's maths without a network: the document weights against a slow reference, the release's
accountant against dp-accounting, the threshold reveal's shares and records (hypothesis), its combiner, and the
release joining a party's total."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.crypto.errors import DecryptionError
from fedtopic.crypto.threshold_words import (
    MAX_WORD_BYTES,
    reveal_word,
    share_word,
    vocabulary_keys,
    word_bucket,
    word_tag,
)
from fedtopic.crypto.word_records import (
    RECORD_BYTES,
    RecordError,
    RevealedWord,
    pack_records,
    unpack_records,
    unpack_revealed,
)
from fedtopic.errors import ConfigError
from fedtopic.network.combiners import RoundContext, combiners_allowed, get_combiner
from fedtopic.network.errors import InvalidMeta, InvalidPayload
from fedtopic.privacy.rdp import DEFAULT_ORDERS
from fedtopic.privacy.vocab_release import (
    ReleaseSettings,
    candidates,
    document_weights,
    noisy_part,
    release_report,
)
from fedtopic.runs.vocabulary_release import join_release, read_release

KEYS = vocabulary_keys(b"k" * 32, "s-pv1")
words_st = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20).filter(
    lambda w: len(w.encode()) <= MAX_WORD_BYTES)


def _reference_weights(docs, s: ReleaseSettings):
    """Slow numpy reference (no draw: every document within max_words)."""
    out = np.zeros(s.buckets, dtype=np.int64)
    for cells in docs:
        distinct = sorted(set(int(c) for c in cells))
        for c in distinct:
            out[c] += math.floor(s.scale / math.sqrt(len(distinct)))
    return out


@given(st.lists(st.lists(st.integers(0, 255), max_size=30), max_size=20))
@settings(max_examples=50, deadline=None)
def test_document_weights_match_the_reference_and_bound_each_document(docs):
    s = ReleaseSettings(buckets=256, max_words=30)
    arrays = [np.asarray(d, dtype=np.int64) for d in docs]
    got = document_weights(arrays, s, np.random.default_rng(0))
    assert np.array_equal(got, _reference_weights(arrays, s))
    for d in arrays:  # one document's part: ℓ2 ≤ s, ℓ1 ≤ s√max_words
        part = document_weights([d], s, np.random.default_rng(0)).astype(float)
        assert np.linalg.norm(part) <= s.scale + 1e-9 and part.sum() <= s.scale * math.sqrt(s.max_words) + 1e-9


def test_a_long_document_gives_weight_to_max_words_cells_only():
    s = ReleaseSettings(buckets=1024, max_words=16)
    got = document_weights([np.arange(500)], s, np.random.default_rng(1))
    assert np.count_nonzero(got) == 16 and set(got[got > 0]) == {s.scale // 4}


def test_the_noisy_sum_decodes_to_the_weights_plus_noise_and_candidates_follow_the_threshold():
    s = ReleaseSettings(buckets=512, noise_multiplier=0.5, threshold=2.0)
    weights = np.zeros(512, dtype=np.int64)
    weights[7] = 10 * s.scale  # ten documents' whole weight
    parts = [noisy_part(weights if i == 0 else np.zeros_like(weights), s, 3, np.random.default_rng(i))
             for i in range(3)]
    assert all(p.update.min() >= 0 for p in parts)
    total = sum(p.update for p in parts)
    noise = (total - 3 * parts[0].offset - weights) / s.scale
    assert abs(noise.std() - 0.5) < 0.05  # the three shares sum to the central σ
    picked = candidates(total, s, 3)
    assert picked[7] and picked.sum() < 10


def test_the_release_is_the_gaussian_mechanism_plus_thm_3_5s_integer_term_against_dp_accounting():
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import RdpAccountant

    s = ReleaseSettings(noise_multiplier=1.3, max_words=64)
    report = release_report(s)
    acc = RdpAccountant(list(DEFAULT_ORDERS))
    acc.compose(dp_accounting.GaussianDpEvent(s.noise_multiplier))
    gaussian = np.asarray(acc._rdp)  # RDP of N(0, σ²) at sensitivity 1, the release's first term
    s1, s2 = s.scale * math.sqrt(s.max_words), float(s.scale)
    a = np.asarray(DEFAULT_ORDERS, dtype=float)
    integer = np.minimum(((2 * a - 1) * s2**2 + 6 * s1) / (4 * (s.scale * s.noise_multiplier) ** 4),
                         3 * s1 / (2 * (s.scale * s.noise_multiplier) ** 2))
    assert np.allclose(np.asarray(report.rdp), gaussian + integer, rtol=0, atol=1e-9)
    assert (integer[0] / gaussian[0]) <= 0.01 + 1e-12  # the scale keeps the integer part ≤ 1 %
    assert report.delta == s.delta and report.epsilon > 0


def test_settings_out_of_range_are_one_line():
    with pytest.raises(ConfigError, match="min parties"):
        ReleaseSettings(min_parties=4).check(3)
    with pytest.raises(ConfigError, match="noise multiplier"):
        ReleaseSettings(noise_multiplier=0.0).check(3)


@given(words_st, st.integers(1, 6), st.data())
@settings(max_examples=40, deadline=None)
def test_any_threshold_of_holders_reveals_the_word_and_fewer_open_nothing(word, t, data):
    holders = [share_word(KEYS, word, t, bytes([i]) * 32) for i in range(t + 1)]
    assert len({h.tag for h in holders}) == 1 and len({h.sealed for h in holders}) == 1
    chosen = data.draw(st.permutations(holders))[:t]
    revealed = RevealedWord(chosen[0].tag, chosen[0].sealed, tuple((h.x, h.y) for h in chosen))
    assert reveal_word(KEYS, revealed) == word
    if t > 1:  # t − 1 points interpolate to another secret: the seal does not open
        fewer = RevealedWord(chosen[0].tag, chosen[0].sealed, tuple((h.x, h.y) for h in chosen[:-1]))
        with pytest.raises(DecryptionError):
            reveal_word(KEYS, fewer)
    other = vocabulary_keys(b"o" * 32, "s-pv1")  # the aggregator's position: points but not the key
    with pytest.raises(DecryptionError):
        reveal_word(other, revealed)


def test_tags_and_cells_depend_on_the_key_and_the_session():
    assert word_tag(KEYS, "bank") != word_tag(vocabulary_keys(b"k" * 32, "other"), "bank")
    assert word_tag(KEYS, "bank") != word_tag(KEYS, "banks")
    cells = {word_bucket(KEYS, f"w{i}", 1 << 10) for i in range(2000)}
    assert len(cells) > 800  # spread over the cells


@given(st.lists(words_st, max_size=8, unique=True))
@settings(max_examples=40, deadline=None)
def test_records_round_trip_and_malformed_bytes_are_refused(ws):
    records = [share_word(KEYS, w, 2, b"h" * 32) for w in ws]
    packed = pack_records(records)
    assert len(packed) == RECORD_BYTES * len(ws)
    assert sorted(unpack_records(packed, 10), key=lambda r: r.tag) == sorted(records, key=lambda r: r.tag)
    if len(ws) >= 2:
        a, b = packed[:RECORD_BYTES], packed[RECORD_BYTES:2 * RECORD_BYTES]
        with pytest.raises(RecordError, match="ascending"):
            unpack_records(b + a, 10)
        with pytest.raises(RecordError, match="more than"):
            unpack_records(packed, 1)
    with pytest.raises(RecordError, match="whole"):
        unpack_records(packed + b"x", 10)


def test_the_combiner_passes_on_only_words_enough_parties_sent_and_refuses_bad_meta():
    combiner = get_combiner("threshold-reveal")
    meta = {"threshold": 2, "max_records": 16}
    secrets = [bytes([i + 1]) * 32 for i in range(3)]
    held = [["bank", "goal", "alone"], ["bank", "goal"], ["goal"]]
    payloads = [pack_records([share_word(KEYS, w, 2, secrets[i]) for w in ws]) for i, ws in enumerate(held)]
    for p in payloads:
        combiner.validate(p, meta)
    ctx = RoundContext("s-pv2", 0, meta, ("p1", "p2", "p3"), ("p1", "p2", "p3"))
    out = list(unpack_revealed(combiner.combine(payloads, ctx), 2))
    assert sorted(reveal_word(KEYS, r) for r in out) == ["bank", "goal"]
    assert all(len(r.points) == 2 for r in out)
    with pytest.raises(InvalidMeta):
        combiner.check_meta({"threshold": 0, "max_records": 16})
    with pytest.raises(InvalidMeta):
        combiner.check_meta({"threshold": 2, "max_records": 16, "words": ["x"]})
    with pytest.raises(InvalidPayload):
        combiner.validate(b"\x00" * (RECORD_BYTES + 1), meta)
    assert "threshold-reveal" in combiners_allowed("mask") and "threshold-reveal" in combiners_allowed("paillier-packed")


def test_holders_that_disagree_on_the_sealed_word_reveal_nothing():
    combiner = get_combiner("threshold-reveal")
    meta = {"threshold": 2, "max_records": 4}
    a = share_word(KEYS, "bank", 2, b"a" * 32)
    b = share_word(KEYS, "bank", 2, b"b" * 32)
    forged = type(b)(b.tag, b.x, b.y, bytes(len(b.sealed)))
    ctx = RoundContext("s-pv2", 0, meta, ("p1", "p2"), ("p1", "p2"))
    assert combiner.combine([pack_records([a]), pack_records([forged])], ctx) == b""


def test_the_release_joins_the_training_and_a_malformed_one_is_one_line(tmp_path):
    release = {"mechanism": "m", "epsilon": 2.0, "delta": 1e-6, "unit": "u"}
    summary = {"privacy": {"p1": {"epsilon": 3.0, "delta": 1e-5}}}
    joined = join_release(summary, release, "p1")
    assert joined["privacy_total"]["epsilon"] == 5.0 and joined["privacy_total"]["delta"] == pytest.approx(1.1e-5)
    assert join_release({}, release, "p1")["privacy_total"]["training"] is None
    assert join_release(summary, None, "p1") is summary
    f = tmp_path / "vocab.json"
    f.write_text(json.dumps({"format": "fedtopic.vocabulary", "version": 1, "words": ["a"],
                             "release": {"epsilon": "lots"}}))
    with pytest.raises(ConfigError, match="finite"):
        read_release(f)
    f.write_text(json.dumps({"format": "fedtopic.vocabulary", "version": 1, "words": ["a"]}))
    assert read_release(f) is None
