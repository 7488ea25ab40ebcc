"""A link defined outside fedtopic: the aggregator over the standard library's ``urllib.request``, one connection
per request (a plugin test: ``FEDTOPIC_LINKS``, ``simulate --link`` and every session client reach it without a
line of fedtopic naming it). It counts its exchanges so that a test can see the run went through it."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from fedtopic.links import AggregatorAt, Answer, TransportFailure

EXCHANGES = [0]
_LOCK = threading.Lock()


class UrllibWire:
    def __init__(self, where: AggregatorAt) -> None:
        self.url, self.timeout = where.url.rstrip("/"), where.timeout
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy

    def exchange(self, method: str, path: str, *, body: bytes = b"", headers: Mapping[str, str],
                 params: Mapping[str, Any] | None = None, timeout: float | None = None) -> Answer:
        target = self.url + path + ("?" + urlencode(params) if params else "")
        request = urllib.request.Request(target, data=body or None, headers=dict(headers), method=method)
        with _LOCK:
            EXCHANGES[0] += 1
        try:
            with self._opener.open(request, timeout=self.timeout if timeout is None else timeout) as resp:
                return Answer(resp.status, resp.read(), resp.headers)
        except urllib.error.HTTPError as err:  # an answer all the same (4xx, 5xx)
            return Answer(err.code, err.read(), err.headers)
        except (OSError, urllib.error.URLError) as exc:
            raise TransportFailure(f"{type(exc).__name__}: {exc}") from None

    def close(self) -> None:
        """Nothing kept open."""


class UrllibLink:
    name = "urllib"
    mode = "sync"
    summary = "the aggregator over urllib.request, one connection per request"

    def connect(self, where: AggregatorAt) -> UrllibWire:
        return UrllibWire(where)
