"""Channel keys on chain: the owner wraps each key epoch's AES key for every reader CP allows.

Read control on an EVM chain is cryptographic (DESIGN.md, "MCACS on an EVM chain"): CP in the
registry says who *may* read; the owner makes that true by wrapping the channel key for exactly
those readers' X25519 keys. Any change of the reader set starts a new epoch with a fresh key, so a
revoked reader cannot open anything published afterwards (it keeps what it could read before).
"""

from __future__ import annotations

from web3 import Web3

from fedtopic.crypto.envelope import (
    new_channel_key,
    unwrap_channel_key,
    wrap_channel_key,
)
from fedtopic.ledger.contracts import CHANNEL, REGISTRY
from fedtopic.ledger.errors import NotAReader, TransactionRejected
from fedtopic.ledger.rpc import Signer, contract_at, with_retries


def channel_label(chain_id: int, channel: str) -> str:
    """The name the envelope binds keys and payloads to: chain and channel address (no replay elsewhere)."""
    return f"eip155:{chain_id}:{channel.lower()}"


def ensure_channel_key(owner: Signer, registry: str, *, force: bool = False) -> int | None:
    """Rotate ``owner``'s channel key if it was wrapped for an older CP row (or there is none); return the new epoch.

    Returns None when the key already matches the registry's CP version and ``force`` is False.
    The contract rejects a rotation for a CP row that changed meanwhile (KeyBehindCP); that is retried once.
    """
    reg = contract_at(owner.w3, REGISTRY, registry).functions
    _, _, channel, _, _ = with_retries(reg.member(owner.address).call, what="reading the registry")
    chan = contract_at(owner.w3, CHANNEL, channel).functions
    label = channel_label(with_retries(lambda: owner.w3.eth.chain_id, what="reading the chain id"), channel)
    for attempt in (1, 2):
        version = with_retries(reg.cpVersion(owner.address).call, what="reading CP")
        epoch = with_retries(chan.keyEpoch().call, what="reading the key epoch")
        if epoch > 0 and not force and with_retries(chan.keyCpVersion().call, what="reading the key epoch") == version:
            return None
        readers = [Web3.to_checksum_address(a) for a in with_retries(reg.readersOf(owner.address).call, what="reading CP")]
        key = new_channel_key()
        wrapped = [wrap_channel_key(key, bytes(with_retries(reg.member(r).call, what="reading the registry")[1]), channel=label,
                                    epoch=epoch + 1) for r in readers]
        try:
            owner.transact(chan.rotateKey(readers, wrapped, version), what=f"rotating the key of channel {channel}")
            return epoch + 1
        except TransactionRejected as exc:
            if exc.reason != "KeyBehindCP" or attempt == 2:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def fetch_channel_key(w3: Web3, chain_id: int, channel: str, epoch: int, reader: str, x25519_private: bytes) -> bytes:
    """Unwrap ``reader``'s copy of the key of ``channel`` at ``epoch``.

    Raises NotAReader if the owner stored no key for ``reader`` in that epoch, DecryptionError
    (opaque) if the stored key does not open with ``x25519_private``.
    """
    chan = contract_at(w3, CHANNEL, channel).functions
    wrapped = bytes(with_retries(chan.wrappedKey(epoch, reader).call, what="reading a wrapped key"))
    if not wrapped:
        raise NotAReader(f"{reader} holds no key for channel {channel} at key epoch {epoch}")
    return unwrap_channel_key(wrapped, x25519_private, channel=channel_label(chain_id, channel), epoch=epoch)
