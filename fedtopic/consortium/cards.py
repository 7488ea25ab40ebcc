"""Keys made where they are used: each organisation runs ``consortium keygen`` on its own machine and hands out
only its *card*, the public half with a self-signature.

Before, ``consortium init`` wrote every party's key file into one folder, so whoever set the consortium up could
sign as any party, unwrap every channel key and compute every pairwise mask. As in Flower's SuperNode
authentication (each node makes its key pair, the SuperLink holds public keys only) and Fabric's per-organisation
MSPs, the setup now takes cards:

- ``DIR/<id>.key.json``: the party's secrets (``crypto.keys``, mode 0600), never copied anywhere;
- ``DIR/<id>.card.json``: ``{"format", "version", "party", "address", "x25519_public", "signature"}``, where the
  signature is the party's Ethereum key's EIP-191 ``personal_sign`` of ``card_message`` (the id, the address and
  the X25519 public key). It proves that whoever made the card holds the signing key and binds the X25519 key to
  it; an edited field (a swapped X25519 key, say) no longer verifies.

A card is public: it may travel by e-mail. What it cannot show is *which* organisation made it: the consortium
still checks each card's address out of band (a fingerprint read aloud), as with any public key.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from eth_account import Account
from eth_account.messages import encode_defunct

from fedtopic.consortium.config import PARTY_ID_RE
from fedtopic.crypto.keys import generate_party_keys, save_party_keys, write_secret
from fedtopic.errors import ConfigError

CARD_FORMAT = "fedtopic-party-card"
CARD_VERSION = 1
MAX_CARD_BYTES = 4096
CARD_SUFFIX = ".card.json"
KEY_SUFFIX = ".key.json"


@dataclass(frozen=True)
class PartyCard:
    """A party's public keys, signed by the party itself."""

    party: str
    address: str
    x25519_public: str  # 64 hex digits
    signature: str  # 0x + 130 hex digits

    def as_json(self) -> dict[str, object]:
        return {"format": CARD_FORMAT, "version": CARD_VERSION, "party": self.party, "address": self.address,
                "x25519_public": self.x25519_public, "signature": self.signature}

    def config_entry(self) -> dict[str, str]:
        """The card's ``[[parties]]`` entry of consortium.toml."""
        return {"id": self.party, "address": self.address, "x25519_public": self.x25519_public}


def card_message(party: str, address: str, x25519_public: str) -> bytes:
    """What a card's signature covers (one line per field, so no field can run into the next)."""
    return f"fedtopic party card v{CARD_VERSION}\nparty: {party}\naddress: {address}\nx25519: {x25519_public}".encode()


def make_card(party: str, eth_private_key: bytes, x25519_public: bytes) -> PartyCard:
    """The signed card of these keys."""
    account = Account.from_key(eth_private_key)
    message = card_message(party, account.address, x25519_public.hex())
    signed = Account.sign_message(encode_defunct(primitive=message), eth_private_key)
    return PartyCard(party, account.address, x25519_public.hex(), "0x" + bytes(signed.signature).hex())


def _field(data: dict, name: str, where: Path) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise ConfigError(f"card {where}: missing field '{name}'")
    return value


def read_card(path: str | os.PathLike[str]) -> PartyCard:
    """A card file, its signature checked; ConfigError in one line for a missing, damaged, edited or forged card."""
    where = Path(path)
    try:
        raw = where.read_bytes()
    except OSError as exc:
        raise ConfigError(f"card {where} cannot be read: {exc.strerror or exc}") from None
    if not raw.strip():
        raise ConfigError(f"card {where} is empty")
    if len(raw) > MAX_CARD_BYTES:
        raise ConfigError(f"card {where} is {len(raw):,} bytes; a card is under {MAX_CARD_BYTES:,}")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ConfigError(f"card {where} is not a JSON card (damaged, or not a card)") from None
    if not isinstance(data, dict) or data.get("format") != CARD_FORMAT:
        raise ConfigError(f"{where} is not a fedtopic party card (`fedtopic consortium keygen` makes them)")
    if data.get("version") != CARD_VERSION:
        raise ConfigError(f"card {where} has unsupported version {data.get('version')!r}")
    card = PartyCard(*(_field(data, name, where) for name in ("party", "address", "x25519_public", "signature")))
    if not PARTY_ID_RE.fullmatch(card.party):
        raise ConfigError(f"card {where}: party id {card.party[:40]!r} must be a letter then up to 31 letters, "
                          "digits, '-' or '_'")
    try:
        signer = Account.recover_message(encode_defunct(primitive=card_message(card.party, card.address,
                                                                                card.x25519_public)),
                                         signature=card.signature)
    except Exception:  # noqa: BLE001 - eth-account raises several types for a malformed signature
        signer = None
    if signer != card.address:
        raise ConfigError(f"card {where}: its signature does not verify for {card.party} ({card.address[:42]}); "
                          "the card was edited or not made by that key")
    return card


def check_cards(cards: Sequence[tuple[Path, PartyCard]], existing: Sequence[dict[str, str]] = ()) -> None:
    """ConfigError in one line if two cards (or a card and an existing party) share an id, address or X25519 key."""
    seen: dict[tuple[str, str], str] = {}
    for entry in existing:
        for key in ("id", "address", "x25519_public"):
            seen[key, str(entry[key]).lower()] = f"party {entry['id']} of the config"
    for path, card in cards:
        for key, value in card.config_entry().items():
            other = seen.get((key, value.lower()))
            if other is not None:
                what = {"id": "party id", "address": "address", "x25519_public": "X25519 key"}[key]
                raise ConfigError(f"card {path}: same {what} as {other}")
            seen[key, value.lower()] = f"card {path}"


@dataclass(frozen=True)
class KeygenResult:
    """What ``keygen`` wrote: the secret key file (0600) and the card to hand out."""

    key_path: Path
    card_path: Path
    card: PartyCard


def keygen(party: str, out_dir: Path, *, seed: bytes | None = None) -> KeygenResult:
    """Fresh keys for ``party`` in ``out_dir``: its key file (0600) and its card. Refuses to replace either.

    ``seed``: reproducible keys, for tests only (seeded keys are not secret)."""
    if not PARTY_ID_RE.fullmatch(party):
        raise ConfigError(f"party id {party[:40]!r} must be a letter then up to 31 letters, digits, '-' or '_'")
    out = Path(out_dir)
    key_path, card_path = out / f"{party}{KEY_SUFFIX}", out / f"{party}{CARD_SUFFIX}"
    for path in (key_path, card_path):
        if path.exists():
            raise ConfigError(f"{path} already exists; refusing to replace a party's keys")
    keys = generate_party_keys(party, seed=seed)
    card = make_card(party, keys.eth_private_key, keys.x25519_public)
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    save_party_keys(keys, key_path)
    card_path.write_text(json.dumps(card.as_json(), indent=2) + "\n", encoding="utf-8")
    return KeygenResult(key_path, card_path, card)


def admin_keygen(path: Path, *, seed: bytes | None = None) -> str:
    """A fresh registry admin (CA) key at ``path`` (hex, mode 0600), made on the admin's own machine; its address."""
    if path.exists():
        raise ConfigError(f"{path} already exists; refusing to replace the admin's key")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = generate_party_keys("admin", seed=seed).eth_private_key
    write_secret(path, (key.hex() + "\n").encode())
    return Account.from_key(key).address
