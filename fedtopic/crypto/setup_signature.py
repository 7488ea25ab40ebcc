"""The launcher's signature over a setup session: its combiner, meta and params, sealed secrets included.

Sealing needs only public keys, so without a signature an aggregator could hand a party a Paillier key pair (or a
mask secret) of its own, sealed for that party's X25519 key, with the public key in the meta: the party opened it,
found the meta it derives from what it opened, and encrypted its counts for the aggregator. Now the launcher (the
first party of consortium.toml) signs the session's canonical form with its Ethereum key, and every party checks
that signature against the launcher's address *from its own consortium.toml* before it opens or uses anything.

The signed message is EIP-191 ``personal_sign`` of ``b"fedtopic setup v1\\n" + session + b"\\n" + sha256(canonical
JSON of {combiner, meta, params})``, the signature itself left out of the params it covers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from eth_account import Account
from eth_account.messages import encode_defunct

SIGNATURE_PARAM = "launcher_signature"  # where the signature travels: one more (public) param of the session


def _message(session: str, combiner: str, meta: Mapping[str, Any], params: Mapping[str, Any]) -> bytes:
    body = {"combiner": combiner, "meta": dict(meta),
            "params": {k: v for k, v in params.items() if k != SIGNATURE_PARAM}}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    return b"fedtopic setup v1\n" + session.encode() + b"\n" + hashlib.sha256(canonical).digest()


def sign_setup(eth_private_key: bytes, session: str, combiner: str, meta: Mapping[str, Any],
               params: Mapping[str, Any]) -> str:
    """The launcher's signature (0x-hex) of the session as it opens it."""
    signed = Account.sign_message(encode_defunct(primitive=_message(session, combiner, meta, params)),
                                  eth_private_key)
    return "0x" + bytes(signed.signature).hex()


def setup_signed_by(address: str, session: str, combiner: str, meta: Mapping[str, Any],
                    params: Mapping[str, Any]) -> bool:
    """Whether ``params`` carry ``address``'s signature of exactly this session, combiner, meta and params."""
    signature = params.get(SIGNATURE_PARAM)
    if not isinstance(signature, str):
        return False
    try:
        message = _message(session, combiner, meta, params)
        return Account.recover_message(encode_defunct(primitive=message), signature=signature) == address
    except Exception:  # noqa: BLE001 - a malformed signature or unserialisable meta: not signed, whatever the cause
        return False
