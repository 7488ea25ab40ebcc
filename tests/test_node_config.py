"""Consortium config: a minimal file works, every mistake is reported at once, CP semantics (paper Fig. 5)."""

import re

import numpy as np
import pytest
from pydantic import ValidationError

from fedtopic.consortium.config import (
    ConsortiumConfig,
    load_consortium,
    save_consortium,
    validate_consortium,
)
from fedtopic.consortium.init import cp_from_consortia
from fedtopic.crypto.keys import generate_party_keys
from fedtopic.errors import ConfigError

KEYS = [generate_party_keys(f"p{i}", seed=b"config-tests") for i in range(1, 6)]



def _problems(message: str) -> list[str]:
    """The problems of a one-line "N problems: a; b; c" message."""
    assert "\n" not in message
    return re.sub(r"^\d+ problems: ", "", message).split("; ")

def _parties_toml(n=3):
    return "".join(
        f'[[parties]]\nid = "{k.party_id}"\naddress = "{k.address}"\nx25519_public = "{k.x25519_public.hex()}"\n\n'
        for k in KEYS[:n]
    )


def _raw(n=5, **extra):
    parties = [{"id": k.party_id, "address": k.address, "x25519_public": k.x25519_public.hex()} for k in KEYS[:n]]
    return {"name": "fig5", "parties": parties, **extra}


def test_minimal_file_loads_with_defaults(tmp_path):
    path = tmp_path / "consortium.toml"
    path.write_text('name = "mini"\n\n' + _parties_toml(3))
    cfg = load_consortium(path)
    assert cfg.party_ids == ("p1", "p2", "p3")
    assert cfg.chain.rpc == "embedded" and cfg.chain.registry is None
    assert cfg.algorithm.name == "dafed-lda" and cfg.algorithm.spec().options["beta"] == 0.01 and cfg.algorithm.iterations == 100
    assert cfg.algorithm.spec().options["alpha"] is None  # paper §8: alpha = 50/K (resolved by the LDA family)
    assert cfg.aggregator.key_bits == 2048 and cfg.aggregator.protection == "paillier-iphe"
    assert cfg.channels_readable_by("p2") == ("p2",)  # no [cp]: owners only
    assert cfg.party("p2").x25519_public_bytes == KEYS[1].x25519_public
    assert cfg.party("p2").display_name == "p2"


def test_full_file_roundtrips_through_save(tmp_path):
    raw = _raw(
        cp={"p1": ["p2"], "p2": ["p1"]},
        chain={"rpc": "http://127.0.0.1:8545", "chain_id": 31337, "registry": KEYS[0].address, "gas": {"max_fee_per_gas_gwei": 2.5}},
        algorithm={"name": "csfed-lda", "topics": 40, "random_delay": [0.5, 2.0], "options": {"alpha": 0.1, "steps": 5}},
        aggregator={"url": "https://agg.example:8443/api", "protection": "paillier-packed", "delta": 1.0, "key_bits": 3072},
        data={"dataset": "20newsgroups", "scheme": "dirichlet", "dirichlet_alpha": 0.3},
    )
    cfg = validate_consortium(raw)
    path = save_consortium(cfg, tmp_path / "sub" / "c.toml")
    again = load_consortium(path)
    assert again == cfg
    assert again.algorithm.random_delay == (0.5, 2.0) and again.chain.gas.max_fee_per_gas_gwei == 2.5


def test_four_mistakes_are_all_reported(tmp_path):
    bad_address = KEYS[2].address.lower()
    text = (
        'name = "broken"\n\n'
        + _parties_toml(3).replace(KEYS[2].address, bad_address)
        + '[cp]\np3 = ["p1", "p9"]\n\n'
        + "[algorithm]\ntopics = 0\n\n"
        + '[aggregator]\nprotection = "rot13"\n'
    )
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_consortium(path)
    lines = _problems(str(err.value))
    assert lines == [
        f"parties[2].address: not a checksummed address (did you mean {KEYS[2].address}?)",
        "algorithm.topics: Input should be greater than or equal to 2",
        "aggregator.protection: unknown protection 'rot13' (known: none, paillier-iphe, paillier-uphe, paillier-packed, "
            "mask)",
        "cp: channel 'p3' lists unknown reader 'p9'",
    ]


def test_cross_field_problems_reported_when_fields_are_fine():
    raw = _raw(3, cp={"p7": ["p1"], "p1": ["p2", "p2", "p8"]})
    raw["parties"].append(dict(raw["parties"][0], address=KEYS[4].address, x25519_public=KEYS[4].x25519_public.hex()))
    raw["parties"].append(dict(raw["parties"][1], id="p5"))
    with pytest.raises(ConfigError) as err:
        validate_consortium(raw)
    assert _problems(str(err.value)) == [
        "parties[3].id: same party id as parties[0]",
        "parties[4].address: same address as parties[1]",
        "parties[4].x25519_public: same x25519_public key as parties[1]",
        "cp: unknown channel owner 'p7'",
        "cp: channel 'p1' lists unknown reader 'p8'",
        "cp: channel 'p1' lists reader 'p2' twice",
    ]


@pytest.mark.parametrize(
    "section, value, message",
    [
        ("chain", {"rpc": "localhost:8545"}, "chain.rpc: not an http(s) URL"),
        ("chain", {"registry": "0x123"}, "chain.registry: not a checksummed address"),
        ("chain", {"max_chunk_bytes": 200_000}, "chain.max_chunk_bytes: Input should be less than or equal to 120000"),
        ("chain", {"rcp": "embedded"}, "chain.rcp: unknown setting (misspelt?)"),
        ("algorithm", {"name": "lda++"}, "algorithm.name: unknown algorithm 'lda++'; known: centralized-lda"),
        ("algorithm", {"random_delay": [3, 1]}, "algorithm.random_delay: must be [lo, hi] seconds"),
        ("algorithm", {"beta": 0.1}, "algorithm: beta: moved to [algorithm.options]"),
        ("algorithm", {"options": {"beta": 0}}, "algorithm: algorithm.options: beta must be > 0"),
        ("algorithm", {"options": {"stepz": 2}}, "algorithm: algorithm.options: dafed-lda has no option 'stepz'; its options are: alpha"),
        ("aggregator", {"key_bits": 1000}, "aggregator.key_bits: Paillier key_bits must be a multiple of 256"),
        ("aggregator", {"delta": 1.5}, "aggregator.delta: Input should be less than or equal to 1"),
        ("aggregator", {"straggler_deadline_seconds": -1}, "aggregator.straggler_deadline_seconds: Input should be greater than 0"),
        ("data", {"scheme": "random"}, "data.scheme: Input should be 'a', 'b', 'c' or 'dirichlet'"),
        ("parties", [], "parties: List should have at least 1 item"),
        ("name", "", "name: String should have at least 1 character"),
    ],
)
def test_each_field_is_validated(section, value, message):
    with pytest.raises(ConfigError) as err:
        validate_consortium({**_raw(2), section: value})
    assert str(err.value).startswith(message)


def test_party_field_errors_are_located():
    raw = _raw(2)
    raw["parties"][1] = {"id": "2bad", "address": KEYS[1].address, "x25519_public": "ab", "corpus_path": "x"}
    with pytest.raises(ConfigError) as err:
        validate_consortium(raw)
    assert _problems(str(err.value)) == [
        "parties[1].id: party id must be a letter then up to 31 letters, digits, '-' or '_'",
        "parties[1].x25519_public: must be 64 hex digits (a 32-byte X25519 public key)",
        "parties[1].corpus_path: unknown setting (misspelt?)",
    ]


def test_bad_files_are_one_line(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_consortium(tmp_path / "none.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text('name = "x\n')
    with pytest.raises(ConfigError, match=r"broken.toml is not valid TOML: .*line 1"):
        load_consortium(broken)


def test_fig5_cp_matrix():
    """Paper Fig. 5: consortia con1-2, con2-3, con4-5 give a symmetric CP with CP_ii = 1."""
    cfg = validate_consortium(_raw(5, cp=cp_from_consortia([["p1", "p2"], ["p2", "p3"], ["p4", "p5"]])))
    expected = np.array(
        [[1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [0, 1, 1, 0, 0], [0, 0, 0, 1, 1], [0, 0, 0, 1, 1]], dtype=bool
    )
    np.testing.assert_array_equal(cfg.cp_matrix(), expected)
    assert cfg.channels_readable_by("p1") == ("p1", "p2")
    assert cfg.channels_readable_by("p2") == ("p1", "p2", "p3")
    assert cfg.readers_of("p3") == ("p3", "p2")
    assert cfg.channels_readable_by("p5") == ("p4", "p5")
    with pytest.raises(ConfigError, match="unknown party 'p6'"):
        cfg.readers_of("p6")


def test_asymmetric_cp_and_owner_listed_explicitly():
    cfg = validate_consortium(_raw(3, cp={"p1": ["p3", "p1"]}))
    assert cfg.readers_of("p1") == ("p1", "p3")
    assert cfg.channels_readable_by("p3") == ("p1", "p3")
    assert not cfg.cp_matrix()[2, 0]  # p1 does not read p3's channel


def test_models_are_immutable():
    cfg = validate_consortium(_raw(2))
    assert isinstance(cfg, ConsortiumConfig)
    with pytest.raises(ValidationError, match="frozen"):
        cfg.name = "other"
