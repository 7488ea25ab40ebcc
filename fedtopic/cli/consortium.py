"""`fedtopic consortium ...`: set up a consortium (init), later deploy it and change CP (grant/revoke).

Each command parses its options, calls one function of ``fedtopic.node`` or
``fedtopic.ledger`` and prints its result through ``emit``: human text by
default, one JSON document with ``--format json`` (for scripts).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from fedtopic.cli.output import FormatOption, OutputFormat, count_parties, emit
from fedtopic.consortium.init import ADMIN_KEY_NAME, init_consortium, parse_cp_file
from fedtopic.errors import ConfigError

app = typer.Typer(
    name="consortium",
    help="Set up a consortium: parties, their keys, and who may read whose channel (CP).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.command("keygen")
def keygen_command(
    out: Annotated[Path, typer.Option("--out", help="Folder for ID.key.json (this party's secrets, 0600) and ID.card.json (its public card).")],
    party: Annotated[Optional[str], typer.Option("--party", help="This organisation's party id (letters, digits, '-', '_'; it names its channel).")] = None,  # noqa: UP007
    admin: Annotated[bool, typer.Option("--admin", help="Make the registry admin's (CA's) key instead: OUT/admin.key, for `consortium deploy|grant|revoke --admin-key`.")] = False,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Make this organisation's keys on its own machine: the key file stays here, the card goes to whoever builds
    consortium.toml (`consortium init --cards`). No other command needs to see the key file."""
    from fedtopic.consortium.cards import admin_keygen, keygen

    if admin == (party is not None):
        raise ConfigError("give --party ID (a party's keys) or --admin (the registry admin's key), not both")
    if admin:
        path = out / ADMIN_KEY_NAME
        address = admin_keygen(path)
        emit({"admin_key": str(path), "address": address}, fmt,
             [f"registry admin key: {path} (mode 0600; keep it on this machine), address {address}",
              "next: `fedtopic consortium deploy CONFIG --admin-key " + str(path) + "` from this machine"])
        return
    assert party is not None
    made = keygen(party, out)
    emit({"party": party, "key_file": str(made.key_path), "card": str(made.card_path), "address": made.card.address,
          "x25519_public": made.card.x25519_public}, fmt,
         [f"party {party}: secrets in {made.key_path} (mode 0600; they never leave this machine)",
          f"  card {made.card_path}: address {made.card.address}, X25519 {made.card.x25519_public[:16]}…",
          "Send the card (public) to whoever builds consortium.toml, and read them this address to check it "
          "arrived unchanged: `fedtopic consortium init --cards …` or `consortium add CONFIG --card …`."])


@app.command("init")
def init_command(
    out: Annotated[Path, typer.Option("--out", help="Directory for consortium.toml (must not hold a consortium).")],
    cards: Annotated[Optional[list[Path]], typer.Option("--cards", help="The parties' cards (`consortium keygen`), in party order: --cards A B C, or a folder of *.card.json.")] = None,  # noqa: UP007
    more_cards: Annotated[Optional[list[Path]], typer.Argument(help="more cards after --cards", show_default=False)] = None,  # noqa: UP007
    parties: Annotated[Optional[int], typer.Option("--parties", min=1, help="Trying things on one machine: make N parties (p1..pN) and every key file here.")] = None,  # noqa: UP007
    cp: Annotated[
        Optional[Path],  # noqa: UP007 (typer needs Optional here)
        typer.Option("--cp", help="CSV 0/1 CP matrix: line i, column j = 1 if party j may read party i's channel (in the parties' order). Default: everyone reads everyone."),
    ] = None,
    name: Annotated[str, typer.Option("--name", help="Consortium name.")] = "consortium",
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Build DIR/consortium.toml from the parties' cards (no key is written: each organisation keeps its own), or
    with --parties N make a trial consortium whose key files all land in DIR/keys/ (one operator, one machine)."""
    given = [*(cards or []), *(more_cards or [])]
    if more_cards and not cards:
        raise ConfigError(f"unexpected argument {str(more_cards[0])!r}: card files follow --cards")
    if (parties is None) == (not given):
        raise ConfigError("give --cards CARD… (each organisation's card from `consortium keygen`) or --parties N "
                          "(a trial on one machine), not both")
    if given:
        from fedtopic.consortium.init import init_from_cards

        config_path, cfg = init_from_cards(_card_files(given), out, cp_file=cp, name=name)
        rows = [{"id": p.id, "address": p.address, "x25519_public": p.x25519_public,
                 "reads": list(cfg.channels_readable_by(p.id))} for p in cfg.parties]
        lines = [f"consortium {cfg.name!r}: {count_parties(len(rows))} from their cards, config {config_path}"]
        lines += [f"  {r['id']:<8} {r['address']:<42}  reads {', '.join(r['reads'])}" for r in rows]
        lines.append("No key was written here. Share consortium.toml with every party; each runs `node run --key "
                     "its.key.json` (or keeps keys/<id>.key.json beside the config).")
        emit({"config": str(config_path), "name": cfg.name, "parties": rows, "cp": cfg.cp}, fmt, lines)
        return
    assert parties is not None
    matrix = None if cp is None else parse_cp_file(cp, expected_parties=parties)
    result = init_consortium(parties, out, cp=matrix, name=name)
    cfg = result.config
    rows = [
        {
            "id": p.id,
            "address": p.address,
            "x25519_public": p.x25519_public,
            "reads": list(cfg.channels_readable_by(p.id)),
            "key_file": str(result.key_paths[p.id]),
        }
        for p in cfg.parties
    ]
    width = max(len("reads channels"), *(len(", ".join(r["reads"])) for r in rows))
    lines = [f"consortium {cfg.name!r}: {count_parties(len(rows))}, config {result.config_path}"]
    lines.append(f"  {'party':<6} {'address':<42}  {'reads channels':<{width}}  key file")
    lines += [f"  {r['id']:<6} {r['address']:<42}  {', '.join(r['reads']):<{width}}  {r['key_file']}" for r in rows]
    lines.append("A trial on one machine: every party's secret keys are in this folder, so whoever holds it can act as "
                 "any party. Organisations that do not trust each other each run `consortium keygen` and build the "
                 "config with `consortium init --cards`.")
    emit({"config": str(result.config_path), "name": cfg.name, "parties": rows, "cp": cfg.cp, "trial": True}, fmt,
         lines)


def _card_files(given: list[Path]) -> list[Path]:
    """Card files in the order given, a folder standing for its *.card.json sorted by name."""
    out: list[Path] = []
    for path in given:
        if path.is_dir():
            found = sorted(path.glob("*.card.json"))
            if not found:
                raise ConfigError(f"{path} holds no *.card.json")
            out += found
        else:
            out.append(path)
    return out


ConfigArg = Annotated[Path, typer.Argument(help="The consortium.toml (keys/ beside it are used where present).")]


@app.command("add")
def add_command(
    config: ConfigArg,
    card: Annotated[Optional[Path], typer.Option("--card", help="The new party's card (`consortium keygen` on its machine).")] = None,  # noqa: UP007
    party: Annotated[Optional[str], typer.Option("--party", help="A trial on one machine: make the new party's key file beside the config.")] = None,  # noqa: UP007
    reads: Annotated[str, typer.Option("--reads", help="all: the new party reads every channel and every party reads its; none: set CP later with `grant`.")] = "all",
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Add a party from its card (or, trying things on one machine, make its key file with --party). Then
    `consortium deploy` admits it on chain; a synchronous consortium restarts its aggregator with the new config."""
    from fedtopic.consortium.config import save_consortium
    from fedtopic.consortium.init import add_party, add_party_card

    if (card is None) == (party is None):
        raise ConfigError("give --card CARD (the new party's, from `consortium keygen`) or --party ID (a trial on "
                          "one machine), not both")
    if card is not None:
        made, cfg = add_party_card(config, card, reads=reads)
        save_consortium(cfg, config)
        pid, where = made.party, "no key was written (it stays with that party)"
        key_file = None
    else:
        assert party is not None
        result = add_party(config, party, reads=reads)
        cfg, pid, key_file = result.config, party, str(result.key_path)
        where = f"its key file: {result.key_path} (give it to that party only)"
    emit({"config": str(config), "party": pid, "key_file": key_file, "parties": list(cfg.party_ids),
          "reads": list(cfg.channels_readable_by(pid))}, fmt,
         [f"added {pid} to {config} ({count_parties(len(cfg.party_ids))}); {where}",
          f"  reads: {', '.join(cfg.channels_readable_by(pid)) or 'nothing yet (`consortium grant`)'}",
          "next: `fedtopic consortium deploy` admits it on chain (an aggregator takes it at its next start); an "
          "asynchronous consortium's new party joins the current run by itself"])
RpcOpt = Annotated[Optional[str], typer.Option("--rpc", help="JSON-RPC URL (default: chain.rpc of the config).")]  # noqa: UP007
AdminKeyOpt = Annotated[
    Optional[Path],  # noqa: UP007
    typer.Option("--admin-key", help="File with the admin's (CA's) hex private key (default: keys/admin.key beside the config, written by `consortium init`)."),
]
DevOpt = Annotated[bool, typer.Option("--dev", help="A throwaway local chain: a well-known development key may be the admin.")]
FaucetOpt = Annotated[
    Optional[Path],  # noqa: UP007
    typer.Option("--faucet-key", help="File with the hex private key that pays the admin's and parties' gas (`chain up` without --dev writes DATA/faucet.key; default: a dev chain's well-known account)."),
]


def _deploy(config: Path, cfg: Any, rpc: str | None, admin_key_file: Path | None, fmt: OutputFormat,
            dev: bool = False, faucet_file: Path | None = None) -> None:
    from fedtopic.ledger.consortium_deploy import deploy_consortium
    from fedtopic.ledger.endpoint import admin_key, chain_for, faucet_key

    w3 = chain_for(cfg, rpc)
    result = deploy_consortium(cfg, config, w3, admin_key(w3, admin_key_file, config, dev=dev), rpc or cfg.chain.rpc,
                               faucet_key(w3, faucet_file))
    lines = [f"registry {result.registry}"] + [f"  {a}" for a in result.actions]
    if not result.actions:
        lines.append("  nothing to change")
    if result.keys_pending:
        lines.append(f"  no key file here for {', '.join(result.keys_pending)}: their keys rotate when they next publish")
    emit({"registry": result.registry, "channels": result.channels, "actions": result.actions,
          "keys_pending": result.keys_pending}, fmt, lines)


@app.command("deploy")
def deploy_command(config: ConfigArg, rpc: RpcOpt = None, admin_key_file: AdminKeyOpt = None, dev: DevOpt = False,
                   faucet_file: FaucetOpt = None, fmt: FormatOption = OutputFormat.text) -> None:
    """Deploy the registry and channels, apply CP and wrap channel keys; running it again changes nothing."""
    from fedtopic.consortium.config import load_consortium

    _deploy(config, load_consortium(config), rpc, admin_key_file, fmt, dev, faucet_file)


def _change(config: Path, owner: str, reader: str, allow: bool, rpc: str | None, admin_key_file: Path | None,
            fmt: OutputFormat, dev: bool, faucet_file: Path | None) -> None:
    from fedtopic.consortium.config import load_consortium, save_consortium
    from fedtopic.ledger.consortium_deploy import change_cp

    cfg = change_cp(load_consortium(config), owner, reader, allow)
    save_consortium(cfg, config)
    _deploy(config, cfg, rpc, admin_key_file, fmt, dev, faucet_file)


@app.command("grant")
def grant_command(config: ConfigArg, owner: Annotated[str, typer.Argument(help="Channel owner (party id).")],
                  reader: Annotated[str, typer.Argument(help="Party id that may read it.")],
                  rpc: RpcOpt = None, admin_key_file: AdminKeyOpt = None, dev: DevOpt = False,
                  faucet_file: FaucetOpt = None, fmt: FormatOption = OutputFormat.text) -> None:
    """Let READER read OWNER's channel (CP(owner, reader) = 1), in the config and on chain."""
    _change(config, owner, reader, True, rpc, admin_key_file, fmt, dev, faucet_file)


@app.command("revoke")
def revoke_command(config: ConfigArg, owner: Annotated[str, typer.Argument(help="Channel owner (party id).")],
                   reader: Annotated[str, typer.Argument(help="Party id to remove.")],
                   rpc: RpcOpt = None, admin_key_file: AdminKeyOpt = None, dev: DevOpt = False,
                   faucet_file: FaucetOpt = None, fmt: FormatOption = OutputFormat.text) -> None:
    """Stop READER reading OWNER's channel: CP(owner, reader) = 0 and a new channel key READER never gets."""
    _change(config, owner, reader, False, rpc, admin_key_file, fmt, dev, faucet_file)


@app.command("tls")
def tls_command(config: ConfigArg,
                host: Annotated[list[str], typer.Option("--host", help="A name or address parties use to reach the aggregator (repeatable; the first goes in aggregator.url).")],
                port: Annotated[int, typer.Option(min=1, max=65535, help="The aggregator's HTTPS port.")] = 8443,
                fmt: FormatOption = OutputFormat.text) -> None:
    """Make the aggregator's self-signed certificate (tls/aggregator.crt, its key tls/aggregator.key, mode 0600) and
    pin it: aggregator.url becomes https://HOST:PORT and aggregator.tls_cert the certificate, the only one nodes trust."""
    from fedtopic.consortium.config import load_consortium, save_consortium
    from fedtopic.consortium.tls_pin import pin_certificate
    from fedtopic.network.tls import fingerprint

    cfg, cert, key = pin_certificate(load_consortium(config), config.parent, host, port)
    save_consortium(cfg, config)
    digest = fingerprint(cert)
    url = cfg.aggregator.url
    emit({"certificate": str(cert), "key": str(key), "sha256": digest, "url": url}, fmt,
         [f"certificate {cert} (sha256 {digest}) for {', '.join(host)}; aggregator.url = {url}",
          f"its key {key} stays with whoever runs `aggregator serve`; every party needs the certificate beside its "
          "consortium.toml"])
