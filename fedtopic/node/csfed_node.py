"""One CSFed-LDA party as its own process, over the aggregator (``fedtopic node run`` with algorithm csfed-lda).

The party checks its key file against the consortium config, loads its
documents, runs the synchronous protocol (``csfed_loop``) with its checkpoint
and persisted updates in its state folder (a killed node resumes without
submitting any round twice with different content), and saves θ_p (its own,
never sent) and Φ_Σ as a run folder in ``state/model``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fedtopic.consortium.config import ConsortiumConfig
from fedtopic.node.csfed_loop import CSFedParticipant, CSFedSettings, RoundRecord
from fedtopic.node.party_setup import prepare_party, write_party_model
from fedtopic.node.session_names import default_session
from fedtopic.runs.history import FILE_NAME


def csfed_settings(cfg: ConsortiumConfig, session: str | None = None, round_timeout: float = 3600.0,
                   patience: float = 600.0) -> CSFedSettings:
    """Protocol settings from the config's ``aggregator`` and ``algorithm`` sections."""
    agg, algo = cfg.aggregator, cfg.algorithm
    return CSFedSettings(session=session or default_session(cfg), protection=agg.protection, algorithm=algo.name, delta=agg.delta,
                         key_bits=agg.key_bits, iterations=algo.iterations, steps=int(algo.spec().options["steps"]),
                         straggler_deadline_seconds=agg.straggler_deadline_seconds, round_timeout=round_timeout,
                         patience=patience)


def run_csfed_node(
    cfg: ConsortiumConfig,
    config_path: Path,
    party_id: str,
    *,
    key_file: Path | None = None,
    corpus: Path | None = None,
    vocab: Path | None = None,
    url: str | None = None,
    state_dir: Path | None = None,
    session: str | None = None,
    round_timeout: float = 3600.0,
    patience: float = 600.0,
    say: Callable[[str], None] = print,
    on_round: Callable[[RoundRecord], None] | None = None,
) -> dict[str, Any]:
    """Train party ``party_id`` to the end; returns (and writes to ``state_dir/model``) its summary."""
    prepared = prepare_party(cfg, config_path, party_id, key_file=key_file, corpus=corpus, vocab=vocab, state_dir=state_dir)
    data, party, keys, state_dir = prepared.data, prepared.party, prepared.keys, prepared.state_dir
    settings = csfed_settings(cfg, session, round_timeout, patience)
    participant = CSFedParticipant(party, keys, url or cfg.aggregator.url, cfg.party_ids,
                                   [p.x25519_public_bytes for p in cfg.parties], settings, state_dir, say=say,
                                   history=state_dir / FILE_NAME)
    say(f"party {party_id}: {data.train.n_docs:,} documents, {data.train.n_tokens:,} tokens from {data.source}; "
        f"aggregator {participant.url}, session {settings.session}, protection {settings.protection}; "
        f"state in {state_dir}")
    participant.run(on_round)
    return write_csfed_model(state_dir / "model", participant, dataset=cfg.data.dataset or "own corpus",
                             parties=len(cfg.parties), test=data.test, tokenizer=data.tokenizer)


def round_totals(records: list[RoundRecord]) -> dict[str, Any]:
    """Totals over a party's rounds (seconds, bytes, recoveries) for summary.json."""
    keys = ("sweep_seconds", "encode_seconds", "submit_seconds", "fetch_seconds", "decode_seconds")
    return {k: float(sum(getattr(r, k) for r in records)) for k in keys} | {
        "bytes_sent": int(sum(r.bytes_sent for r in records)),
        "bytes_received": int(sum(r.bytes_received for r in records)),
        "recoveries_sent": int(sum(r.recovery_sent for r in records)),
        "rounds_without_this_party": [r.round for r in records if not r.accepted],
    }


def write_csfed_model(out: Path, participant: CSFedParticipant, *, dataset: str, parties: int, test,
                      tokenizer: dict[str, Any], fold_in_iterations: int = 50) -> dict[str, Any]:
    """Evaluate the party's Φ_Σ and θ_p and write the run folder ``out``; returns the summary."""
    totals = round_totals(participant.records)
    return write_party_model(out, participant.party, test, tokenizer, {
        "algorithm": "csfed-lda", "dataset": dataset, "parties": parties,
        "wall_seconds": sum(totals[k] for k in totals if k.endswith("_seconds")),
        "protection": participant.settings.protection, "session": participant.settings.session,
        "rounds": len(participant.records),
        "rounds_detail": [{"round": r.round, "contributors": r.contributors, "aggregate_tokens": r.aggregate_tokens,
                           "recovery_sent": r.recovery_sent, "accepted": r.accepted} for r in participant.records],
    } | totals, fold_in_iterations=fold_in_iterations)
