"""Explicit random-number state for the numba samplers.

Generator: xoroshiro128+ (Blackman & Vigna 2018, parameters a=24, b=16, c=37).
A stream is two uint64 words; ``make_rng_states(seed, n)`` seeds stream 0 from
the integer seed with SplitMix64 and derives stream i+1 from stream i with the
generator's ``jump()`` (2^64 steps ahead), so streams never overlap. Kernels
take the whole ``uint64[n_streams, 2]`` array plus a stream index and advance it
in place: the same seed gives the same draws, whatever else runs in the process.

``PyXoroshiro`` is a pure-Python twin used by the numpy reference sweep so that
reference and kernel consume identical uniforms.
"""

from __future__ import annotations

import numpy as np
from numba import njit, uint64

from fedtopic.errors import ModelError

_MASK = (1 << 64) - 1
_JUMP = (0xDF900294D8F554A5, 0x170865DF4B3201FC)
_INV_2_53 = 1.0 / 9007199254740992.0  # 2**-53
GOLDEN = 0x9E3779B97F4A7C15  # SplitMix64's Weyl increment γ
_SPLITMIX_M1, _SPLITMIX_M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB  # its output function's multipliers


def _splitmix64(x: int) -> tuple[int, int]:
    """One SplitMix64 step on a Python int: (new state, output)."""
    x = (x + GOLDEN) & _MASK
    z = x
    z = ((z ^ (z >> 30)) * _SPLITMIX_M1) & _MASK
    z = ((z ^ (z >> 27)) * _SPLITMIX_M2) & _MASK
    return x, z ^ (z >> 31)


def _rotl_py(x: int, k: int) -> int:
    return ((x << k) | (x >> (64 - k))) & _MASK


class PyXoroshiro:
    """Pure-Python xoroshiro128+ over one stream of a states array (slow; tests only)."""

    def __init__(self, states: np.ndarray, stream: int = 0) -> None:
        self.states = states
        self.stream = stream
        self.s0 = int(states[stream, 0])
        self.s1 = int(states[stream, 1])

    def next_u64(self) -> int:
        s0, s1 = self.s0, self.s1
        out = (s0 + s1) & _MASK
        s1 ^= s0
        self.s0 = _rotl_py(s0, 24) ^ s1 ^ ((s1 << 16) & _MASK)
        self.s1 = _rotl_py(s1, 37)
        return out

    def next_double(self) -> float:
        """Uniform in [0, 1) from the top 53 bits."""
        return (self.next_u64() >> 11) * _INV_2_53

    def store(self) -> None:
        """Write the advanced state back into the states array."""
        self.states[self.stream, 0] = np.uint64(self.s0)
        self.states[self.stream, 1] = np.uint64(self.s1)


def _jump_py(s0: int, s1: int) -> tuple[int, int]:
    """Advance (s0, s1) by 2**64 steps (the published jump polynomial)."""
    t0 = t1 = 0
    for word in _JUMP:
        for b in range(64):
            if (word >> b) & 1:
                t0 ^= s0
                t1 ^= s1
            out_s1 = s1 ^ s0
            s0 = _rotl_py(s0, 24) ^ out_s1 ^ ((out_s1 << 16) & _MASK)
            s1 = _rotl_py(out_s1, 37)
    return t0, t1


MAX_STREAMS = 64


def make_rng_states(seed: int, n_streams: int) -> np.ndarray:
    """uint64[n_streams, 2]: independent, non-overlapping xoroshiro128+ streams from one int seed."""
    if not isinstance(seed, (int, np.integer)) or int(seed) < 0:
        raise ModelError(f"seed must be a non-negative integer, got {seed!r}")
    if not 1 <= n_streams <= 4096:
        raise ModelError(f"n_streams must be in 1..4096, got {n_streams}")
    x = int(seed) & _MASK
    x, s0 = _splitmix64(x)
    x, s1 = _splitmix64(x)
    if s0 == 0 and s1 == 0:  # the all-zero state is a fixed point
        s1 = 1
    out = np.empty((n_streams, 2), dtype=np.uint64)
    for i in range(n_streams):
        out[i, 0], out[i, 1] = s0, s1
        s0, s1 = _jump_py(s0, s1)
    return out


@njit(inline="always", cache=True)
def splitmix_output(x):
    """SplitMix64's output function (Steele, Lea & Flood 2014) at Weyl point x: a bijective 64-bit mixer, so
    ``splitmix_output(key + c·γ)`` is a counter-based stream (draw c computable without the ones before it)."""
    z = (x ^ (x >> uint64(30))) * uint64(_SPLITMIX_M1)
    z = (z ^ (z >> uint64(27))) * uint64(_SPLITMIX_M2)
    return z ^ (z >> uint64(31))


def numpy_splitmix_output(x: np.ndarray) -> np.ndarray:
    """numpy twin of ``splitmix_output`` (uint64 arrays, wrapping)."""
    z = (x ^ (x >> np.uint64(30))) * np.uint64(_SPLITMIX_M1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_SPLITMIX_M2)
    return z ^ (z >> np.uint64(31))


@njit(inline="always", cache=True)
def _rotl(x, k):
    return (x << uint64(k)) | (x >> uint64(64 - k))


@njit(inline="always", cache=True)
def next_u64(states, stream):
    """Advance one stream; return its next uint64."""
    s0 = states[stream, 0]
    s1 = states[stream, 1]
    out = s0 + s1
    s1 ^= s0
    states[stream, 0] = _rotl(s0, 24) ^ s1 ^ (s1 << uint64(16))
    states[stream, 1] = _rotl(s1, 37)
    return out


@njit(inline="always", cache=True)
def next_double(states, stream):
    """Uniform float64 in [0, 1) from the top 53 bits (same as PyXoroshiro.next_double)."""
    return float(next_u64(states, stream) >> uint64(11)) * _INV_2_53


OWN_ROW = 4  # row of take_stream's padded copy that holds the stream (64 bytes in)


@njit(inline="always", cache=True)
def take_stream(states, stream):
    """uint64[16, 2]: a thread-private copy of one stream, at row OWN_ROW; give it back with put_stream.

    Threads drawing from neighbouring rows of the shared states array write to one
    cache line on every draw (false sharing: measured 2-thread sweeps ~2x slower).
    The copy is padded so that its row OWN_ROW shares a cache line with nothing else;
    the draws are the same as from the shared array.
    """
    own = np.empty((16, 2), dtype=np.uint64)
    own[OWN_ROW, 0] = states[stream, 0]
    own[OWN_ROW, 1] = states[stream, 1]
    return own


@njit(inline="always", cache=True)
def put_stream(states, stream, own):
    """Write a stream taken with take_stream back into the states array."""
    states[stream, 0] = own[OWN_ROW, 0]
    states[stream, 1] = own[OWN_ROW, 1]


@njit(cache=True)
def uniforms(states: np.ndarray, stream: int, n: int) -> np.ndarray:
    """float64[n] uniforms from one stream (advances it); handy for tests and init."""
    out = np.empty(n, dtype=np.float64)
    for i in range(n):
        out[i] = next_double(states, stream)
    return out
