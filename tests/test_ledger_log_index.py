"""`chain up`'s log index: eth_getLogs from the index answers exactly what eth-tester's receipt scan answers
(address, topic and block filters), follows reverts, is rebuilt when missing, and refuses bad filters."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from fedtopic.ledger.call_guard import READ
from fedtopic.ledger.local_nodes import embedded_faucet_key
from fedtopic.ledger.server import (
    LOG_INDEX_NAME,
    ChainHTTPServer,
    ChainService,
    to_json_rpc,
)

sys.path.insert(0, str(Path(__file__).parent))
from test_ledger_mcacs import Chain, Fig5, _publish_all  # noqa: E402


def _serve(service: ChainService):
    server = ChainHTTPServer("127.0.0.1", 0, service)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return server, thread


def _scan(service: ChainService, flt: dict) -> list:
    """eth-tester's own answer (a scan of every receipt), in the server's encoding (its middleware takes an
    address only as a list)."""
    if isinstance(flt.get("address"), str):
        flt = {**flt, "address": [flt["address"]]}
    with service._lock.hold(READ):
        return to_json_rpc(service._call("eth_getLogs", [flt])["result"])


def _indexed(service: ChainService, flt: dict) -> list:
    answer = service.handle({"jsonrpc": "2.0", "id": 1, "method": "eth_getLogs", "params": [flt]})
    assert "result" in answer, answer
    return answer["result"]


def _same(a: list, b: list, *, hashes: bool = True) -> bool:
    keys = ("address", "topics", "data", "blockNumber", "transactionHash", "logIndex") + (("blockHash",) if hashes else ())
    norm = lambda logs: [{k: (v.lower() if isinstance(v, str) else [t.lower() for t in v])  # noqa: E731
                          for k, v in log.items() if k in keys} for log in logs]
    return norm(a) == norm(b)


@pytest.fixture()
def published(tmp_path):
    service = ChainService(tmp_path / "chain", dev=True)
    server, thread = _serve(service)
    c = Fig5(Chain("chain_up", server.url, embedded_faucet_key()))
    for r in (1, 2, 3):
        _publish_all(c, r)
    yield service, server, c, tmp_path
    server.shutdown()
    service.close()


def test_index_answers_what_the_scan_answers(published):
    service, _, c, _ = published
    head = service.index.head
    channels = [ch.channel for ch in c.channels.values()]
    top = hex(head)
    filters = [
        {"fromBlock": "0x0", "toBlock": top},
        {"fromBlock": hex(head // 2), "toBlock": top},
        {"address": channels[0], "fromBlock": "0x0", "toBlock": top},
        {"address": channels[:2], "fromBlock": "0x0", "toBlock": top},
    ]
    some = _indexed(service, filters[2])
    assert some
    filters += [{"address": channels, "fromBlock": "0x0", "toBlock": top, "topics": [some[0]["topics"][0]]},
                {"fromBlock": "0x0", "toBlock": top, "topics": [None, some[0]["topics"][1]]}]
    for flt in filters:
        assert _same(_indexed(service, flt), _scan(service, flt)), flt
    # block tags and a block hash (eth-tester's middleware mishandles some of these; the index does not)
    assert _same(_indexed(service, {"address": channels[0], "fromBlock": "earliest", "toBlock": "latest"}), some)
    by_hash = _indexed(service, {"blockHash": some[0]["blockHash"]})
    assert by_hash and all(log["blockHash"] == some[0]["blockHash"] for log in by_hash)


def test_index_follows_a_revert_and_is_rebuilt_when_missing(published):
    service, server, c, tmp_path = published
    snap = service.handle({"jsonrpc": "2.0", "id": 1, "method": "evm_snapshot", "params": []})["result"]
    before = _indexed(service, {"fromBlock": "0x0", "toBlock": "latest"})
    _publish_all(c, 4)
    assert len(_indexed(service, {"fromBlock": "0x0", "toBlock": "latest"})) > len(before)
    service.handle({"jsonrpc": "2.0", "id": 2, "method": "evm_revert", "params": [snap]})
    assert _same(_indexed(service, {"fromBlock": "0x0", "toBlock": "latest"}), before)
    server.shutdown()
    service.close()
    (tmp_path / "chain" / LOG_INDEX_NAME).unlink()
    again = ChainService(tmp_path / "chain", dev=True)
    try:
        assert again.reindexed > 0
        # a replayed chain re-mines its blocks (new timestamps, so new block hashes); everything else is the same
        assert _same(_indexed(again, {"fromBlock": "0x0", "toBlock": "latest"}), before, hashes=False)
        assert _same(_indexed(again, {"fromBlock": "0x0", "toBlock": "latest"}),
                     _scan(again, {"fromBlock": "0x0", "toBlock": hex(again.index.head)}))
    finally:
        again.close()


@pytest.mark.parametrize("params", [[], [1], [{"topics": "x"}], [{"address": 5}], [{"fromBlock": "nope"}],
                                    [{"blockHash": "0x00", "fromBlock": "0x0"}], [{"topics": [None] * 5}]])
def test_bad_filters_are_invalid_params(params):
    service = ChainService()
    try:
        answer = service.handle({"jsonrpc": "2.0", "id": 1, "method": "eth_getLogs", "params": params})
        assert answer["error"]["code"] == -32602
    finally:
        service.close()


def test_readers_never_block_the_writer():
    """Whole-chain eth_getLogs in a loop while parties publish: every transaction goes through (an index that
    locked readers against the writer made publishes fail with a nonce error), and the index stays exact."""
    service = ChainService()
    server, _ = _serve(service)
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            _indexed(service, {"fromBlock": "0x0", "toBlock": "latest"})

    readers = [threading.Thread(target=reader) for _ in range(3)]
    try:
        c = Fig5(Chain("chain_up", server.url, embedded_faucet_key()))
        for t in readers:
            t.start()
        for r in (1, 2, 3):
            _publish_all(c, r)
    finally:
        stop.set()
        for t in readers:
            t.join(30)
        server.shutdown()
    head = hex(service.index.head)
    assert _same(_indexed(service, {"fromBlock": "0x0", "toBlock": head}),
                 _scan(service, {"fromBlock": "0x0", "toBlock": head}))
    service.close()
