"""Party key files: generation, 0600 files, no silent overwrite, one clear line for every bad file."""

import json
import os
import stat

import pytest
from eth_account import Account
from eth_utils import is_checksum_address

from fedtopic.crypto.keys import (
    PartyKeys,
    generate_party_keys,
    load_party_keys,
    save_party_keys,
)
from fedtopic.errors import ConfigError, CryptoError


def test_generated_keys_are_valid_and_distinct():
    a, b = generate_party_keys("p1"), generate_party_keys("p1")
    assert is_checksum_address(a.address) and len(a.x25519_public) == 32
    assert a.address != b.address and a.x25519_public != b.x25519_public
    assert Account.from_key(a.eth_private_key).address == a.address


def test_seeded_keys_are_reproducible_per_party():
    assert generate_party_keys("p1", seed=b"s") == generate_party_keys("p1", seed=b"s")
    assert generate_party_keys("p1", seed=b"s").address != generate_party_keys("p2", seed=b"s").address
    assert generate_party_keys("p1", seed=b"s").address != generate_party_keys("p1", seed=b"t").address


def test_repr_hides_secrets():
    keys = generate_party_keys("p1", seed=b"s")
    text = repr(keys)
    assert keys.eth_private_key.hex() not in text and keys.x25519_private_key.hex() not in text
    assert "p1" in text


def test_invalid_key_material_is_refused():
    with pytest.raises(CryptoError, match="32 bytes"):
        PartyKeys("p1", b"\1" * 31, b"\1" * 32)
    with pytest.raises(CryptoError, match="secp256k1"):
        PartyKeys("p1", b"\0" * 32, b"\1" * 32)
    with pytest.raises(CryptoError, match="secp256k1"):
        PartyKeys("p1", b"\xff" * 32, b"\1" * 32)
    with pytest.raises(CryptoError, match="party_id"):
        PartyKeys("", b"\1" * 32, b"\1" * 32)


def test_save_load_roundtrip_with_private_mode(tmp_path):
    keys = generate_party_keys("p3")
    path = save_party_keys(keys, tmp_path / "keys" / "p3.key.json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_party_keys(path) == keys
    assert [p.name for p in path.parent.iterdir()] == ["p3.key.json"]  # no temp file left behind


def test_save_refuses_overwrite_unless_asked(tmp_path):
    path = tmp_path / "k.json"
    first, second = generate_party_keys("p1"), generate_party_keys("p1")
    save_party_keys(first, path)
    with pytest.raises(ConfigError, match="already exists; refusing to overwrite"):
        save_party_keys(second, path)
    assert load_party_keys(path) == first
    save_party_keys(second, path, overwrite=True)
    assert load_party_keys(path) == second
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def _write(path, data, mode=0o600):
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    os.chmod(path, mode)
    return path


def test_load_errors_are_one_clear_line(tmp_path):
    good = json.loads((save_party_keys(generate_party_keys("p1"), tmp_path / "good.json")).read_text())
    cases = {
        "does not exist": None,
        "not valid JSON": "{not json",
        "not a fedtopic party key file": {"hello": 1},
        "unsupported version": {**good, "version": 9},
        "missing field 'x25519_private_key'": {k: v for k, v in good.items() if k != "x25519_private_key"},
        "'eth_private_key' must be 64 hex digits": {**good, "eth_private_key": "zz" * 32},
        "do not match": {**good, "address": generate_party_keys("p1").address},
        "not a valid secp256k1": {**good, "eth_private_key": "00" * 32},
    }
    for i, (message, content) in enumerate(cases.items()):
        path = tmp_path / f"case{i}.json"
        if content is not None:
            _write(path, content)
        with pytest.raises(ConfigError) as err:
            load_party_keys(path)
        assert message in str(err.value) and "\n" not in str(err.value) and str(path) in str(err.value)


def test_load_refuses_world_readable_file(tmp_path):
    path = save_party_keys(generate_party_keys("p1"), tmp_path / "k.json")
    os.chmod(path, 0o644)
    with pytest.raises(ConfigError, match=r"has mode 0644; it must be private to its owner \(chmod 600"):
        load_party_keys(path)
    with pytest.raises(ConfigError, match="not a regular file"):
        load_party_keys(tmp_path)
