"""consortium init: config + private key files, CP from a CSV matrix, no overwriting."""

import re
import stat

import pytest

from fedtopic.consortium.config import load_consortium
from fedtopic.consortium.init import cp_from_consortia, init_consortium, parse_cp_file
from fedtopic.crypto.envelope import (
    new_channel_key,
    unwrap_channel_key,
    wrap_channel_key,
)
from fedtopic.crypto.keys import load_party_keys
from fedtopic.errors import ConfigError, DecryptionError

FIG5 = "# paper Fig. 5\n1,1,0,0,0\n1,1,1,0,0\n\n0,1,1,0,0\n0,0,0,1,1\n0, 0, 0, 1, 1\n"



def _problems(message: str) -> list[str]:
    """The problems of a one-line "N problems: a; b; c" message."""
    assert "\n" not in message
    return re.sub(r"^\d+ problems: ", "", message).split("; ")

def test_init_writes_config_and_private_key_files(tmp_path):
    result = init_consortium(3, tmp_path / "c", name="demo", seed=7)
    cfg = load_consortium(result.config_path)
    assert cfg == result.config and cfg.name == "demo" and cfg.party_ids == ("p1", "p2", "p3")
    assert cfg.channels_readable_by("p3") == ("p1", "p2", "p3")  # default: one consortium of everyone
    assert stat.S_IMODE((tmp_path / "c" / "keys").stat().st_mode) == 0o700
    for pid, path in result.key_paths.items():
        assert path == tmp_path / "c" / "keys" / f"{pid}.key.json"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        keys = load_party_keys(path)
        assert keys.address == cfg.party(pid).address
        assert keys.x25519_public == cfg.party(pid).x25519_public_bytes
    text = result.config_path.read_text()
    for path in result.key_paths.values():  # the shared config holds no secret
        assert load_party_keys(path).x25519_private_key.hex() not in text
        assert load_party_keys(path).eth_private_key.hex() not in text


def test_seeded_init_is_reproducible_and_unseeded_is_not(tmp_path):
    a = init_consortium(2, tmp_path / "a", seed=1).config
    b = init_consortium(2, tmp_path / "b", seed=1).config
    c = init_consortium(2, tmp_path / "c").config
    assert a.parties == b.parties and a.parties != c.parties


def test_config_keys_work_for_channel_key_wrapping(tmp_path):
    result = init_consortium(5, tmp_path, cp=parse_cp_file(_write(tmp_path / "cp.csv", FIG5)))
    cfg = result.config
    key = new_channel_key()
    for reader in cfg.party_ids:
        wrapped = wrap_channel_key(key, cfg.party(reader).x25519_public_bytes, channel="p2", epoch=0)
        for holder in cfg.party_ids:
            secret = load_party_keys(result.key_paths[holder]).x25519_private_key
            if holder == reader:
                assert unwrap_channel_key(wrapped, secret, channel="p2", epoch=0) == key
            else:
                with pytest.raises(DecryptionError):
                    unwrap_channel_key(wrapped, secret, channel="p2", epoch=0)


def test_init_refuses_existing_consortium(tmp_path):
    init_consortium(2, tmp_path)
    before = (tmp_path / "consortium.toml").read_text()
    with pytest.raises(ConfigError, match="consortium.toml already exists; refusing to overwrite"):
        init_consortium(2, tmp_path)
    assert (tmp_path / "consortium.toml").read_text() == before


def test_init_refuses_stray_key_file(tmp_path):
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "p2.key.json").write_text("{}")
    with pytest.raises(ConfigError, match="p2.key.json already exists"):
        init_consortium(3, tmp_path)
    assert not (tmp_path / "consortium.toml").exists()


def test_init_rejects_bad_arguments(tmp_path):
    with pytest.raises(ConfigError, match="between 1 and"):
        init_consortium(0, tmp_path)
    with pytest.raises(ConfigError, match="cp: channel 'p1' lists unknown reader 'p4'"):
        init_consortium(3, tmp_path, cp={"p1": ["p4"]})
    assert not any(tmp_path.iterdir())  # nothing written when the config is invalid


def _write(path, text):
    path.write_text(text)
    return path


def test_parse_cp_file_fig5(tmp_path):
    cp = parse_cp_file(_write(tmp_path / "cp.csv", FIG5), expected_parties=5)
    assert cp == cp_from_consortia([["p1", "p2"], ["p2", "p3"], ["p4", "p5"]])
    assert cp == {"p1": ["p2"], "p2": ["p1", "p3"], "p3": ["p2"], "p4": ["p5"], "p5": ["p4"]}


def test_parse_cp_file_reports_every_problem(tmp_path):
    path = _write(tmp_path / "cp.csv", "1,2,0\n0,0,1\n1,1\n")
    with pytest.raises(ConfigError) as err:
        parse_cp_file(path, expected_parties=4)
    assert _problems(str(err.value)) == [
        f"{path}: the CP matrix has 3 rows but the consortium has 4 parties",
        f"{path} line 1 column 2: must be 0 or 1, got '2'",
        f"{path} line 2 column 2: the diagonal must be 1 (owners read their own channel)",
        f"{path} line 3: expected 3 values (a square matrix), got 2",
    ]
    with pytest.raises(ConfigError, match="has no rows"):
        parse_cp_file(_write(tmp_path / "empty.csv", "# nothing\n"))
    with pytest.raises(ConfigError, match="cannot be read"):
        parse_cp_file(tmp_path / "missing.csv")
