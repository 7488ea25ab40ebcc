"""The inversion experiment's input is exactly what the aggregator reads in a real δ-IPHE / δ-UPHE aggregate.

`fedtopic experiment inversion` inverts N_Σ with the protected rows removed; here the
aggregate comes from the real protocol (three parties encode with a real Paillier key,
the aggregator combines) and `aggregator_view` reads it without any secret.
"""

from __future__ import annotations

import numpy as np
import pytest
from _protect_setup import contexts, random_counts, run_round

from fedtopic.crypto.protect import PROTECTIONS
from fedtopic.crypto.protect.base import InvalidUpdate
from fedtopic.crypto.protect.paillier_rows import aggregator_view
from fedtopic.eval.attacks import inverted_counts, protected_words

SHAPE = (60, 5)


@pytest.mark.parametrize(("name", "scheme"), [("paillier-iphe", "iphe"), ("paillier-uphe", "uphe")])
def test_the_aggregators_view_of_a_real_aggregate_is_n_sum_without_the_protected_rows(name, scheme):
    rng = np.random.default_rng(3)
    mats = [random_counts(rng, SHAPE, 600) for _ in range(3)]
    n_sum = sum(m.astype(np.int64) for m in mats)
    frequencies = n_sum.sum(axis=1)
    ranking = np.argsort(-frequencies, kind="stable")  # the consortium's word ranking, most frequent first
    ctxs = contexts(SHAPE, delta=0.1, ranking=ranking)
    meta, _, aggregate = run_round(PROTECTIONS[name], mats, ctxs)

    visible, hidden = aggregator_view(aggregate, meta)

    assert np.array_equal(hidden, np.sort(protected_words(frequencies, 0.1, scheme)))
    assert not visible[hidden].any()
    others = np.setdiff1d(np.arange(SHAPE[0]), hidden)
    assert np.array_equal(visible[others], n_sum[others])
    assert np.array_equal(inverted_counts(visible, hidden), inverted_counts(n_sum, hidden))
    decoded = PROTECTIONS[name].decode_aggregate(aggregate, ctxs[0], meta)  # a party, with the secret key
    assert np.array_equal(decoded, n_sum)


def test_a_party_update_is_not_an_aggregate_view():
    rng = np.random.default_rng(4)
    mats = [random_counts(rng, SHAPE, 100) for _ in range(3)]
    meta, payloads, _ = run_round(PROTECTIONS["paillier-iphe"], mats, contexts(SHAPE, delta=0.1))
    with pytest.raises(InvalidUpdate):
        aggregator_view(payloads[0], meta)
