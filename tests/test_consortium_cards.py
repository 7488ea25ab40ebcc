"""Keys made where they are used: `consortium keygen` at each organisation, `consortium init --cards` and
`consortium add --card` building consortium.toml from self-signed cards, and no command writing another party's
secret. A consortium built so trains across real node and aggregator processes, each node holding only its own
key file."""

from __future__ import annotations

import json
import stat

import pytest
from _node_procs import node_process
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedtopic.cli.main import main
from fedtopic.consortium.cards import keygen, make_card, read_card
from fedtopic.consortium.config import load_consortium, save_consortium
from fedtopic.crypto.keys import generate_party_keys, load_party_keys
from fedtopic.errors import ConfigError
from fedtopic.simulation.aggregator_proc import AggregatorProcess


def _secrets_under(folder):
    """Every file under ``folder`` that holds a private key."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and (
        p.name.endswith(".key.json") or p.name.endswith(".key") or "private_key" in p.read_text(errors="replace")))


def test_keygen_writes_a_private_key_file_and_a_card_that_verifies(tmp_path, capsys):
    assert main(["consortium", "keygen", "--party", "acme", "--out", str(tmp_path / "acme")]) == 0
    key_file, card_file = tmp_path / "acme" / "acme.key.json", tmp_path / "acme" / "acme.card.json"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    keys, card = load_party_keys(key_file), read_card(card_file)
    assert (card.party, card.address, card.x25519_public) == ("acme", keys.address, keys.x25519_public.hex())
    assert "private" not in card_file.read_text() and keys.address in capsys.readouterr().out
    assert main(["consortium", "keygen", "--party", "acme", "--out", str(tmp_path / "acme")]) == 2  # never replaced
    assert load_party_keys(key_file) == keys
    assert main(["consortium", "keygen", "--admin", "--out", str(tmp_path / "ca")]) == 0
    assert stat.S_IMODE((tmp_path / "ca" / "admin.key").stat().st_mode) == 0o600


def test_init_and_add_from_cards_write_no_secret(tmp_path, capsys):
    cards = [keygen(p, tmp_path / p).card_path for p in ("acme", "beta", "gamma")]
    out = tmp_path / "consortium"
    assert main(["consortium", "init", "--cards", str(cards[0]), str(cards[1]), str(cards[2]), "--out", str(out)]) == 0
    cfg = load_consortium(out / "consortium.toml")
    assert cfg.party_ids == ("acme", "beta", "gamma") and set(cfg.channels_readable_by("beta")) == set(cfg.party_ids)
    assert [p.address for p in cfg.parties] == [read_card(c).address for c in cards]
    delta = keygen("delta", tmp_path / "delta").card_path
    assert main(["consortium", "add", str(out / "consortium.toml"), "--card", str(delta), "--reads", "none"]) == 0
    assert load_consortium(out / "consortium.toml").party_ids[-1] == "delta"
    assert _secrets_under(out) == []
    assert "No key was written here" in capsys.readouterr().out


def test_a_cp_matrix_follows_the_cards_order(tmp_path):
    cards = [keygen(p, tmp_path / p).card_path for p in ("acme", "beta", "gamma")]
    (tmp_path / "cp.csv").write_text("1,1,0\n1,1,0\n0,0,1\n")
    assert main(["consortium", "init", "--cards", *map(str, cards), "--cp", str(tmp_path / "cp.csv"),
                 "--out", str(tmp_path / "c")]) == 0
    cfg = load_consortium(tmp_path / "c" / "consortium.toml")
    assert cfg.channels_readable_by("gamma") == ("gamma",) and cfg.readers_of("acme") == ("acme", "beta")


def _refused(args, capsys, *needles):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err


def test_forged_edited_and_duplicate_cards_are_refused_in_one_line(tmp_path, capsys):
    acme, beta = (keygen(p, tmp_path / p) for p in ("acme", "beta"))
    edited = json.loads(beta.card_path.read_text())
    edited["x25519_public"] = acme.card.x25519_public  # the aggregator's or a setter-up's key slipped in
    (tmp_path / "edited.card.json").write_text(json.dumps(edited))
    out = str(tmp_path / "c")
    _refused(["consortium", "init", "--cards", str(acme.card_path), str(tmp_path / "edited.card.json"), "--out", out],
             capsys, "signature does not verify", "beta")
    _refused(["consortium", "init", "--cards", str(acme.card_path), str(acme.card_path), "--out", out], capsys,
             "same party id")
    twin = generate_party_keys("acme2", seed=b"twin")  # another id, acme's signing key: a duplicate key
    again = make_card("acme2", load_party_keys(acme.key_path).eth_private_key, twin.x25519_public)
    (tmp_path / "twin.card.json").write_text(json.dumps(again.as_json()))
    _refused(["consortium", "init", "--cards", str(acme.card_path), str(tmp_path / "twin.card.json"), "--out", out],
             capsys, "same address")
    _refused(["consortium", "init", "--cards", str(tmp_path / "missing.card.json"), "--out", out], capsys,
             "cannot be read")
    _refused(["consortium", "init", "--cards", str(acme.card_path), "--parties", "2", "--out", out], capsys, "not both")
    assert not (tmp_path / "c" / "consortium.toml").exists()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, 400), junk=st.binary(max_size=64), mode=st.sampled_from(["truncate", "garble", "zero",
                                                                                    "non-utf8", "empty"]))
def test_a_damaged_card_is_one_clear_error(tmp_path_factory, cut, junk, mode):
    folder = tmp_path_factory.mktemp("card")
    made = keygen("acme", folder, seed=b"card-damage")
    raw = made.card_path.read_bytes()
    damaged = {"truncate": raw[:cut % len(raw)], "garble": raw[:cut % len(raw)] + junk + raw[cut % len(raw):],
               "zero": b"\x00" * len(raw), "non-utf8": b"\xff\xfe" + raw, "empty": b""}[mode]
    made.card_path.write_bytes(damaged)
    try:
        card = read_card(made.card_path)
    except ConfigError as exc:
        assert "\n" not in str(exc)
    else:  # the bytes that survived still form the signed card
        assert card == made.card


@pytest.mark.xdist_group("agg-consortium_cards")
def test_a_consortium_of_cards_trains_with_each_node_holding_only_its_own_key(tmp_path):
    orgs = {p: keygen(p, tmp_path / f"org-{p}") for p in ("acme", "beta", "gamma")}
    out = tmp_path / "consortium"
    assert main(["consortium", "init", "--cards", *(str(m.card_path) for m in orgs.values()), "--out", str(out)]) == 0
    config = out / "consortium.toml"
    cfg = load_consortium(config)
    cfg = cfg.model_copy(update={
        "algorithm": cfg.algorithm.model_copy(update={"name": "csfed-lda", "topics": 4, "iterations": 3}),
        "aggregator": cfg.aggregator.model_copy(update={"protection": "mask"}),
        "data": cfg.data.model_copy(update={"dataset": "synthetic"}),
    })
    save_consortium(cfg, config)
    logs = {p: tmp_path / f"{p}.log" for p in orgs}
    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as agg:
        procs = {p: node_process(config, p, agg.url, logs[p], ("--key", str(m.key_path)))  # from its own folder
                 for p, m in orgs.items()}
        outs = {p: proc.communicate(timeout=300)[0] for p, proc in procs.items()}
    for p, proc in procs.items():
        assert proc.returncode == 0, logs[p].read_text()[-2000:]
    for pid in orgs:
        assert json.loads(outs[pid])["rounds"] == 3, logs[pid].read_text()[-2000:]
    assert _secrets_under(out) == []
