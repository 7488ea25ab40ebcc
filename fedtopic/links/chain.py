"""The ``chain`` link: an asynchronous consortium on the embedded chain in this process (keys, the registry and one
channel contract per party deployed, one channel client per party), for ``fedtopic demo`` and ``simulate --link
chain``. Separate processes use ``fedtopic chain up`` + ``fedtopic consortium deploy`` and ``node run`` instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
from fedtopic.links.base import Channels


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


class ChainBoard:
    """The ``chain`` link's board: a fresh embedded consortium; ``publication()`` is what the run put on chain."""

    def __init__(self, where: Channels) -> None:
        self.consortium = embedded_consortium(where.parties, where.readers, where.shape, seed=where.seed)
        self._by_party = {c.party_id: c for c in self.consortium.channels}

    def channel(self, party: str) -> ChainChannel:
        return self._by_party[party]

    def publication(self) -> Mapping[str, Any]:
        usage = chain_usage(self.consortium.w3, self.consortium.first_block)
        return {"chain_transactions": usage.transactions, "chain_calldata_bytes": usage.calldata_bytes,
                "chain_gas_used": usage.gas_used, "chain_blocks": usage.blocks}

    def close(self) -> None:
        """Nothing to release: the embedded chain lives in this process's memory."""


class ChainLink:
    """The ``chain`` link (asynchronous)."""

    name = "chain"
    mode = "async"
    summary = "an embedded EVM chain in this process: the real contracts, AES-GCM channels, blocks and gas"

    def connect(self, where: Channels) -> ChainBoard:
        return ChainBoard(where)


CHAIN = ChainLink()
