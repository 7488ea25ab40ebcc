"""One party of an asynchronous algorithm (DAFed-LDA, any ``AsyncParty``) as its own process, over a real chain
(``fedtopic node run``).

The party loads its documents, connects to the chain named in the consortium
config, and runs the asynchronous loop (Alg. 3) with a checkpoint in its
state folder, so a killed node resumes where it stopped. When training ends the
algorithm writes its run folder (``write_async_party``: DAFed-LDA's θ_p, never
published, and Φ_Σ).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fedtopic.algorithms.asynchronous import AsyncPartyRun, PartyLog, RoundReport
from fedtopic.algorithms.base import Mode
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.consortium.config import ConsortiumConfig
from fedtopic.crypto.card import card_of
from fedtopic.errors import TrainingError
from fedtopic.ledger import raw
from fedtopic.ledger.channel import ChainChannel
from fedtopic.ledger.endpoint import chain_for, registry_of
from fedtopic.ledger.runs import next_run, run_base, run_of
from fedtopic.node.async_loop import Liveness, run_party
from fedtopic.node.party_setup import load_own_keys, prepare_party
from fedtopic.node.roster import delay_rng
from fedtopic.node.state_folder import finished_run, manifest_params
from fedtopic.runs.folder import write_summary
from fedtopic.runs.history import FILE_NAME
from fedtopic.runs.interrupted import note_kept
from fedtopic.runs.vocabulary_release import join_release

CHECKPOINT = "checkpoint.npz"


def run_async_node(
    cfg: ConsortiumConfig,
    config_path: Path,
    party_id: str,
    *,
    key_file: Path | None = None,
    corpus: Path | None = None,
    vocab: Path | None = None,
    rpc: str | None = None,
    state_dir: Path | None = None,
    genesis_timeout: float = 600.0,
    say: Callable[[str], None] = print,
    on_round: Callable[[str, RoundReport, PartyLog], None] | None = None,
    fresh: bool = False,
    liveness: Liveness = Liveness(),
    run: int | None = None,
) -> dict[str, Any]:
    """Train party ``party_id`` to the end; returns (and writes to ``state_dir/model``) its summary."""
    w3, registry = chain_for(cfg, rpc), registry_of(cfg)
    keys = load_own_keys(cfg, config_path, party_id, key_file)
    state_dir = state_dir or config_path.parent / "state" / party_id
    (head,) = raw.heads_of(w3, registry, [keys.address])
    own = head.round if head.published else None
    current = max((run_of(h.round) for h in raw.readable_heads(w3, registry, keys.address) if h.published), default=1)
    run = choose_run(state_dir, own, fresh=fresh, asked=run, party_id=party_id, current=current)
    prepared = prepare_party(cfg, config_path, party_id, key_file=key_file, corpus=corpus, vocab=vocab, state_dir=state_dir,
                             fresh=fresh, say=say, extra_params={"run": run} if run > 1 else {}, mode=Mode.async_)
    data, party, index, state_dir = prepared.data, prepared.party, prepared.index, prepared.state_dir
    done = finished_run(state_dir, party_id, say, CHECKPOINT)
    if done is not None:
        return done
    algo = cfg.algorithm
    shape = get_algorithm(algo.name).publication_shape(algo.spec(), data.train.n_words)
    channel = ChainChannel(w3, registry, prepared.keys, shape=shape,
                           card=card_of(prepared.params), run=run)  # the card is checked on every read (issue 28)
    checkpoint = state_dir / CHECKPOINT
    published = channel.latest_round(party_id)
    if not checkpoint.exists() and published is not None:
        raise TrainingError(f"{party_id}'s channel already holds rounds 0..{published} of run {run}, but {state_dir} "
                            "has no checkpoint of it (moved or wiped?): put it back to resume, or start run "
                            f"{run + 1} with `node run --fresh`")
    lo, hi = algo.random_delay
    rng = delay_rng(algo.seed, index)
    say(f"party {party_id}: run {run}, {data.train.n_docs:,} documents, {data.train.n_tokens:,} tokens from {data.source}; "
        f"reads {', '.join(cfg.channels_readable_by(party_id))}; state in {state_dir}")
    try:
        log = run_party(
            party,
            channel,
            readable=set(cfg.channels_readable_by(party_id)),
            max_sweeps=algo.iterations,
            stop=threading.Event(),
            delay=lambda: float(rng.uniform(lo, hi)) if hi > 0 else 0.0,
            on_round=on_round,
            genesis_timeout=genesis_timeout,
            checkpoint=checkpoint,
            history=state_dir / FILE_NAME,
            algorithm=cfg.algorithm.name,
            say=say,
            converge_tol=cfg.algorithm.spec().options["converge_tol"],
            liveness=liveness,
        )
    except KeyboardInterrupt:
        note_kept(f"{party_id}'s state in {state_dir}: `fedtopic node run` again resumes from its last checkpoint")
        raise
    party.absorb(channel.read_latest())
    party_run = AsyncPartyRun(party, cfg.algorithm.spec(), data.train, data.test, data.tokenizer,
                              cfg.data.dataset or "own corpus", len(cfg.parties), log,
                              {"if_behind": "wait" if liveness.wait else "go-on",
                               "behind_limits": {"rounds": liveness.rounds, "seconds": liveness.seconds}})
    summary = get_algorithm(cfg.algorithm.name).write_async_party(state_dir / "model", party_run)
    if data.release is None and run == 1:
        return summary
    summary = join_release(summary, data.release, party_id) | ({"consortium_run": run} if run > 1 else {})
    write_summary(state_dir / "model", summary)
    return summary


def choose_run(state_dir: Path, own_latest: int | None, *, fresh: bool, asked: int | None, party_id: str,
               current: int = 1) -> int:
    """The consortium run this party takes part in (``ledger/runs.py``): ``asked`` if given; for a channel that
    never published, the consortium's ``current`` run (the latest any readable channel is in: a new party joins
    it); after a fresh start the one after its own channel's latest; a state folder's own run when it resumes.
    TrainingError (before anything is moved) when a channel holds rounds a state folder does not explain."""
    if asked is not None:
        run_base(asked)  # ValueError when out of range, said by the CLI
        return asked
    if own_latest is None and (fresh or manifest_params(state_dir) is None):
        return current
    if fresh:
        return next_run(own_latest)
    held = manifest_params(state_dir)
    if held is not None:
        return int(held.get("run", 1))
    if own_latest is None:
        return current
    last = run_of(own_latest)
    raise TrainingError(f"{party_id}'s channel already holds rounds of run {last}, but {state_dir} holds no state "
                        f"(moved or wiped?): put it back to resume, or start run {last + 1} with `node run --fresh`")
