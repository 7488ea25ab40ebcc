"""Present a protection scheme through the aggregator's ``Combiner`` protocol (``fedtopic.network.combiners``).

``crypto`` does not import ``network``; the network layer passes its own
exception types in, and every ``CryptoError`` of a scheme becomes one of them
with the same one-line reason. ``RecoveryNeeded`` (a masked round lost parties)
passes through unchanged: the aggregator must ask the survivors for
``mask_recovery`` messages and call ``combine(..., recoveries=...)`` again.

Schemes whose combine is a fold (``mask``: ``running_sum``, ``fold``,
``finish``) also offer ``running``: the aggregator folds each accepted update
in as it arrives, so closing the round only finishes the sum instead of
reading and adding all P updates in the request that completes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fedtopic.crypto.protect.base import ProtectionScheme, RecoveryNeeded, RoundView
from fedtopic.errors import CryptoError


class RunningCombine:
    """One round's combine folded in update by update; ``result`` equals ``combine`` of the same updates."""

    def __init__(self, scheme: Any, meta: Mapping[str, Any], *, session: str, round: int,
                 error: type[Exception]) -> None:  # fmt: skip
        self.scheme, self.meta, self.session, self.round, self._error = scheme, meta, session, round, error
        self.total = scheme.running_sum(meta)
        self.indices: list[int] = []

    def add(self, payload: bytes, index: int, checked: Any = None) -> None:
        """Fold in party ``index``'s accepted update (``error`` if it does not fit the round). ``checked`` (what
        ``validate`` returned) is None for every scheme: the fold reads the payload in one pass."""
        if index in self.indices:
            raise self._error(f"party index {index} is already folded into round {self.round}")
        try:
            self.scheme.fold(self.total, payload, index, self.meta, round=self.round, session=self.session)
        except CryptoError as exc:
            raise self._error(str(exc)) from None
        self.indices.append(index)

    def result(self, view: RoundView) -> bytes | None:
        """The aggregate if every party of the session is folded in exactly once; None otherwise (combine then)."""
        if view.round != self.round or sorted(self.indices) != list(range(len(view.expected))) or \
                len(view.contributors) != len(view.expected):
            return None
        return self.scheme.finish(self.total, sorted(self.indices), self.meta, round=self.round,
                                  session=self.session)


class CombinerAdapter:
    """``scheme`` as a Combiner: check_meta -> ``invalid_meta``; validate / combine -> ``invalid_payload``."""

    def __init__(self, scheme: ProtectionScheme, *, invalid_payload: type[Exception],
                 invalid_meta: type[Exception]) -> None:  # fmt: skip
        self.scheme = scheme
        self.name = scheme.name
        self.min_contributors = scheme.min_contributors
        self._payload_error, self._meta_error = invalid_payload, invalid_meta

    def check_meta(self, meta: Mapping[str, Any]) -> None:
        try:
            self.scheme.check_meta(meta)
        except CryptoError as exc:
            raise self._meta_error(str(exc)) from None

    def max_update_bytes(self, meta: Mapping[str, Any]) -> int:
        """The largest update this session meta allows; ``invalid_meta`` if the meta is malformed."""
        try:
            return self.scheme.max_update_bytes(meta)
        except CryptoError as exc:
            raise self._meta_error(str(exc)) from None

    def validate(self, payload: bytes, meta: Mapping[str, Any], *, round: int | None = None,
                 session: str | None = None, sender: int | None = None) -> None:  # fmt: skip
        try:
            self.scheme.validate(payload, meta, round=round, session=session, sender=sender)
        except CryptoError as exc:
            raise self._payload_error(str(exc)) from None

    def validate_recovery(self, blob: bytes, meta: Mapping[str, Any], *, round: int, session: str,
                          sender: int, dropped: Sequence[int]) -> None:  # fmt: skip
        """``invalid_payload`` unless ``blob`` is ``sender``'s well-formed recovery for exactly ``dropped``."""
        check = getattr(self.scheme, "validate_recovery", None)
        if check is None:
            raise self._payload_error(f"protection {self.name!r} has no recovery messages")
        try:
            who, gone = check(blob, meta, round=round, session=session)
        except CryptoError as exc:
            raise self._payload_error(str(exc)) from None
        if who != sender or list(gone) != sorted(dropped):
            raise self._payload_error(f"recovery names sender {who} and dropped {list(gone)}; expected sender "
                                      f"{sender} and dropped {sorted(dropped)}")

    def running(self, meta: Mapping[str, Any], *, session: str, round: int) -> RunningCombine | None:
        """A fold of the round's updates as they arrive, or None if the scheme has none."""
        if not hasattr(self.scheme, "fold"):
            return None
        return RunningCombine(self.scheme, meta, session=session, round=round, error=self._payload_error)

    def combine(self, payloads: Sequence[bytes], ctx: RoundView, **kwargs: Any) -> bytes:
        try:
            return self.scheme.combine(payloads, ctx, **kwargs)
        except RecoveryNeeded:
            raise
        except CryptoError as exc:
            raise self._payload_error(str(exc)) from None
