"""xoroshiro128+ streams: numba and pure-Python twins agree; seeding is reproducible."""

import numpy as np
import pytest
from numba import njit

from fedtopic.errors import ModelError
from fedtopic.models.rng import (
    OWN_ROW,
    PyXoroshiro,
    make_rng_states,
    next_double,
    put_stream,
    take_stream,
    uniforms,
)


def test_numba_and_python_generators_draw_the_same_uniforms():
    states = make_rng_states(123, 3)
    py_states = states.copy()
    drawn = uniforms(states, 2, 500)
    gen = PyXoroshiro(py_states, 2)
    assert np.array_equal(drawn, [gen.next_double() for _ in range(500)])
    gen.store()
    assert np.array_equal(states, py_states)  # both advanced stream 2 only, by the same amount


def test_seeding_is_reproducible_and_streams_differ():
    a, b = make_rng_states(7, 4), make_rng_states(7, 4)
    assert np.array_equal(a, b)
    assert not np.array_equal(make_rng_states(8, 4), a)
    draws = [uniforms(a, s, 1000) for s in range(4)]
    for s in range(1, 4):
        assert abs(np.corrcoef(draws[0], draws[s])[0, 1]) < 0.15
    assert 0.45 < draws[0].mean() < 0.55 and draws[0].min() >= 0.0 and draws[0].max() < 1.0


@pytest.mark.parametrize("seed,n", [(-1, 2), (1.5, 2), (0, 0)])
def test_bad_seed_or_stream_count_is_a_model_error(seed, n):
    with pytest.raises(ModelError):
        make_rng_states(seed, n)


@njit(cache=False)
def _draw_through_private_copy(states, stream, n):
    own = take_stream(states, stream)
    out = np.empty(n, dtype=np.float64)
    for i in range(n):
        out[i] = next_double(own, OWN_ROW)
    put_stream(states, stream, own)
    return out


def test_a_private_stream_copy_draws_the_same_and_hands_back_the_advanced_state():
    shared = make_rng_states(7, 4)
    private = shared.copy()
    expected = uniforms(shared, 2, 1000)
    got = _draw_through_private_copy(private, 2, 1000)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(private, shared)  # stream 2 advanced, the others untouched
