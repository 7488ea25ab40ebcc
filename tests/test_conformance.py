"""The conformance kit (``fedtopic.testing``, issue 65) on every built-in protection and engine and on the test
plugins, and against broken plugins it must catch: a codec whose sum is off, an engine whose failures do not name
the party."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from fedtopic.engines.base import Engine
from fedtopic.engines.registry import engine_names
from fedtopic.protections.base import Protection
from fedtopic.protections.mask import MaskProtection
from fedtopic.protections.registry import BUILT_IN
from fedtopic.testing import ConformanceError, check_engine, check_protection

TESTS = Path(__file__).resolve().parent


@pytest.fixture()
def plugins(monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("FEDTOPIC_PROTECTIONS", "offset-mask=plugins.offset_mask:OffsetMask,"
                                               "off-by-one=test_conformance:OffByOne,no-codec=test_conformance:NoCodec")
    monkeypatch.setenv("FEDTOPIC_ENGINES", "sequential=plugins.sequential_engine:SequentialEngine,"
                                           "unnamed=test_conformance:UnnamedFailures")


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_built_in_protection_passes_the_kit(name):
    passed = check_protection(name)
    assert passed[0] == "describes itself" and "every party decodes the exact sum" in passed


def test_the_plugin_protection_passes_and_a_broken_one_is_named_with_its_clause(plugins):
    assert "every party decodes the exact sum" in check_protection("offset-mask")
    with pytest.raises(ConformanceError, match="protection 'off-by-one' breaks 'every party decodes the exact sum'"):
        check_protection("off-by-one")


def test_a_protection_that_forgot_its_codec_is_one_line_naming_the_clause(plugins):
    with pytest.raises(ConformanceError, match="protection 'no-codec' breaks 'makes a codec for every party': "
                                               "NotImplementedError"):
        check_protection("no-codec")


def test_two_plugin_schemes_whose_wire_codes_meet_are_refused_at_registration(monkeypatch):
    """Wire codes are a hash of the scheme's name: ``zsum-10`` and ``zsum-12`` hash to the same byte, and the
    aggregator's combiner registry refuses the pair in one line instead of mixing their updates up."""
    from fedtopic.crypto.protect.base import scheme_code
    from fedtopic.errors import ConfigError
    from fedtopic.network.combiners import registered_combiners

    assert scheme_code("zsum-10") == scheme_code("zsum-12")
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("FEDTOPIC_PROTECTIONS", "zsum-10=test_conformance:Zsum10,zsum-12=test_conformance:Zsum12")
    with pytest.raises(ConfigError, match="'zsum-10' and 'zsum-12' have the same wire code"):
        registered_combiners()


@pytest.mark.parametrize("name", [n for n in engine_names() if n != "ray"])  # ray: tests/test_engines_ray.py (a cluster)
def test_every_in_process_engine_passes_the_kit(name):
    assert len(check_engine(name)) == 6


def test_the_plugin_engine_passes_and_one_whose_failures_name_nobody_is_caught(plugins):
    assert len(check_engine("sequential")) == 6
    with pytest.raises(ConformanceError, match="engine 'unnamed' breaks 'a party's failure is a TrainingError"):
        check_engine("unnamed")


# broken plugins the kit must catch ---------------------------------------------------------------------------------


class _OffByOneCodec:
    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.meta, self.ctx = inner, inner.name, inner.meta, inner.ctx

    def encode(self, n_wk: np.ndarray, round: int) -> bytes:
        return self.inner.encode(n_wk, round)

    def decode(self, blob: bytes, round: int) -> np.ndarray:
        out = self.inner.decode(blob, round)
        out[0, 0] += 1
        return out

    def close(self) -> None:
        self.inner.close()


class OffByOne(MaskProtection):
    name: ClassVar[str] = "off-by-one"
    summary: ClassVar[str] = "mask whose decoded sum is one too high in a cell (a broken plugin)"
    kinds: ClassVar[frozenset[str]] = frozenset({"counts"})

    def combiner(self, kind: str) -> str:
        return "mask"

    def counts(self, ctx: Any, *, pool: bool = False) -> Any:
        return _OffByOneCodec(super().counts(ctx, pool=pool))


class NoCodec(Protection):
    name: ClassVar[str] = "no-codec"
    summary: ClassVar[str] = "a protection that never wrote counts() (a broken plugin)"


class UnnamedFailures(Engine):
    name: ClassVar[str] = "unnamed"
    summary: ClassVar[str] = "runs parties in turn and lets their errors out as they are (a broken plugin)"

    def run(self, names, work, *, slots, address=None):
        import threading

        one = threading.BoundedSemaphore(1)
        return [work(i, one) for i in range(len(names))]


class _NamedScheme:
    min_contributors = 2

    def __init__(self, name: str) -> None:
        self.name = name


class Zsum10(Protection):
    name: ClassVar[str] = "zsum-10"
    summary: ClassVar[str] = "a scheme name whose wire code meets zsum-12's"

    def schemes(self):
        return (_NamedScheme(self.name),)


class Zsum12(Zsum10):
    name: ClassVar[str] = "zsum-12"
