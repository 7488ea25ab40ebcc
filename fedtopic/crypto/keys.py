"""A party's private keys: an Ethereum account (signs transactions and requests)
and an X25519 key (receives wrapped channel keys, see ``envelope``).

The key file is JSON, mode 0600, and never leaves the party. The consortium
config only holds the public halves (address, X25519 public key).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from eth_account import Account

from fedtopic.errors import ConfigError, CryptoError

KEY_FILE_FORMAT = "fedtopic-party-key"
KEY_FILE_VERSION = 1
_SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141


@dataclass(frozen=True)
class PartyKeys:
    """One party's secret keys; ``repr`` never shows them."""

    party_id: str
    eth_private_key: bytes = field(repr=False)
    x25519_private_key: bytes = field(repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.party_id, str) or not self.party_id:
            raise CryptoError("party_id must be a non-empty string")
        for name in ("eth_private_key", "x25519_private_key"):
            value = getattr(self, name)
            if not isinstance(value, bytes) or len(value) != 32:
                raise CryptoError(f"{name} must be 32 bytes")
        scalar = int.from_bytes(self.eth_private_key, "big")
        if not 0 < scalar < _SECP256K1_N:
            raise CryptoError("eth_private_key is not a valid secp256k1 private key")

    @property
    def address(self) -> str:
        """The checksummed Ethereum address of ``eth_private_key``."""
        return Account.from_key(self.eth_private_key).address

    @property
    def x25519_public(self) -> bytes:
        """The 32-byte X25519 public key that channel keys are wrapped for."""
        return X25519PrivateKey.from_private_bytes(self.x25519_private_key).public_key().public_bytes_raw()

    @property
    def noise_secret(self) -> bytes:
        """32 bytes only this party can compute: they key its privacy mechanisms' randomness (DP releases, iFTM's
        privatisation), so that peers who know the consortium's public seed cannot regenerate the noise."""
        return hmac.new(self.eth_private_key, b"fedtopic/noise-secret/v1", hashlib.sha256).digest()


def _seeded_bytes(seed: bytes, party_id: str, label: str, counter: int) -> bytes:
    material = b"fedtopic/party-key/v1\x00" + len(seed).to_bytes(4, "big") + seed
    material += party_id.encode() + b"\x00" + label.encode() + counter.to_bytes(4, "big")
    return hashlib.sha256(material).digest()


def generate_party_keys(party_id: str, *, seed: bytes | None = None) -> PartyKeys:
    """Fresh keys for ``party_id``; ``seed`` makes them reproducible (tests only: seeded keys are not secret)."""
    if seed is None:
        x_key = os.urandom(32)
        eth_key = os.urandom(32)
        while not 0 < int.from_bytes(eth_key, "big") < _SECP256K1_N:  # probability ~2^-128
            eth_key = os.urandom(32)
        return PartyKeys(party_id, eth_key, x_key)
    x_key = _seeded_bytes(seed, party_id, "x25519", 0)
    for counter in range(64):  # a candidate is out of range with probability ~2^-128
        eth_key = _seeded_bytes(seed, party_id, "secp256k1", counter)
        if 0 < int.from_bytes(eth_key, "big") < _SECP256K1_N:
            return PartyKeys(party_id, eth_key, x_key)
    raise CryptoError("could not derive a secp256k1 key from the seed")  # unreachable in practice


def _to_json(keys: PartyKeys) -> str:
    return json.dumps(
        {
            "format": KEY_FILE_FORMAT,
            "version": KEY_FILE_VERSION,
            "party_id": keys.party_id,
            "address": keys.address,
            "x25519_public": keys.x25519_public.hex(),
            "eth_private_key": keys.eth_private_key.hex(),
            "x25519_private_key": keys.x25519_private_key.hex(),
        },
        indent=2,
    ) + "\n"


def write_secret(path: Path, data: bytes, *, replace: bool = False) -> Path:
    """``data`` to a new file ``path`` only its owner can read (mode 0600 from creation). An existing file is an
    error, or with ``replace`` removed first, so a secret never inherits an older file's looser mode."""
    if replace:
        path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return path


def read_hex_key(path: Path, what: str) -> bytes:
    """The 32-byte private key written as hex (``0x`` allowed) in ``path``; ConfigError naming ``what`` if not."""
    try:
        key = bytes.fromhex(path.read_text(encoding="utf-8").strip().removeprefix("0x"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{what} {path}: cannot read a hex private key ({exc})") from None
    if len(key) != 32:
        raise ConfigError(f"{what} {path}: a private key is 32 bytes, found {len(key)}")
    return key


def save_party_keys(keys: PartyKeys, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Write ``keys`` to ``path`` as JSON with mode 0600 (atomically); refuse to replace a file unless ``overwrite``."""
    target = Path(path)
    if target.exists() and not overwrite:
        raise ConfigError(f"key file {target} already exists; refusing to overwrite it")
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(_to_json(keys))
            fh.flush()
            os.fsync(fh.fileno())
        if overwrite:
            os.replace(tmp, target)
        else:
            try:
                os.link(tmp, target)  # fails atomically if the target appeared meanwhile
            except FileExistsError:
                raise ConfigError(f"key file {target} already exists; refusing to overwrite it") from None
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _hex32(data: dict, name: str, where: Path) -> bytes:
    value = data.get(name)
    if value is None:
        raise ConfigError(f"key file {where}: missing field '{name}'")
    try:
        raw = bytes.fromhex(value) if isinstance(value, str) else b""
    except ValueError:
        raw = b""
    if len(raw) != 32:
        raise ConfigError(f"key file {where}: '{name}' must be 64 hex digits")
    return raw


def load_party_keys(path: str | os.PathLike[str]) -> PartyKeys:
    """Read a key file written by ``save_party_keys``; ConfigError if missing, corrupt or readable by others."""
    where = Path(path)
    try:
        st = where.stat()
    except FileNotFoundError:
        raise ConfigError(f"key file {where} does not exist") from None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"key file {where} is not a regular file")
    if os.name == "posix" and st.st_mode & 0o077:
        mode = stat.S_IMODE(st.st_mode)
        raise ConfigError(f"key file {where} has mode {mode:04o}; it must be private to its owner (chmod 600 {where})")
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"key file {where} is not valid JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != KEY_FILE_FORMAT:
        raise ConfigError(f"key file {where} is not a fedtopic party key file")
    if data.get("version") != KEY_FILE_VERSION:
        raise ConfigError(f"key file {where} has unsupported version {data.get('version')!r}")
    party_id = data.get("party_id")
    if not isinstance(party_id, str) or not party_id:
        raise ConfigError(f"key file {where}: missing field 'party_id'")
    try:
        keys = PartyKeys(party_id, _hex32(data, "eth_private_key", where), _hex32(data, "x25519_private_key", where))
    except CryptoError as exc:
        raise ConfigError(f"key file {where}: {exc}") from None
    if data.get("address") != keys.address or data.get("x25519_public") != keys.x25519_public.hex():
        raise ConfigError(f"key file {where}: public keys do not match the private keys (corrupt file)")
    return keys
