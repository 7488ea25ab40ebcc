"""A consortium on the embedded chain in this process: keys, deployment, one channel client per party.

For ``fedtopic demo`` and ``fedtopic simulate --transport chain``; separate
processes use ``fedtopic chain up`` + ``fedtopic consortium deploy`` instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from web3 import Web3

from fedtopic.crypto.keys import PartyKeys, generate_party_keys
from fedtopic.ledger.channel import ChainChannel
from fedtopic.ledger.deploy import (
    Deployment,
    PartySpec,
    ensure_consortium,
    fund_accounts,
)
from fedtopic.ledger.embedded import EmbeddedChain
from fedtopic.ledger.rpc import Signer


@dataclass(frozen=True)
class ChainUsage:
    """What a run put on chain: transactions, calldata bytes and gas."""

    transactions: int
    calldata_bytes: int
    gas_used: int
    blocks: int


@dataclass
class ChainConsortium:
    """A deployed consortium and every party's channel client."""

    w3: Web3
    deployment: Deployment
    keys: list[PartyKeys]
    channels: list[ChainChannel]
    first_block: int


def embedded_consortium(party_ids: Sequence[str], cp: Mapping[str, Sequence[str]], shape: tuple[int, int], *, seed: int = 0) -> ChainConsortium:
    """Fresh embedded chain; deploy registry + channels, set CP, fund parties; channels ready to publish.

    Party keys are derived from ``seed`` (fine for a simulation, never for a deployment).
    """
    chain = EmbeddedChain()
    w3 = chain.web3()
    admin = Signer(w3, chain.faucet_key)
    keys = [generate_party_keys(pid, seed=seed.to_bytes(8, "big")) for pid in party_ids]
    fund_accounts(admin, [k.address for k in keys])
    deployment = ensure_consortium(admin, [PartySpec(k.party_id, k.address, k.x25519_public) for k in keys], cp)
    first_block = w3.eth.block_number + 1
    channels = [ChainChannel(w3, deployment.registry, k, shape=shape) for k in keys]
    return ChainConsortium(w3=w3, deployment=deployment, keys=keys, channels=channels, first_block=first_block)


def chain_usage(w3: Web3, from_block: int) -> ChainUsage:
    """Count the transactions, calldata and gas in blocks ``from_block``..latest."""
    latest = w3.eth.block_number
    txs = calldata = gas = 0
    for number in range(from_block, latest + 1):
        block = w3.eth.get_block(number, full_transactions=True)
        txs += len(block["transactions"])
        calldata += sum(len(tx.get("input", tx.get("data", b""))) for tx in block["transactions"])  # eth-tester says "data"
        gas += block["gasUsed"]
    return ChainUsage(transactions=txs, calldata_bytes=calldata, gas_used=gas, blocks=max(latest - from_block + 1, 0))
