"""The wire format shared by the aggregator and its client: ids, headers, signed messages.

Every request carries ``X-Fedtopic-Party`` and ``X-Fedtopic-Signature``: an
EIP-191 personal-sign signature (eth-account ``encode_defunct`` +
``sign_message``) by the party's Ethereum key over one canonical UTF-8 text,
and ``X-Fedtopic-Content-Sha256``, the body's hash that the text carries: the
aggregator checks the signature before it reads the body, then the hash while
the body streams in.

Signing and recovery call libsecp256k1 (coincurve) on the EIP-191 hash directly, with the private key parsed once
per key: eth-account's ``sign_message`` parses the key and derives its public key at every call, about 0.13 ms of
pure Python per request against 0.02 ms, and a gFedNTM step signs 30 requests per party. The signatures are
eth-account's, byte for byte (``test_network_wire.py`` checks both ways).

* An update (the body of ``POST /v1/sessions/{s}/rounds/{r}/updates``) signs

      fedtopic-update/v2
      session=<s>
      round=<r>
      party=<id>
      sha256=<hex of the raw payload bytes>
      query=<the request's query string, as sent: "wait=5.000", or empty>

  Session, round and party are bound, so a captured update cannot be moved to
  another round or session; replaying it to its own round is a duplicate. The
  query (how long the sender waits on the line) is bound too.
* Every other signed request signs

      fedtopic-request/v2
      method=<GET|POST>
      target=<URL path and query string, as sent: "/v1/sessions/s/rounds/3/aggregate?wait=5.000">
      party=<id>
      timestamp=<unix seconds, integer>
      nonce=<32 hex digits>
      sha256=<hex of the raw body, b"" for GET>

  with ``X-Fedtopic-Timestamp`` and ``X-Fedtopic-Nonce`` headers; the
  aggregator refuses a timestamp outside its clock-skew window and a nonce it
  has already seen within that window.

Signatures are accepted only in their one canonical form, the one libsecp256k1 makes: ``0x`` and 130 lower-case
hex digits, r ‖ s ‖ v with v = 27 or 28 and s in the lower half of the group order (no high-s twin, no v of 0/1,
no upper case): one request has one valid signature.

Ids (session and party) are restricted to ``[A-Za-z][A-Za-z0-9_-]{0,63}`` so the
message and the URL path never need escaping.
"""

from __future__ import annotations

import functools
import hashlib
import re
import secrets
import time
from typing import Protocol

import coincurve
from eth_hash.auto import keccak
from eth_utils import to_checksum_address

ID_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"
ID_RE = re.compile(ID_PATTERN)
PAYLOAD_MEDIA_TYPE = "application/octet-stream"

H_PARTY = "X-Fedtopic-Party"
H_SIGNATURE = "X-Fedtopic-Signature"
H_TIMESTAMP = "X-Fedtopic-Timestamp"
H_NONCE = "X-Fedtopic-Nonce"
H_CONTRIBUTORS = "X-Fedtopic-Contributors"
H_MISSING = "X-Fedtopic-Missing"
H_CLOSE_REASON = "X-Fedtopic-Close-Reason"
H_SHA256 = "X-Fedtopic-Sha256"
H_CONTENT_SHA256 = "X-Fedtopic-Content-Sha256"  # the signed SHA-256 of the request body, checked while it streams


class SigningKeys(Protocol):
    """What signing needs from ``fedtopic.crypto.keys.PartyKeys``."""

    @property
    def party_id(self) -> str: ...

    @property
    def eth_private_key(self) -> bytes: ...


def sha256_hex(data: bytes) -> str:
    """Lower-case hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def update_message(session: str, round: int, party: str, payload_sha256: str, query: str = "") -> str:
    """The canonical text a party signs to submit an update (see module docstring)."""
    return (f"fedtopic-update/v2\nsession={session}\nround={round}\nparty={party}\nsha256={payload_sha256}\n"
            f"query={query}")


def request_message(method: str, target: str, party: str, timestamp: int, nonce: str, body_sha256: str) -> str:
    """The canonical text a party signs for any non-update request (see module docstring); ``target``: the path
    and, after a ``?``, the query string as sent."""
    return (
        f"fedtopic-request/v2\nmethod={method.upper()}\ntarget={target}\nparty={party}\n"
        f"timestamp={timestamp}\nnonce={nonce}\nsha256={body_sha256}"
    )


def eip191_hash(text: str) -> bytes:
    """keccak256 of the EIP-191 personal message ``text`` ("\\x19Ethereum Signed Message:\\n" + length + text)."""
    body = text.encode()
    return keccak(b"\x19Ethereum Signed Message:\n" + str(len(body)).encode() + body)


@functools.lru_cache(maxsize=64)
def _signer(eth_private_key: bytes) -> coincurve.PrivateKey:
    return coincurve.PrivateKey(eth_private_key)


_checksummed = functools.lru_cache(maxsize=1024)(to_checksum_address)  # the members' few addresses, 30 µs each


def sign_text(text: str, eth_private_key: bytes) -> str:
    """0x-hex 65-byte EIP-191 signature of ``text``: r ‖ s ‖ v, v = 27 + the recovery id (eth-account's)."""
    rsv = _signer(eth_private_key).sign_recoverable(eip191_hash(text), hasher=None)
    return "0x" + rsv[:64].hex() + f"{rsv[64] + 27:02x}"


_CANONICAL = re.compile(r"0x[0-9a-f]{130}")
_HALF_ORDER = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0  # secp256k1's n // 2


def recover_signer(text: str, signature: str) -> str | None:
    """The checksummed address that signed ``text``, or None unless ``signature`` is in its canonical form (0x and
    lower-case hex, v = 27 or 28, low s) and recovers (r and s in range)."""
    if not _CANONICAL.fullmatch(signature):
        return None
    rsv = bytes.fromhex(signature[2:])
    if rsv[64] not in (27, 28) or int.from_bytes(rsv[32:64], "big") > _HALF_ORDER:
        return None
    try:
        public = coincurve.PublicKey.from_signature_and_message(rsv[:64] + bytes([rsv[64] % 27]),
                                                               eip191_hash(text), hasher=None)
    except ValueError:  # coincurve: r or s zero or not below the group order, or no point recovers
        return None
    return _checksummed(keccak(public.format(compressed=False)[1:])[-20:])


def update_headers(keys: SigningKeys, session: str, round: int, payload: bytes, query: str = "") -> dict[str, str]:
    """Headers that authenticate ``payload`` as ``keys.party_id``'s update for ``round``, sent with ``query``."""
    digest = sha256_hex(payload)
    text = update_message(session, round, keys.party_id, digest, query)
    return {
        H_PARTY: keys.party_id,
        H_SIGNATURE: sign_text(text, keys.eth_private_key),
        H_CONTENT_SHA256: digest,
        "Content-Type": PAYLOAD_MEDIA_TYPE,
    }


def request_headers(keys: SigningKeys, method: str, target: str, body: bytes = b"") -> dict[str, str]:
    """Headers that authenticate one non-update request to ``target`` (path, and query as sent) with a fresh
    timestamp and nonce."""
    timestamp = int(time.time())
    nonce = secrets.token_hex(16)
    body_sha = sha256_hex(body)
    text = request_message(method, target, keys.party_id, timestamp, nonce, body_sha)
    return {
        H_PARTY: keys.party_id,
        H_SIGNATURE: sign_text(text, keys.eth_private_key),
        H_TIMESTAMP: str(timestamp),
        H_NONCE: nonce,
        H_CONTENT_SHA256: body_sha,
    }
