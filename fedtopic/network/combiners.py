"""The data aggregator's maths (paper Fig. 3): pure functions from accepted payloads to one aggregate.

A ``Combiner`` knows one payload format. The aggregator calls ``check_meta``
when a session is opened, ``validate`` on every update before storing it (a
failure is a 422 and nothing is stored), and ``combine`` once when the round
closes, on the accepted payloads in the session's party order (not arrival
order, so floating-point sums are reproducible). No I/O, no clock, no state:
the same payloads give the same bytes.

A combiner whose combine is a sum may also offer ``running``: the round's sum
folded in update by update as they are accepted (``fold_update``), so that the
request completing the round only finishes it instead of reading and decoding
all P updates. ``validate`` then returns what it decoded, and the fold takes
that instead of decoding the payload a second time.

``COMBINERS`` maps the session's ``combiner`` name to an instance: the formats
in the clear that protection ``none`` uses (``none``: the bare count codec
below, which the node sends for counts; the update signature already binds
session and round, so the protect package's headered ``none`` form is not
registered; ``dense-sum``; iFTM's ``topic-merge``; the private vocabulary's
``threshold-reveal``), then the schemes every built-in protection adds (``Protection.schemes``: ``paillier-iphe``,
``paillier-uphe``, ``paillier-packed``, ``mask``) through ``CombinerAdapter``.
``registered_combiners`` adds the schemes of plugin protections
(``fedtopic.protections.registry``). ``mask`` may raise ``RecoveryNeeded``
from ``combine`` (the service then asks the survivors for recovery messages
and calls ``combine(..., recoveries=...)``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from fedtopic.crypto.codec import MAX_CELLS, MAX_COUNT, decode_counts, encode_counts
from fedtopic.crypto.protect import CombinerAdapter
from fedtopic.crypto.protect.base import scheme_code
from fedtopic.crypto.protect.sizes import codec_bound
from fedtopic.errors import ConfigError, CryptoError
from fedtopic.network.dense import DENSE_HEADER_MAX, DTYPES, MAX_ELEMENTS
from fedtopic.network.errors import InvalidMeta, InvalidPayload
from fedtopic.network.sparse import decode_array, encode_array, warm_up_soon
from fedtopic.protections.registry import BUILT_IN, get_protection, protection_names


@dataclass(frozen=True)
class RoundContext:
    """What a combiner may know about the round it combines.

    ``contributors`` are the parties whose payloads are passed, in the same
    order; ``expected`` is every party of the session (they differ when the
    straggler deadline closed the round, which mask-style combiners must know).
    """

    session: str
    round: int
    meta: Mapping[str, Any]
    contributors: tuple[str, ...]
    expected: tuple[str, ...]


class Combiner(Protocol):
    """One payload format and its aggregation rule."""

    name: str
    min_contributors: int  # a round with fewer updates is not combined (mask: 2, a sum of one hides nothing)

    def check_meta(self, meta: Mapping[str, Any]) -> None:
        """InvalidMeta unless ``meta`` describes payloads this combiner can take."""
        ...

    def max_update_bytes(self, meta: Mapping[str, Any]) -> int:
        """The largest update body a session with ``meta`` can legitimately carry (checked ``meta``)."""
        ...

    def validate(self, payload: bytes, meta: Mapping[str, Any], *, round: int | None = None,
                 session: str | None = None, sender: int | None = None) -> Any:
        """InvalidPayload unless ``payload`` is a well-formed update for ``round`` of ``session`` with ``meta``,
        sent by the party of index ``sender`` (a payload that names a party must name that one: checked at
        submission, so one member's bad update is refused with 422 and never fails the round's combine);
        returns what the check decoded (the running combine's input), or None."""
        ...

    def combine(self, payloads: Sequence[bytes], ctx: RoundContext) -> bytes:
        """The aggregate of validated ``payloads`` (at least one)."""
        ...


def _shape(meta: Mapping[str, Any], ndim: tuple[int, int], limit: int) -> tuple[int, ...]:
    """meta["shape"] as a tuple of positive ints with ndim in [lo, hi] and at most ``limit`` elements."""
    shape = meta.get("shape")
    lo, hi = ndim
    if (
        not isinstance(shape, (list, tuple))
        or not lo <= len(shape) <= hi
        or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in shape)
    ):
        dims = f"{lo}" if lo == hi else f"{lo} to {hi}"
        raise InvalidMeta(f"meta.shape must be a list of {dims} positive integers, got {shape!r}")
    if int(np.prod(shape, dtype=object)) > limit:
        raise InvalidMeta(f"meta.shape {list(shape)} has more than {limit} elements")
    return tuple(shape)


class CountSumCombiner:
    """``none``: plaintext sum of non-negative int count matrices N_p (V, K) in the sparse count codec.

    This is the paper's N_Σ = Σ_p N_p (Eq. 8) without protection, the baseline
    the encrypted schemes are measured against. meta = {"shape": [V, K]}.
    Negative, zero-stored or oversized counts cannot pass the codec's decoder.
    """

    name = "none"
    min_contributors = 1

    def check_meta(self, meta: Mapping[str, Any]) -> None:
        _shape(meta, (2, 2), MAX_CELLS)

    def max_update_bytes(self, meta: Mapping[str, Any]) -> int:
        v, k = _shape(meta, (2, 2), MAX_CELLS)
        return codec_bound(v, k)

    def validate(self, payload: bytes, meta: Mapping[str, Any], *, round: int | None = None,
                 session: str | None = None, sender: int | None = None) -> np.ndarray:
        """The decoded counts int64[V, K]."""
        v, k = _shape(meta, (2, 2), MAX_CELLS)
        try:
            return decode_counts(payload, expected_shape=(v, k))
        except CryptoError as exc:
            raise InvalidPayload(str(exc)) from None

    def combine(self, payloads: Sequence[bytes], ctx: RoundContext) -> bytes:
        v, k = _shape(ctx.meta, (2, 2), MAX_CELLS)
        total = np.zeros((v, k), dtype=np.int64)
        for payload in payloads:
            total += decode_counts(payload, expected_shape=(v, k))
        return _finish_counts(total)

    def running(self, meta: Mapping[str, Any], *, session: str, round: int) -> RunningSum:
        """Integer sums: folded in arrival order (exact, so the same bytes as ``combine``)."""
        v, k = _shape(meta, (2, 2), MAX_CELLS)
        return RunningSum(round, np.zeros((v, k), dtype=np.int64), ordered=False,
                          decode=lambda payload: self.validate(payload, meta), finish=_finish_counts)


def _finish_counts(total: np.ndarray) -> bytes:
    if total.size and int(total.max()) > MAX_COUNT:
        raise InvalidPayload(f"summed count {int(total.max())} exceeds the codec's {MAX_COUNT}")
    return encode_counts(total)


class DenseSumCombiner:
    """``dense-sum``: element-wise sum of arrays (NPY or their nonzero entries, see ``sparse``), for
    real-valued or signed updates; the aggregate goes back in the smaller form.

    meta = {"shape": [...] (1-4 dims), "dtype": "float64" | "float32" | "int64",
    "nonnegative": bool (default false)}. NaN and infinities are always refused;
    negatives only when ``nonnegative`` is set (e.g. plaintext counts). Sums are
    taken in float64 / int64 and returned in the session's dtype; averaging (FedAvg)
    is left to the parties, who learn the contributors from the aggregate's headers.
    """

    name = "dense-sum"
    min_contributors = 1

    def _spec(self, meta: Mapping[str, Any]) -> tuple[tuple[int, ...], str, bool]:
        shape = _shape(meta, (1, 4), MAX_ELEMENTS)
        dtype = meta.get("dtype", "float64")
        if dtype not in DTYPES:
            raise InvalidMeta(f"meta.dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        nonnegative = meta.get("nonnegative", False)
        if not isinstance(nonnegative, bool):
            raise InvalidMeta(f"meta.nonnegative must be true or false, got {nonnegative!r}")
        return shape, dtype, nonnegative

    def check_meta(self, meta: Mapping[str, Any]) -> None:
        self._spec(meta)

    def warm_up(self, meta: Mapping[str, Any]) -> None:
        """Start loading the bitmap codec's compiled code for the session's dtype in the background, once per
        dtype in this process (``sparse.warm_up_soon``: gFedNTM opens eight sessions a run), and return."""
        warm_up_soon(self._spec(meta)[1])

    def max_update_bytes(self, meta: Mapping[str, Any]) -> int:
        shape, dtype, _ = self._spec(meta)
        return DENSE_HEADER_MAX + int(np.prod(shape, dtype=object)) * np.dtype(dtype).itemsize

    def validate(self, payload: bytes, meta: Mapping[str, Any], *, round: int | None = None,
                 session: str | None = None, sender: int | None = None) -> np.ndarray:
        """The decoded array (``meta``'s shape and dtype)."""
        shape, dtype, nonnegative = self._spec(meta)
        arr = decode_array(payload, shape, dtype)
        if nonnegative and arr.size and arr.min() < 0:
            where = np.unravel_index(int(np.argmin(arr)), shape)
            raise InvalidPayload(f"negative value {arr.min()} at index {tuple(int(i) for i in where)}")
        return arr

    def combine(self, payloads: Sequence[bytes], ctx: RoundContext) -> bytes:
        shape, dtype, _ = self._spec(ctx.meta)
        total = np.zeros(shape, dtype=np.int64 if dtype == "int64" else np.float64)
        bound = _Int64Bound(dtype)
        for payload in payloads:
            arr = decode_array(payload, shape, dtype)
            bound.add(arr)
            total += arr
        return _finish_dense(total, dtype)

    def running(self, meta: Mapping[str, Any], *, session: str, round: int) -> RunningSum:
        """int64 folded in arrival order (exact); floats in the session's party order, so that the aggregate has
        the bits of ``combine``'s sum: an update waits, decoded, until every earlier party's is in (at most
        ``MAX_WAITING_BYTES`` of them)."""
        shape, dtype, _ = self._spec(meta)
        bound = _Int64Bound(dtype)

        def fold(total: np.ndarray, arr: np.ndarray) -> None:
            bound.add(arr)
            total += arr

        return RunningSum(round, np.zeros(shape, dtype=np.int64 if dtype == "int64" else np.float64),
                          ordered=dtype != "int64", decode=lambda payload: self.validate(payload, meta),
                          finish=lambda total: _finish_dense(total, dtype), fold=fold)


class _Int64Bound:
    """Σ over payloads of max |value|, exact in Python ints (int64 adds would wrap silently); InvalidPayload as
    soon as an int64 sum could overflow. Nothing to check for floats."""

    def __init__(self, dtype: str) -> None:
        self.dtype, self.bound = dtype, 0

    def add(self, arr: np.ndarray) -> None:
        if self.dtype == "int64" and arr.size:
            self.bound += max(abs(int(arr.max())), abs(int(arr.min())))
            if self.bound > np.iinfo(np.int64).max:
                raise InvalidPayload("int64 sum may overflow")


def _finish_dense(total: np.ndarray, dtype: str) -> bytes:
    """The aggregate's bytes: ``total`` in the session's dtype; InvalidPayload if a float32 sum overflows (its
    extremes checked by two reductions: no |total| array on the close, the gradient round's critical path)."""
    top = float(np.finfo(np.float32).max)
    if dtype == "float32" and total.size and (total.max() > top or total.min() < -top):
        raise InvalidPayload("float32 sum overflows")
    return encode_array(total.astype(dtype))


MAX_WAITING_BYTES = 256 * 2**20
"""Decoded updates an ordered ``RunningSum`` holds for an earlier party's to arrive. Beyond it the running sum
gives up and the close combines the stored updates, as before there were running sums, so a slow first party
of a large consortium costs no more memory than ``session_spec.session_memory`` allows for."""


class RunningSum:
    """One round's element-wise sum folded in as updates are accepted; ``result`` has the bytes ``combine`` gives
    for the same updates. ``ordered``: fold in party-index order (float sums: addition is not associative), an
    update arriving early waiting decoded (up to ``max_waiting`` bytes); else in arrival order (integers)."""

    def __init__(self, round: int, total: np.ndarray, *, ordered: bool, decode: Callable[[bytes], np.ndarray],
                 finish: Callable[[np.ndarray], bytes],
                 fold: Callable[[np.ndarray, np.ndarray], None] = lambda total, arr: total.__iadd__(arr),
                 max_waiting: int = MAX_WAITING_BYTES) -> None:
        self.round, self.total, self.ordered = round, total, ordered
        self._decode, self._finish, self._fold = decode, finish, fold
        self.indices: set[int] = set()
        self._waiting: dict[int, np.ndarray] = {}
        self._waiting_bytes, self._max_waiting = 0, max_waiting
        self._gave_up = False  # ordered, and the waiting updates would have passed max_waiting
        self._next = 0  # ordered: every index below it is folded in

    def add(self, payload: bytes, index: int, checked: Any = None) -> None:
        """Fold in party ``index``'s accepted update; ``checked``: its array as ``validate`` returned it."""
        if index in self.indices:
            raise InvalidPayload(f"party index {index} is already folded into round {self.round}")
        self.indices.add(index)
        if self._gave_up:
            return
        arr = checked if checked is not None else self._decode(payload)
        if not self.ordered:
            self._fold(self.total, arr)
            return
        if index != self._next and self._waiting_bytes + arr.nbytes > self._max_waiting:
            self._gave_up = True
            self._waiting.clear()
            return
        self._waiting[index] = arr
        self._waiting_bytes += arr.nbytes
        while self._next in self._waiting:
            arr = self._waiting.pop(self._next)
            self._waiting_bytes -= arr.nbytes
            self._fold(self.total, arr)
            self._next += 1

    def result(self, ctx: RoundContext) -> bytes | None:
        """The aggregate if every party of the session is folded in exactly once; None otherwise (combine then)."""
        if self._gave_up or ctx.round != self.round or len(ctx.contributors) != len(ctx.expected) or \
                self.indices != set(range(len(ctx.expected))) or self._waiting:
            return None
        return self._finish(self.total)


class VocabularyRendezvous:
    """``vocabulary``: a session that carries no updates, only the parties' posted vocabularies (``vocab align``).

    It has a combiner of its own so that the aggregator can tell it from a session of updates: a consortium under
    ``mask`` may hold a vocabulary rendezvous, never a ``none`` session of updates (``Aggregator.open_session``).
    meta = {}."""

    name = "vocabulary"
    min_contributors = 1

    def check_meta(self, meta: Mapping[str, Any]) -> None:
        if dict(meta):
            raise InvalidMeta("a vocabulary session's meta is empty ({})")

    def max_update_bytes(self, meta: Mapping[str, Any]) -> int:
        return 0

    def validate(self, payload: bytes, meta: Mapping[str, Any], *, round: int | None = None,
                 session: str | None = None, sender: int | None = None) -> None:
        raise InvalidPayload("a vocabulary session takes no updates")

    def combine(self, payloads: Sequence[bytes], ctx: RoundContext) -> bytes:
        raise InvalidPayload("a vocabulary session takes no updates")


def _protected(names: Sequence[str]) -> list[Combiner]:
    """The schemes the protections ``names`` add, as combiners (their errors become InvalidPayload/Meta)."""
    schemes = {s.name: s for name in names for s in get_protection(name).schemes()}
    return [CombinerAdapter(s, invalid_payload=InvalidPayload, invalid_meta=InvalidMeta) for s in schemes.values()]


def _threshold_reveal() -> Combiner:
    from fedtopic.network.threshold_reveal import ThresholdRevealCombiner

    return ThresholdRevealCombiner()


def _topic_merge() -> Combiner:
    from fedtopic.network.topic_merge import TopicMergeCombiner

    return TopicMergeCombiner()


COMBINERS: dict[str, Combiner] = {c.name: c for c in (CountSumCombiner(), DenseSumCombiner(), _topic_merge(),
                                                      VocabularyRendezvous(), _threshold_reveal(),
                                                      *_protected(BUILT_IN))}


def combiners_allowed(protection: str) -> frozenset[str] | None:
    """The combiners a consortium under ``protection`` may open sessions with (None: any): its own (its kinds' and
    its setup's), those of every protection under which the aggregator sees only the sum, the vocabulary
    rendezvous and the private vocabulary's threshold reveal. A consortium under ``none`` may use any."""
    chosen = get_protection(protection)
    if chosen.name == "none":
        return None
    stronger = {c for n in protection_names() if get_protection(n).secure_sum for c in get_protection(n).combiner_names()}
    return frozenset(chosen.combiner_names() | stronger | {VocabularyRendezvous.name, "threshold-reveal"})


def registered_combiners() -> dict[str, Combiner]:
    """``COMBINERS`` and the schemes of every plugin protection registered in this process (a plugin's scheme may
    not take a built-in combiner's name)."""
    out = dict(COMBINERS)
    codes: dict[int, str] = {}
    for combiner in _protected([n for n in protection_names() if n not in BUILT_IN]):
        known = COMBINERS.get(combiner.name)
        if known is not None and getattr(known, "scheme", None) is not getattr(combiner, "scheme", None):
            raise ConfigError(f"a plugin protection's scheme is named {combiner.name!r}, a built-in combiner")
        code = scheme_code(combiner.name)
        if codes.setdefault(code, combiner.name) != combiner.name:
            raise ConfigError(f"the plugin schemes {codes[code]!r} and {combiner.name!r} have the same wire code "
                              f"{code} (a hash of the name): rename one")
        out.setdefault(combiner.name, combiner)
    return out


def fold_update(running: Any, combiner: Combiner, meta: Mapping[str, Any], *, session: str, round: int,
                index: int, payload: bytes, checked: Any = None) -> Any:  # fmt: skip
    """Fold an accepted update into the round's running combine (``RunningSum``, ``CombinerAdapter.running``);
    the running combine to keep, or None when the combiner has none or the update did not fold (the close then
    combines the stored updates). ``checked``: what ``validate`` returned for this payload."""
    if running is None or running.round != round:
        start = getattr(combiner, "running", None)
        running = None if start is None else start(meta, session=session, round=round)
    if running is None:
        return None
    try:
        running.add(payload, index, checked)
    except InvalidPayload:
        return None
    return running


def get_combiner(name: str) -> Combiner:
    """The registered combiner ``name``; InvalidMeta naming the registered ones if there is none."""
    known = registered_combiners()
    try:
        return known[name]
    except KeyError:
        raise InvalidMeta(f"combiner {name!r} is not available here (registered: {', '.join(sorted(known))})") \
            from None
