"""`fedtopic consortium init`: a new consortium's config, from the parties' cards or, for one operator trying
things on one machine, with every party's key file.

The config (consortium.toml) holds only public keys and is shared by everyone. Organisations that do not trust
each other each run ``consortium keygen`` on their own machine and hand in only a card (``consortium.cards``);
``init_from_cards`` builds the config from those and writes no secret at all. ``init_consortium`` (``--parties
N``) makes every party's key file (keys/<party>.key.json, mode 0600) in one folder: whoever runs it holds every
party's secrets, which is right only for a trial on one machine. Its party ids are p1..pN.

CP file format (``--cp FILE``): the paper's channel-peer access matrix CP
(§7.1, Def. 4) as a CSV of 0/1, one line per channel, one column per peer:
line i, column j is 1 when party p<j> may read party p<i>'s channel. The
diagonal must be 1 (an owner always reads its own channel). Blank lines and
lines starting with '#' are ignored. The paper's Fig. 5 (con1-2, con2-3, con4-5):

    1,1,0,0,0
    1,1,1,0,0
    0,1,1,0,0
    0,0,0,1,1
    0,0,0,1,1
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from fedtopic.consortium.cards import PartyCard, check_cards, read_card
from fedtopic.consortium.config import (
    ConsortiumConfig,
    load_consortium,
    save_consortium,
    validate_consortium,
)
from fedtopic.crypto.keys import generate_party_keys, save_party_keys, write_secret
from fedtopic.errors import ConfigError, join_problems

CONFIG_NAME = "consortium.toml"
KEY_DIR = "keys"
MAX_PARTIES = 1000


@dataclass(frozen=True)
class InitResult:
    """What ``init_consortium`` wrote."""

    config_path: Path
    key_paths: dict[str, Path]
    config: ConsortiumConfig


def party_ids(n_parties: int) -> list[str]:
    """The ids of an n-party consortium: p1..pN."""
    return [f"p{i}" for i in range(1, n_parties + 1)]


def key_file_path(out_dir: str | os.PathLike[str], party_id: str) -> Path:
    """Where ``init_consortium`` puts ``party_id``'s private key file."""
    return Path(out_dir) / KEY_DIR / f"{party_id}.key.json"


ADMIN_KEY_NAME = "admin.key"


def admin_key_path(out_dir: str | os.PathLike[str]) -> Path:
    """Where ``init_consortium`` puts the registry admin's (CA's) private key (hex; never in consortium.toml)."""
    return Path(out_dir) / KEY_DIR / ADMIN_KEY_NAME


def write_admin_key(path: Path, seed: bytes | None) -> Path:
    """A fresh secp256k1 key for the registry admin at ``path`` (mode 0600); ``seed``: reproducible, tests only."""
    key = generate_party_keys("admin", seed=seed).eth_private_key
    return write_secret(path, (key.hex() + "\n").encode())


def cp_from_consortia(consortia: Iterable[Iterable[str]]) -> dict[str, list[str]]:
    """CP from consortia (paper Def. 4): every member reads every other member's channel (symmetric)."""
    readers: dict[str, dict[str, None]] = {}  # insertion-ordered sets: a list's `in` made this O(P³)
    for members in consortia:
        group = list(dict.fromkeys(members))
        for owner in group:
            known = readers.setdefault(owner, {})
            known.update((m, None) for m in group if m != owner)
    return {owner: list(known) for owner, known in readers.items()}


def parse_cp_file(path: str | os.PathLike[str], *, expected_parties: int | None = None,
                  ids: list[str] | None = None) -> dict[str, list[str]]:
    """Read a CSV 0/1 CP matrix (see module doc) into {owner: [other readers]} for parties ``ids`` (default
    p1..pP, in the matrix's order: with cards, the cards' order).

    ``expected_parties``: the consortium's size, which the matrix must match (``len(ids)`` when ids are given).
    """
    if ids is not None:
        expected_parties = len(ids)
    where = Path(path)
    try:
        lines = where.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"CP file {where} cannot be read: {exc}") from None
    rows: list[tuple[int, list[str]]] = [
        (n, [cell.strip() for cell in line.split(",")])
        for n, line in enumerate(lines, start=1)
        if line.strip() and not line.lstrip().startswith("#")
    ]
    size = len(rows)
    if size == 0:
        raise ConfigError(f"CP file {where} has no rows")
    problems: list[str] = []
    if expected_parties is not None and size != expected_parties:
        problems.append(f"{where}: the CP matrix has {size} rows but the consortium has {expected_parties} parties")
    if ids is not None and problems:
        raise ConfigError(join_problems(problems))  # the cards name the parties: a matrix of another size names none
    ids = party_ids(size) if ids is None else ids
    cp: dict[str, list[str]] = {}
    for i, (line_no, cells) in enumerate(rows):
        if len(cells) != size:
            problems.append(f"{where} line {line_no}: expected {size} values (a square matrix), got {len(cells)}")
            continue
        for j, cell in enumerate(cells):
            if cell not in ("0", "1"):
                problems.append(f"{where} line {line_no} column {j + 1}: must be 0 or 1, got {cell!r}")
            elif i == j and cell != "1":
                problems.append(f"{where} line {line_no} column {j + 1}: the diagonal must be 1 (owners read their own channel)")
        cp[ids[i]] = [ids[j] for j, cell in enumerate(cells) if cell == "1" and j != i]
    if problems:
        raise ConfigError(join_problems(problems))
    return {owner: readers for owner, readers in cp.items() if readers}


def init_consortium(
    n_parties: int,
    out_dir: Path,
    *,
    cp: dict[str, list[str]] | None = None,
    name: str = "consortium",
    seed: int | None = None,
) -> InitResult:
    """Write out_dir/consortium.toml and out_dir/keys/<party>.key.json for parties p1..pN.

    ``cp`` defaults to one consortium of everyone (the paper's experiments, §8).
    ``seed`` makes the keys reproducible: for tests only, seeded keys are not secret.
    Refuses to touch a directory that already holds a consortium or any of the key files.
    """
    if isinstance(n_parties, bool) or not isinstance(n_parties, int) or not 1 <= n_parties <= MAX_PARTIES:
        raise ConfigError(f"the number of parties must be between 1 and {MAX_PARTIES}, got {n_parties!r}")
    out = Path(out_dir)
    config_path = out / CONFIG_NAME
    ids = party_ids(n_parties)
    existing = [p for p in [config_path, admin_key_path(out), *(key_file_path(out, pid) for pid in ids)] if p.exists()]
    if existing:
        raise ConfigError(f"{existing[0]} already exists; refusing to overwrite an existing consortium")
    if cp is None:
        cp = cp_from_consortia([ids])
    seed_bytes = None if seed is None else f"fedtopic-consortium-init:{seed}".encode()
    keys = [generate_party_keys(pid, seed=seed_bytes) for pid in ids]
    config = validate_consortium(
        {
            "name": name,
            "parties": [{"id": k.party_id, "address": k.address, "x25519_public": k.x25519_public.hex()} for k in keys],
            "cp": {owner: list(readers) for owner, readers in cp.items()},
        }
    )
    (out / KEY_DIR).mkdir(parents=True, exist_ok=True, mode=0o700)
    key_paths = {k.party_id: save_party_keys(k, key_file_path(out, k.party_id)) for k in keys}
    write_admin_key(admin_key_path(out), seed_bytes)
    save_consortium(config, config_path)  # last: its presence marks a complete init
    return InitResult(config_path=config_path, key_paths=key_paths, config=config)


@dataclass(frozen=True)
class AddResult:
    """A party added to a consortium's config: the new config and the new party's key file."""

    config: ConsortiumConfig
    key_path: Path


def add_party(config_path: Path, party_id: str, *, reads: str = "all") -> AddResult:
    """Add ``party_id`` to the consortium at ``config_path``: a new key file beside it (keys/<id>.key.json) and the
    party in the config, reading every channel and read by every party (``reads="all"``) or in no one's CP yet
    (``reads="none"``, for ``consortium grant`` to set). The chain learns of it at the next ``consortium deploy``;
    a synchronous consortium's aggregator at its next start. Refuses an id or key file that exists."""
    cfg = load_consortium(config_path)
    if party_id in cfg.party_ids:
        raise ConfigError(f"party {party_id!r} is already in {config_path}")
    key_path = key_file_path(config_path.parent, party_id)
    if key_path.exists():
        raise ConfigError(f"{key_path} already exists; refusing to overwrite a party's keys")
    keys = generate_party_keys(party_id)
    new = _with_party(cfg, {"id": party_id, "address": keys.address, "x25519_public": keys.x25519_public.hex()},
                      reads)  # checked before anything is written
    key_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    save_party_keys(keys, key_path)
    save_consortium(new, config_path)
    return AddResult(new, key_path)


def init_from_cards(card_files: list[Path], out_dir: Path, *, cp_file: Path | None = None,
                    name: str = "consortium") -> tuple[Path, ConsortiumConfig]:
    """out_dir/consortium.toml from the parties' cards (each checked: its self-signature, no id, address or X25519
    key twice), in the cards' order; ``cp_file`` a CP matrix in that order (default: everyone reads everyone).
    Writes no key. Refuses a directory that already holds a consortium."""
    if not card_files:
        raise ConfigError("no cards given: each party makes one with `fedtopic consortium keygen --party ID`")
    if len(card_files) > MAX_PARTIES:
        raise ConfigError(f"{len(card_files)} cards; a consortium has at most {MAX_PARTIES} parties")
    config_path = Path(out_dir) / CONFIG_NAME
    if config_path.exists():
        raise ConfigError(f"{config_path} already exists; refusing to overwrite an existing consortium")
    cards = [(Path(f), read_card(f)) for f in card_files]
    check_cards(cards)
    ids = [card.party for _, card in cards]
    cp = cp_from_consortia([ids]) if cp_file is None else parse_cp_file(cp_file, ids=ids)
    config = validate_consortium({"name": name, "parties": [card.config_entry() for _, card in cards],
                                  "cp": {owner: list(readers) for owner, readers in cp.items()}})
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    save_consortium(config, config_path)
    return config_path, config


def add_party_card(config_path: Path, card_file: Path, *, reads: str = "all") -> tuple[PartyCard, ConsortiumConfig]:
    """Add the party of ``card_file`` (checked as ``init_from_cards`` checks) to the consortium at ``config_path``,
    reading as ``add_party``'s ``reads`` says. Writes no key."""
    cfg = load_consortium(config_path)
    card = read_card(card_file)
    check_cards([(Path(card_file), card)], [p.model_dump() for p in cfg.parties])
    return card, _with_party(cfg, card.config_entry(), reads)


def _with_party(cfg: ConsortiumConfig, entry: dict[str, str], reads: str) -> ConsortiumConfig:
    """``cfg`` with the party ``entry`` added, its CP as ``reads`` says (all, or none until `grant`); validated."""
    if reads not in ("all", "none"):
        raise ConfigError(f"--reads is all or none, not {reads!r}")
    party_id = entry["id"]
    data = cfg.model_dump(mode="json", exclude_none=True)
    data["parties"].append(entry)
    cp = {owner: list(readers) for owner, readers in cfg.cp.items()}
    if reads == "all":
        for owner in cp:
            cp[owner] = sorted(set(cp[owner]) | {party_id})
        cp[party_id] = sorted([*cfg.party_ids, party_id])
    data["cp"] = cp
    return validate_consortium(data)
