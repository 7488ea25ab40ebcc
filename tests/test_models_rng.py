"""xoroshiro128+ streams: numba and pure-Python twins agree; seeding is reproducible."""

import numpy as np
import pytest

from fedtopic.errors import ModelError
from fedtopic.models.rng import PyXoroshiro, make_rng_states, uniforms


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
