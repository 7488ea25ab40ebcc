"""``heaviest_ids``'s partial selection gives exactly the full stable sort's top words (ties to the lower id, NaN
last), for ``top_word_ids``, the parties' top words and ``top_of`` alike."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from fedtopic.errors import EvalError
from fedtopic.eval.coherence import heaviest_ids, top_word_ids
from fedtopic.runs.topic_snapshot import top_of

weights = st.sampled_from([0.0, 0.25, 0.5, 1.0, np.nan]) | st.floats(0.0, 1.0)


@settings(max_examples=300, deadline=None)
@given(phi=st.integers(1, 5).flatmap(lambda k: st.integers(1, 30).flatmap(
    lambda v: arrays(np.float64, (k, v), elements=weights))), n=st.integers(0, 35))
def test_top_of_equals_the_stable_sort(phi, n):
    want = np.argsort(-phi, axis=1, kind="stable")[:, :n]
    assert np.array_equal(heaviest_ids(phi, n), want)
    ids, w = top_of(phi, n)
    assert np.array_equal(ids, want)
    assert np.array_equal(w, np.take_along_axis(phi, want, axis=1), equal_nan=True)


def test_top_word_ids_keeps_its_checks_and_takes_the_same_words():
    phi = np.array([[0.1, 0.4, 0.1, 0.4], [0.25, 0.25, 0.25, 0.25]])
    assert top_word_ids(phi, 2).tolist() == [[1, 3], [0, 1]]
    for bad_n in (0, 5):
        with pytest.raises(EvalError, match=r"n must be in \[1, V=4\]"):
            top_word_ids(phi, bad_n)
