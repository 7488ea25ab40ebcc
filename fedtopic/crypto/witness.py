"""A party's signed statement of the aggregate it received: the parties' check that the aggregator gave every one
of them the same aggregate, and made up none.

After each round a party signs ``(session, round, sha256 of the aggregate's bytes)`` with its Ethereum key and
posts the statement (its *witness*) to the aggregator, before its next update. When the next round's aggregate
comes, the party reads every witness of the round before and checks each against the signer's address in its own
consortium.toml and against the digest it received itself: an aggregator that handed one party another aggregate
(or changed a cell of one) shows up as two digests for one round, or as a contributor whose witness it withholds.
The design is the echo step of reliable broadcast (Bracha 1987) over a relay that cannot forge signatures.
"""

from __future__ import annotations

import re

from eth_account import Account
from eth_account.messages import encode_defunct

DIGEST_RE = re.compile(r"^[0-9a-f]{64}$")


def _message(session: str, round: int, digest: str) -> bytes:
    return f"fedtopic aggregate v1\n{session}\n{round}\n{digest}".encode()


def sign_witness(eth_private_key: bytes, session: str, round: int, digest: str) -> str:
    """The signature (0x-hex) of this party's witness: it received the aggregate with sha256 ``digest``."""
    signed = Account.sign_message(encode_defunct(primitive=_message(session, round, digest)), eth_private_key)
    return "0x" + bytes(signed.signature).hex()


def witness_signed_by(address: str, session: str, round: int, digest: str, signature: str) -> bool:
    """Whether ``signature`` is ``address``'s witness of ``digest`` for ``round`` of ``session``."""
    if not DIGEST_RE.fullmatch(digest) or not isinstance(signature, str):
        return False
    try:
        return Account.recover_message(encode_defunct(primitive=_message(session, round, digest)),
                                       signature=signature) == address
    except Exception:  # noqa: BLE001 - a malformed signature is not a signature
        return False
