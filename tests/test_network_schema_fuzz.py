"""Schemathesis against the aggregator's own OpenAPI schema: no input, signed or not, gets a 5xx."""

from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from fedtopic.crypto.codec import encode_counts
from fedtopic.crypto.keys import generate_party_keys
from fedtopic.network.app import create_app
from fedtopic.network.schemas import SessionCreate
from fedtopic.network.settings import AggregatorSettings
from fedtopic.network.wire import request_headers, update_headers

with warnings.catch_warnings():  # starlette's TestClient on httpx 0.28 warns at import
    warnings.simplefilter("ignore")
    from starlette.testclient import (
        TestClient,  # the ASGI client schemathesis itself uses
    )

KEYS = {p: generate_party_keys(p, seed=b"fuzz") for p in ("p1", "p2")}
APP = create_app(AggregatorSettings.build(parties={p: k.address for p, k in KEYS.items()},
                                          data_dir=Path(tempfile.mkdtemp(prefix="fedtopic-fuzz-")),
                                          protection="none", max_body_bytes=64 * 1024,
                                          max_wait_seconds=0.1))  # long-polls must not stall the fuzzer
APP.state.aggregator.open_session(SessionCreate(session_id="fz", parties=["p1", "p2"], combiner="none",
                                                meta={"shape": [3, 2]}), "p1")
APP.state.aggregator.submit("fz", 0, "p2", encode_counts([[1, 0], [0, 2], [0, 0]]))
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)
CLIENT = TestClient(APP)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # starlette TestClient on httpx
FUZZ = settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))


@schema.parametrize()
@FUZZ
def test_unsigned_inputs_never_5xx(case) -> None:
    response = case.call()
    case.validate_response(response, checks=[not_a_server_error])


@schema.parametrize()
@FUZZ
def test_signed_inputs_on_a_live_session_never_5xx(case) -> None:
    """The same generated inputs, but validly signed by p1 and aimed at the open session ``fz``."""
    params = dict(case.path_parameters or {})
    if "session_id" in params:
        params["session_id"] = "fz"
    path = case.path.format(**params)
    body = case.body if isinstance(case.body, (bytes, dict, list, str, int, float)) else None
    raw = body if isinstance(body, bytes) else (b"" if body is None else json.dumps(body).encode())
    if path.endswith("/updates"):
        rnd = str(params.get("round", "0"))
        headers = update_headers(KEYS["p1"], "fz", int(rnd) if rnd.isdigit() else 0, raw)
    else:
        headers = request_headers(KEYS["p1"], case.method, path, raw)
        headers["Content-Type"] = "application/json"
    response = CLIENT.request(case.method, path, params=case.query, content=raw, headers=headers)
    assert response.status_code < 500, (case.method, path, response.status_code, response.text[:300])
    if response.status_code >= 400:
        assert set(response.json()) >= {"code", "detail"}
