"""Pack many non-negative counts into one big-integer plaintext (for ``paillier-packed``).

Paillier plaintexts have ~2047 usable bits but a word-topic count needs ~17, so
encrypting one count per ciphertext wastes >99% of every (8 ms) encryption.
Packing puts ``slots_per_plaintext`` counts side by side, slot j at bits
[j*w, (j+1)*w). Adding ciphertexts adds plaintexts, i.e. adds every slot at
once, and no carry can cross a slot boundary as long as each slot's *sum* over
the P parties fits in w bits: w = bitlength(P * max_value). So the layout
depends on the number of summands, agreed before anyone encrypts.
(Beyond the paper, which encrypts one count per ciphertext; see DESIGN.md.)

This module only packs; ``paillier`` encrypts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fedtopic.crypto.errors import CodecError

MAX_SLOT_BITS = 63  # slot sums are returned as int64


@dataclass(frozen=True)
class PackingLayout:
    """How ``n_values`` counts in [0, max_value], summed over ``n_summands`` parties, are packed."""

    n_values: int
    max_value: int
    n_summands: int
    slot_bits: int
    slots_per_plaintext: int

    @property
    def n_plaintexts(self) -> int:
        """Number of packed plaintexts (= ciphertexts) for ``n_values`` counts."""
        return math.ceil(self.n_values / self.slots_per_plaintext)

    @property
    def max_slot_sum(self) -> int:
        """Largest legitimate slot value after summing ``n_summands`` packed vectors."""
        return self.max_value * self.n_summands


def packing_layout(n_values: int, *, max_value: int, n_summands: int, plaintext_bits: int) -> PackingLayout:
    """The densest safe layout: slot width bitlength(n_summands * max_value), as many slots as fit in plaintext_bits."""
    for name, value, low in (("n_values", n_values, 1), ("max_value", max_value, 1), ("n_summands", n_summands, 1),
                             ("plaintext_bits", plaintext_bits, 1)):  # fmt: skip
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise CodecError(f"packing: {name} must be an integer >= {low}, got {value!r}")
    slot_bits = (max_value * n_summands).bit_length()
    if slot_bits > min(MAX_SLOT_BITS, plaintext_bits):
        raise CodecError(f"packing: a slot needs {slot_bits} bits, more than {min(MAX_SLOT_BITS, plaintext_bits)}")
    return PackingLayout(n_values, max_value, n_summands, slot_bits, plaintext_bits // slot_bits)


def pack(values: np.ndarray, layout: PackingLayout) -> list[int]:
    """Pack a vector of shape (n_values,) with entries in [0, max_value] into ``layout.n_plaintexts`` integers."""
    arr = np.asarray(values)
    if arr.shape != (layout.n_values,) or not np.issubdtype(arr.dtype, np.integer):
        raise CodecError(f"packing: expected an integer vector of shape ({layout.n_values},), got {arr.shape} {arr.dtype}")
    if arr.size and (arr.min() < 0 or arr.max() > layout.max_value):
        raise CodecError(f"packing: values must lie in [0, {layout.max_value}]")
    w, slots = layout.slot_bits, layout.slots_per_plaintext
    padded = np.zeros(layout.n_plaintexts * slots, dtype=np.uint64)
    padded[: arr.size] = arr
    bits = ((padded[:, None] >> np.arange(w, dtype=np.uint64)) & np.uint64(1)).astype(np.uint8)  # (n, w), LSB first
    rows = np.packbits(bits.reshape(layout.n_plaintexts, slots * w), axis=1, bitorder="little")
    return [int.from_bytes(row.tobytes(), "little") for row in rows]


def unpack(plaintexts: list[int], layout: PackingLayout) -> np.ndarray:
    """Slot values (int64, shape (n_values,)) of packed plaintexts or of a sum of up to ``n_summands`` of them."""
    if len(plaintexts) != layout.n_plaintexts:
        raise CodecError(f"packing: expected {layout.n_plaintexts} plaintexts, got {len(plaintexts)}")
    w, slots = layout.slot_bits, layout.slots_per_plaintext
    used_bits = slots * w
    n_bytes = (used_bits + 7) // 8
    raw = bytearray()
    for p in plaintexts:
        if not isinstance(p, int) or p < 0 or p.bit_length() > used_bits:
            raise CodecError("packing: a plaintext overflows its slots (wrong key, layout or too many summands)")
        raw += p.to_bytes(n_bytes, "little")
    bits = np.unpackbits(np.frombuffer(bytes(raw), dtype=np.uint8).reshape(len(plaintexts), n_bytes), axis=1,
                         bitorder="little")[:, :used_bits]  # fmt: skip
    weights = np.uint64(1) << np.arange(w, dtype=np.uint64)
    values = (bits.reshape(-1, w).astype(np.uint64) * weights).sum(axis=1, dtype=np.uint64)[: layout.n_values]
    if values.size and values.max() > layout.max_slot_sum:
        raise CodecError(f"packing: a slot sum exceeds {layout.max_slot_sum} (more summands than the layout allows?)")
    return values.astype(np.int64)
