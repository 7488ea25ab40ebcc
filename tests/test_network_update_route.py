"""The update route's two paths (``network.updates``): AuthGate answers a canonical update itself, FastAPI
answers any other; both give the same answers, and FastAPI's validation still refuses a malformed query."""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest

from fedtopic.crypto.codec import decode_counts, encode_counts
from fedtopic.crypto.keys import generate_party_keys
from fedtopic.network import routes, updates
from fedtopic.network.app import create_app
from fedtopic.network.schemas import SessionCreate
from fedtopic.network.settings import AggregatorSettings
from fedtopic.network.updates import canonical_update
from fedtopic.network.wire import (
    H_CONTRIBUTORS,
    request_headers,
    sha256_hex,
    update_headers,
)

with warnings.catch_warnings():  # starlette's TestClient on httpx 0.28 warns at import
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
KEYS = {p: generate_party_keys(p, seed=b"update-route") for p in ("p1", "p2")}
SHAPE = (3, 2)


@pytest.mark.parametrize("path, query, expected", [
    ("/v1/sessions/run/rounds/7/updates", b"", ("run", 7, 0.0)),
    ("/v1/sessions/run/rounds/7/updates", b"wait=2.5", ("run", 7, 2.5)),
    ("/v1/sessions/run/rounds/0/updates", b"wait=600", ("run", 0, 600.0)),
    ("/v1/sessions/run/rounds/2147483647/updates", b"wait=0.000", ("run", 2**31 - 1, 0.0)),
    ("/v1/sessions/run/rounds/7/updates", b"wait=600.5", None),  # above the route's bound
    ("/v1/sessions/run/rounds/7/updates", b"wait=-1", None),
    ("/v1/sessions/run/rounds/7/updates", b"wait=1e2", None),
    ("/v1/sessions/run/rounds/7/updates", b"wait=nan", None),
    ("/v1/sessions/run/rounds/7/updates", b"wait=1&wait=2", None),
    ("/v1/sessions/run/rounds/7/updates", b"other=1", None),
    ("/v1/sessions/run/rounds/2147483648/updates", b"", None),  # beyond the round numbers
    ("/v1/sessions/9run/rounds/7/updates", b"", None),  # not a session id
    ("/v1/sessions/run/rounds/7/recoveries", b"", None),
])
def test_only_canonical_updates_skip_fastapi(path, query, expected):
    assert canonical_update(path, query) == expected


@pytest.fixture()
def app_and_client(monkeypatch):
    """A fresh aggregator app with session "run" (p1, p2, counts, ``none``), a client, and which path served
    each update ("direct" or "fastapi")."""
    app = create_app(AggregatorSettings.build(parties={p: k.address for p, k in KEYS.items()},
                                              data_dir=Path(tempfile.mkdtemp(prefix="fedtopic-route-")),
                                              protection="none", max_wait_seconds=5.0))
    app.state.aggregator.open_session(SessionCreate(session_id="run", parties=["p1", "p2"], combiner="none",
                                                    meta={"shape": list(SHAPE)}), "p1")
    served: list[str] = []

    def spy(name, inner):
        async def answer(*args, **kwargs):
            served.append(name)
            return await inner(*args, **kwargs)
        return answer

    monkeypatch.setattr(updates, "answer_update", spy("direct", updates.answer_update))
    monkeypatch.setattr(routes, "answer_update", spy("fastapi", routes.answer_update))
    with TestClient(app) as client:
        yield app, client, served


def _post(client, party: str, round: int, payload: bytes, query: str = ""):
    headers = update_headers(KEYS[party], "run", round, payload, query.removeprefix("?"))  # the query is signed too
    return client.post(f"/v1/sessions/run/rounds/{round}/updates{query}", content=payload, headers=headers)


def _counts(party: str) -> bytes:
    return encode_counts(np.full(SHAPE, int(party[1:])))


def test_both_paths_give_the_same_receipts_and_aggregates(app_and_client):
    app, client, served = app_and_client
    answers = {}
    for round, (first, second) in enumerate((("", "?wait=0.5&extra=1"), ("?extra=1", "?wait=0.5"))):
        receipt = _post(client, "p1", round, _counts("p1"), first)
        closing = _post(client, "p2", round, _counts("p2"), second)
        assert receipt.status_code == 202 and closing.status_code == 200
        assert closing.headers[H_CONTRIBUTORS] == "p1,p2"
        answers[round] = receipt.json() | {"round": None}, closing.content
    assert served == ["direct", "fastapi", "fastapi", "direct"]
    assert answers[0] == answers[1]
    assert answers[0][0] == {"session_id": "run", "round": None, "party": "p1", "sha256": sha256_hex(_counts("p1")),
                             "bytes": len(_counts("p1")), "received": ["p1"], "missing": ["p2"],
                             "round_closed": False}
    np.testing.assert_array_equal(decode_counts(answers[0][1]), np.full(SHAPE, 3))

    late = _post(client, "p1", 2, _counts("p1"), "?wait=0.2")  # p2 never comes: the receipt, written first
    assert late.status_code == 202 and late.json()["missing"] == ["p2"] and served[-1] == "direct"
    assert app.state.aggregator.store.update_sha256("run", 2, "p1") == sha256_hex(_counts("p1"))


def test_a_refusal_on_the_direct_path_reads_as_on_the_other(app_and_client):
    _, client, served = app_and_client
    assert _post(client, "p1", 0, _counts("p1")).status_code == 202
    for query in ("", "?extra=1"):
        dup = _post(client, "p1", 0, encode_counts(np.zeros(SHAPE, dtype=np.int64)), query)
        assert dup.status_code == 409
        assert dup.json() == {"code": "duplicate_update", "sha256": sha256_hex(_counts("p1")),
                              "detail": "party 'p1' already submitted its update for round 0"}
    assert served == ["direct", "direct", "fastapi"]


def test_a_malformed_wait_still_gets_fastapis_422(app_and_client):
    _, client, served = app_and_client
    for query in ("?wait=abc", "?wait=-1", "?wait=601"):
        answer = _post(client, "p1", 0, _counts("p1"), query)
        assert answer.status_code == 422 and answer.json()["code"] == "invalid_request", answer.text
    assert served == []  # refused before the route ran: the update is not in
    assert _post(client, "p1", 0, _counts("p1")).status_code == 202


def test_the_query_is_signed_a_changed_wait_is_refused(app_and_client):
    """The whole request target is signed: an update signed for ``wait=0.5`` and sent with another wait, or with
    none, is 401 before anything is read; a signed GET's query likewise."""
    _, client, _ = app_and_client
    payload = _counts("p1")
    signed = update_headers(KEYS["p1"], "run", 0, payload, "wait=0.5")
    for query in ("?wait=25", "", "?wait=0.5&x=1"):
        answer = client.post(f"/v1/sessions/run/rounds/0/updates{query}", content=payload, headers=signed)
        assert answer.status_code == 401 and answer.json()["code"] == "bad_signature", query
    get = request_headers(KEYS["p1"], "GET", "/v1/sessions/run/rounds/0/aggregate?wait=0.1")
    assert client.get("/v1/sessions/run/rounds/0/aggregate?wait=9", headers=get).status_code == 401
