"""``fedtopic ledger status|audit``: what the consortium's chain holds, and whether it is sound."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Optional

import typer

from fedtopic.cli.output import FormatOption, OutputFormat, emit
from fedtopic.consortium.config import load_consortium
from fedtopic.ledger.audit import (
    TRAILING,
    ledger_audit,
    ledger_status,
    readers_outside_cp,
)
from fedtopic.ledger.endpoint import chain_for, registry_of
from fedtopic.ledger.runs import shown_round
from fedtopic.temp_names import sibling_temp

app = typer.Typer(help="Inspect and audit the channels on chain.", no_args_is_help=True,
                  add_completion=False, pretty_exceptions_enable=False)

ConfigOption = Annotated[Path, typer.Option("--config", help="The consortium.toml.")]
RpcOption = Annotated[Optional[str], typer.Option("--rpc", help="JSON-RPC URL (default: chain.rpc of the config).")]  # noqa: UP007


@app.command()
def status(config: ConfigOption, rpc: RpcOption = None, fmt: FormatOption = OutputFormat.text) -> None:
    """Channels, their readers and key epochs, latest rounds and payload bytes on chain."""
    cfg = load_consortium(config)
    w3 = chain_for(cfg, rpc)
    registry = registry_of(cfg)
    rows = ledger_status(w3, registry)
    lines = [f"registry {registry} at block {w3.eth.block_number}",
             f"  {'party':<8} {'channel':<42}  {'round':>12}  {'bytes':>10}  {'txs':>5}  {'epoch':>5}  readers"]
    for r in rows:
        flag = "" if r.key_matches_cp else "  (key not yet rotated to CP)"
        lines.append(f"  {r.party_id:<8} {r.channel:<42}  {shown_round(r.latest_round):>12}  "
                     f"{r.payload_bytes:>10}  {r.publish_transactions:>5}  {r.key_epoch:>5}  "
                     f"{', '.join(r.readers)}{' SUSPENDED' if r.suspended else ''}{flag}")
    emit({"registry": registry, "channels": [asdict(r) for r in rows]}, fmt, lines)


AUDIT_STATE = "ledger-audit.json"


def _load_audit_state(path: Path, registry: str, w3) -> dict | None:
    """The kept progress, if it belongs to this registry and chain and the chain still has the block it ended at."""
    import json

    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if state.get("registry") != registry or state.get("chain_id") != w3.eth.chain_id:
        return None
    block = w3.eth.get_block(int(state["block"])) if int(state["block"]) <= w3.eth.block_number else None
    if block is None or "0x" + bytes(block["hash"]).hex() != state.get("block_hash"):
        return None  # the chain was rewritten or replaced: verify from scratch
    return state


@app.command()
def audit(config: ConfigOption, rpc: RpcOption = None,
          full: Annotated[bool, typer.Option("--full", help="verify every round again instead of only what is new")] = False,
          verbose: Annotated[bool, typer.Option("--verbose", help="a row for every round audited, not only the failed ones")] = False,
          fmt: FormatOption = OutputFormat.text) -> None:
    """Check every payload's hash, writer and round order, and that no one reads a channel CP does not allow;
    exit 1 if any check fails. Remembers how far it verified (state/ledger-audit.json beside the config) and
    verifies only new blocks next time, unless --full."""
    import json

    from fedtopic.cli.output import stderr_console

    cfg = load_consortium(config)
    w3 = chain_for(cfg, rpc)
    registry = registry_of(cfg)
    state_path = config.parent / "state" / AUDIT_STATE
    state = None if full else _load_audit_state(state_path, registry, w3)

    def on_channel(party: str, lo: int, hi: int) -> None:
        if hi >= lo:  # nothing new on this channel since the last audit: nothing to say
            stderr_console.print(f"auditing {party}: blocks {lo}..{hi}", highlight=False)

    rows, channels = ledger_audit(w3, registry, None if state is None else state["channels"], on_channel)
    cp_problems = readers_outside_cp(w3, registry, {p: cfg.readers_of(p) for p in cfg.party_ids})
    earlier_failures = [] if state is None else state.get("failures", [])
    kept = earlier_failures + [r.as_dict() for r in rows if not r.ok and r.problem != TRAILING]
    failures = kept + [r.as_dict() for r in rows if r.problem == TRAILING]
    latest = max((c["block"] for c in channels.values()), default=w3.eth.block_number)
    state_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = sibling_temp(state_path)
    tmp.write_text(json.dumps({"registry": registry, "chain_id": w3.eth.chain_id, "block": latest,
                               "block_hash": "0x" + bytes(w3.eth.get_block(latest)["hash"]).hex(),
                               "channels": channels, "failures": kept}))
    tmp.replace(state_path)
    verified = sum(c["rounds_verified"] for c in channels.values())
    mode = "full" if state is None else "incremental"
    now = f"{len(rows)} rounds audited now" if rows else "nothing new since the last audit"
    verdict = "FAILED" if failures or cp_problems else "ok"
    lines = [f"{verdict}: {now} ({mode}, through block {latest}), {verified} rounds verified in all; "
             f"{len(failures)} failed" + (f", {len(cp_problems)} CP violations" if cp_problems else "")]
    shown = rows if verbose else [r for r in rows if not r.ok]  # the verdict first; the rows that failed, or all
    if shown:
        lines.append(f"  {'party':<8} {'round':>6}  {'chunks':>6}  {'bytes':>9}  {'block':>7}  writer  hash  order  "
                     "verdict")
    for r in shown:
        yes = {True: "ok", False: "FAIL"}
        lines.append(f"  {r.party_id:<8} {r.round:>6}  {r.chunks:>6}  {r.payload_bytes:>9}  {r.first_block:>7}  "
                     f"{yes[r.writer_ok]:<6}  {yes[r.hash_ok]:<4}  {yes[r.order_ok]:<5}  {r.problem or 'ok'}")
    lines += [f"CP VIOLATION: {p}" for p in cp_problems]
    emit({"rounds": [r.as_dict() for r in rows], "failed": len(failures), "mode": mode, "rounds_verified": verified,
          "through_block": latest, "cp_violations": cp_problems}, fmt, lines)
    if failures or cp_problems:
        raise typer.Exit(1)
