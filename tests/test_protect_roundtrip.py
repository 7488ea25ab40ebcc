"""encode -> validate -> combine -> decode gives exactly Σ_p N_p, for every protection scheme (P parties)."""

from dataclasses import replace

import numpy as np
import pytest
from _protect_setup import contexts, random_counts, run_round, view
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedtopic.crypto.protect import (
    PROTECTIONS,
    InvalidUpdate,
    ProtectionError,
    decode_word_frequencies,
    encode_word_frequencies,
    protected_rows,
    rank_words,
    ranking_meta,
)
from fedtopic.crypto.protect.paillier_rows import parse_rows_meta


@st.composite
def rounds(draw):
    v = draw(st.integers(1, 8))
    k = draw(st.integers(1, 4))
    parties = draw(st.integers(1, 4))
    max_value = draw(st.sampled_from([1, 7, 1000, 2**28]))
    cells = st.integers(0, max_value)
    mats = [np.array(draw(st.lists(cells, min_size=v * k, max_size=v * k)), dtype=np.int64).reshape(v, k)
            for _ in range(parties)]  # fmt: skip
    ranking = np.array(draw(st.permutations(range(v))), dtype=np.int64)
    delta = draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    return mats, ranking, delta, max_value, draw(st.integers(0, 2**64 - 1))


@pytest.mark.parametrize("name", sorted(PROTECTIONS))
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=rounds())
def test_every_scheme_sums_exactly(name, case):
    mats, ranking, delta, max_value, rnd = case
    ctxs = contexts(mats[0].shape, parties=len(mats), round=rnd, delta=delta, ranking=ranking, max_value=max_value)
    scheme = PROTECTIONS[name]
    _, _, aggregate = run_round(scheme, mats, ctxs)
    expected = np.sum(mats, axis=0, dtype=np.int64)
    for ctx in ctxs:
        out = scheme.decode_aggregate(aggregate, ctx)
        assert out.dtype == np.int64 and np.array_equal(out, expected)


def test_protected_rows_follow_the_global_ranking():
    ranking = np.array([5, 2, 7, 0, 1, 3, 4, 6, 8, 9])
    assert protected_rows(ranking, 0.2, "top").tolist() == [2, 5]
    assert protected_rows(ranking, 0.2, "bottom").tolist() == [8, 9]
    assert protected_rows(ranking, 0.05, "top").tolist() == [5]  # ⌈δ·V⌉: any δ > 0 protects at least one word
    assert protected_rows(ranking, 0.0, "top").size == 0
    assert protected_rows(ranking, 0.5, "all").size == 10
    assert protected_rows(np.arange(200), 0.005, "top").tolist() == [0]  # 0.005 * 200 is 1 word, not 2
    with pytest.raises(ProtectionError, match="permutation"):
        protected_rows(np.array([0, 0, 1]), 0.5, "top")


def test_iphe_encrypts_exactly_the_top_words_and_uphe_the_bottom():
    ranking = np.array([3, 1, 0, 2, 4, 5, 6, 7])
    ctx = contexts((8, 2), delta=0.25, ranking=ranking)[0]
    assert PROTECTIONS["paillier-iphe"].session_meta(ctx)["rows"] == [1, 3]
    assert PROTECTIONS["paillier-uphe"].session_meta(ctx)["rows"] == [6, 7]
    assert PROTECTIONS["paillier-packed"].session_meta(ctx)["rows"] == "all"


def test_global_ranking_from_encrypted_frequency_vectors():
    rng = np.random.default_rng(3)
    v, parties = 300, 3
    freqs = [rng.integers(0, 50, v) for _ in range(parties)]
    ctxs = contexts((v, 40), parties=parties, max_value=5000)
    meta = ranking_meta(ctxs[0])
    assert meta["shape"] == [v, 1] and meta["protection"] == "paillier-packed"
    scheme = PROTECTIONS["paillier-packed"]
    payloads = [encode_word_frequencies(f, c) for f, c in zip(freqs, ctxs)]
    for p in payloads:
        scheme.validate(p, meta, round=1)
    aggregate = scheme.combine(payloads, view(meta, [0, 1, 2]))
    total = decode_word_frequencies(aggregate, ctxs[2])
    assert np.array_equal(total, np.sum(freqs, axis=0))
    ranking = rank_words(total)
    assert np.array_equal(ranking, np.lexsort((np.arange(v), -total)))
    assert all(total[a] >= total[b] for a, b in zip(ranking, ranking[1:]))


def test_rank_words_breaks_ties_by_word_id():
    assert rank_words(np.array([3, 5, 3, 5, 0])).tolist() == [1, 3, 0, 2, 4]


def test_partial_round_decodes_the_contributors_sum():
    rng = np.random.default_rng(1)
    shape = (30, 4)
    mats = [random_counts(rng, shape, 100) for _ in range(3)]
    for name in ("none", "paillier-iphe", "paillier-packed"):
        scheme, ctxs = PROTECTIONS[name], contexts(shape)
        meta = scheme.session_meta(ctxs[0])
        payloads = [scheme.encode_update(mats[i], ctxs[i]) for i in (0, 2)]
        aggregate = scheme.combine(payloads, view(meta, [0, 2]))
        assert np.array_equal(scheme.decode_aggregate(aggregate, ctxs[1]), mats[0] + mats[2].astype(np.int64))


def test_plain_sum_beyond_the_codec_range_is_refused():
    scheme, ctxs = PROTECTIONS["none"], contexts((1, 1), parties=2, max_value=2**31 - 1)
    with pytest.raises(InvalidUpdate, match="exceeds"):
        run_round(scheme, [np.full((1, 1), 2**31 - 1)] * 2, ctxs)


def test_packed_update_with_a_background_pool_and_without_the_secret_key():
    from dataclasses import replace

    from _protect_setup import PAILLIER

    from fedtopic.crypto.protect import ObfuscatorPool

    rng = np.random.default_rng(9)
    shape = (60, 5)
    mats = [random_counts(rng, shape, 200) for _ in range(3)]
    scheme = PROTECTIONS["paillier-packed"]
    ctxs = contexts(shape, private=False)  # encoding needs only the public key (no CRT shortcut then)
    with ObfuscatorPool(PAILLIER.public, workers=2, batch=2) as pool:
        pool.prefill(6)
        ctxs = [replace(c, obfuscators=pool) for c in ctxs]
        _, _, aggregate = run_round(scheme, mats, ctxs)
    reader = contexts(shape)[0]
    assert np.array_equal(scheme.decode_aggregate(aggregate, reader), np.sum(mats, axis=0))
    with pytest.raises(ProtectionError, match="paillier_private"):
        scheme.decode_aggregate(aggregate, ctxs[0])


@pytest.mark.parametrize("name", ["paillier-packed", "paillier-iphe"])
def test_rows_packed_by_the_consortiums_word_frequencies_sum_exactly_in_fewer_ciphertexts(name):
    """Zipf-like rows: each word's slots as wide as its consortium frequency; the aggregator, which has no
    frequencies, validates and combines by the meta's count of ciphertexts alone."""
    rng = np.random.default_rng(5)
    v, k, parties = 300, 6, 3
    freq = np.maximum(1, (4000 / np.arange(1, v + 1)).astype(np.int64))  # the consortium's frequency of each word
    mats = [np.zeros((v, k), dtype=np.int64) for _ in range(parties)]
    for w in range(v):  # every token of word w goes to some party and topic
        np.add.at(mats[int(rng.integers(parties))], (w, rng.integers(0, k, int(freq[w]))), 1)
    max_value = (1 << int(freq.max()).bit_length()) - 1
    ctxs = [replace(c, word_bounds=freq) for c in contexts((v, k), parties=parties, delta=0.5, max_value=max_value,
                                                           ranking=np.arange(v))]
    scheme = PROTECTIONS[name]
    meta, payloads, aggregate = run_round(scheme, mats, ctxs)
    uniform = parse_rows_meta({key: val for key, val in meta.items() if key not in ("row_bounds", "ciphertexts")})
    assert meta["row_bounds"] == "word_frequencies" and meta["ciphertexts"] < uniform.n_ciphertexts
    for ctx in ctxs:
        assert np.array_equal(scheme.decode_aggregate(aggregate, ctx, meta), sum(mats))
    with pytest.raises(ProtectionError, match="does not hold"):
        scheme.decode_aggregate(aggregate, replace(ctxs[0], word_bounds=None), meta)
    over = mats[0].copy()
    over[0, 0] = int(freq[0]) + 1  # more of word 0 than the consortium has (within max_value)
    with pytest.raises(ProtectionError, match="exceeds its word's frequency"):
        scheme.encode_update(over, ctxs[0], meta)
    other = np.full_like(freq, 1 << 20)  # a party that summed other frequencies: another layout
    with pytest.raises(InvalidUpdate, match="disagree"):
        scheme.encode_update(mats[0], replace(ctxs[0], word_bounds=other), meta)
