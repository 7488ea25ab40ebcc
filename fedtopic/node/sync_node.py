"""One party of a synchronous consortium as its own process (``fedtopic node run``), for every algorithm whose
party is a ``FederatedParty``: keys checked, documents loaded, the party runtime to the end, then the algorithm
writes ``state/<party>/model`` (``Algorithm.write_party``). History: ``state/<party>/history.jsonl``; a killed
node resumes from ``state/<party>/party-checkpoint.npz``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fedtopic.algorithms.federated import PartyRun
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.consortium.config import ConsortiumConfig
from fedtopic.node.link import AggregatorLink
from fedtopic.node.party_setup import prepare_party
from fedtopic.node.session_names import default_session
from fedtopic.node.state_folder import finished_run
from fedtopic.node.sync_runtime import (
    CHECKPOINT,
    Connection,
    ProtectionSettings,
    history_gaps,
    run_sync_party,
)
from fedtopic.runs.folder import write_summary
from fedtopic.runs.history import FILE_NAME, HistoryLine, latest_per_round, read_history
from fedtopic.runs.interrupted import note_kept
from fedtopic.runs.vocabulary_release import join_release


def run_sync_node(cfg: ConsortiumConfig, config_path: Path, party_id: str, *, key_file: Path | None = None,
                  corpus: Path | None = None, vocab: Path | None = None, url: str | None = None,
                  state_dir: Path | None = None, session: str | None = None, round_timeout: float = 3600.0,
                  patience: float = 600.0, say: Callable[[str], None] = print,
                  on_round: Callable[[HistoryLine], None] | None = None, fresh: bool = False) -> dict[str, Any]:
    """Train party ``party_id`` to the end; returns (and writes to ``state_dir/model``) its summary."""
    prepared = prepare_party(cfg, config_path, party_id, key_file=key_file, corpus=corpus, vocab=vocab,
                             state_dir=state_dir, fresh=fresh, say=say)
    algorithm = get_algorithm(cfg.algorithm.name)
    party, data, spec = prepared.party, prepared.data, cfg.algorithm.spec()
    done = finished_run(prepared.state_dir, party_id, say, CHECKPOINT)
    if done is not None:
        return done
    protection = cfg.aggregator.protection
    algorithm.check_protection(spec, protection, len(cfg.parties))
    base = session or default_session(cfg)
    link = AggregatorLink(url or cfg.aggregator.url, prepared.keys, patience, {p.id: p.address for p in cfg.parties},
                          cfg.aggregator.link)
    conn = Connection(link, cfg.party_ids, [p.x25519_public_bytes for p in cfg.parties], cfg.parties[0].address,
                      ProtectionSettings(protection, cfg.aggregator.key_bits, cfg.aggregator.delta), base,
                      prepared.params, round_timeout=round_timeout,
                      straggler_deadline_seconds=cfg.aggregator.straggler_deadline_seconds)
    by = "" if link.link == "http" else f" by the {link.link} link"
    say(f"party {party_id}: {data.train.n_docs:,} documents from {data.source}, {algorithm.name}, K = {spec.topics}, "
        f"protection {protection}; aggregator {link.url}{by}, sessions {base}-*; state in {prepared.state_dir}")
    history = prepared.state_dir / FILE_NAME
    try:
        run_sync_party(party, conn, algorithm=algorithm.name, state_dir=prepared.state_dir, history=history,
                       vocab=data.train.vocab, on_round=on_round, say=say, fresh=fresh)
    except KeyboardInterrupt:
        note_kept(f"{party_id}'s state in {prepared.state_dir}: `fedtopic node run` again resumes from its last "
                  "checkpoint")
        raise
    rows = latest_per_round(read_history(history))
    lacking = history_gaps(history, max((int(r["round"]) for r in rows), default=-1) + 1)
    run = PartyRun(party, spec, data.train, data.test, data.tokenizer, cfg.data.dataset or "own corpus",
                   len(cfg.parties), protection, rows)
    summary = join_release(algorithm.write_party(prepared.state_dir / "model", run), data.release, party_id)
    if lacking:  # said at the resume too: rounds whose figures (times, bytes, quality) are lost
        summary = summary | {"history_lacks_rounds": lacking}
    training = [r for r in rows if int(r["round"]) >= algorithm.setup_rounds(spec)]  # runs.round_count
    return _with_liveness(prepared.state_dir / "model", summary, training, cfg.party_ids,
                          cfg.aggregator.straggler_deadline_seconds)


def _with_liveness(out: Path, summary: dict[str, Any], rows: list[dict[str, Any]], ids: list[str],
                   deadline: float) -> dict[str, Any]:
    """The summary (and summary.json) with the rounds whose aggregate went on without each late party: a
    synchronous node waits for everyone until the consortium's straggler deadline, then goes on without them."""
    without: dict[str, int] = {}
    for row in rows:
        if row.get("contributors") is not None:
            for p in ids:
                if p not in row["contributors"]:
                    without[p] = without.get(p, 0) + 1
    summary = summary | {"rounds_without": without, "straggler_deadline_seconds": deadline}
    write_summary(out, {k: v for k, v in summary.items() if k != "run"})
    return summary
