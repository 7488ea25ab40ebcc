"""A party's signed statement of the aggregates it received: the parties' check that the aggregator gave every one
of them the same aggregates, and made up none.

A party signs ``(session, first round, sha256 of each aggregate's bytes from that round on)`` with its Ethereum key
and posts the statement (its *witness* of that span of rounds) to the aggregator before its next update. A sparse
session (CSFed-LDA's counts) witnesses every round, a span of one; a dense one (FedNMF, gFedNTM: a round per
mini-batch step) every ``k`` rounds, one signature and one request for ``k`` digests. When its next witness is
answered, the party reads every member's witness overlapping its own previous span and checks each against the
signer's address in its own consortium.toml and against the digests it received itself: an aggregator that handed
one party another aggregate (or changed a cell of one) shows up as two digests for one round, or as a contributor
whose witness it withholds. The design is the echo step of reliable broadcast (Bracha 1987) over a relay that
cannot forge signatures, batched as a signed list rather than a hash chain so that spans that start at different
rounds (a party that resumed) still compare round by round.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from eth_account import Account
from eth_account.messages import encode_defunct

DIGEST_RE = re.compile(r"^[0-9a-f]{64}$")
MAX_SPAN = 64
"""The most rounds one witness covers (its request stays a few kB)."""


@dataclass(frozen=True)
class Witness:
    """``party``'s signed statement: the aggregates of rounds ``first`` … ``first + len(digests) - 1`` had these
    sha256 digests (lowercase hex, one a round)."""

    party: str
    first: int
    digests: tuple[str, ...]
    signature: str

    @property
    def last(self) -> int:
        return self.first + len(self.digests) - 1

    def digest(self, round: int) -> str | None:
        """The digest this witness states for ``round`` (None outside its span)."""
        return self.digests[round - self.first] if self.first <= round <= self.last else None


def _message(session: str, first: int, digests: Sequence[str]) -> bytes:
    return f"fedtopic aggregates v2\n{session}\n{first}\n{','.join(digests)}".encode()


def sign_witness(eth_private_key: bytes, session: str, first: int, digests: Sequence[str]) -> str:
    """The signature (0x-hex) of this party's witness: it received the aggregates with sha256 ``digests`` in the
    rounds from ``first`` on."""
    signed = Account.sign_message(encode_defunct(primitive=_message(session, first, digests)), eth_private_key)
    return "0x" + bytes(signed.signature).hex()


def witness_signed_by(address: str, session: str, witness: Witness) -> bool:
    """Whether ``witness`` is signed by ``address`` for ``session`` (and well formed: 1 to ``MAX_SPAN`` digests)."""
    if not 1 <= len(witness.digests) <= MAX_SPAN or not all(isinstance(d, str) and DIGEST_RE.fullmatch(d)
                                                              for d in witness.digests):
        return False
    if not isinstance(witness.signature, str):
        return False
    try:
        return Account.recover_message(encode_defunct(primitive=_message(session, witness.first, witness.digests)),
                                       signature=witness.signature) == address
    except Exception:  # noqa: BLE001 - a malformed signature is not a signature
        return False
