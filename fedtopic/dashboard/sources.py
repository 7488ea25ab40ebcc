"""Where a dashboard's figures come from: a run folder, or one party's view of a consortium.

A source gives the run's description (``meta``), the history files it can read, the topic snapshots, whether
the processes it can check still run, what remote services say of the parties (``signs``: the aggregator's
``/status`` or the chain's channel heads) and the ledger's publications. ``RunFolder`` reads a folder of
``simulate``, ``train``, ``experiment`` or ``demo``; ``PartyView`` reads one party's state folder beside a
consortium.toml and asks the aggregator or the chain about the others: only what that party may see (every
member may read ``/status`` and the channel heads; payloads stay sealed).
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedtopic.errors import ConfigError, FedTopicError
from fedtopic.runs.folder import RUN_INFO
from fedtopic.runs.history import FILE_NAME
from fedtopic.runs.process import PROCESS_FILE, process_alive
from fedtopic.runs.topic_snapshot import snapshot_path

if TYPE_CHECKING:
    from fedtopic.network.schemas import SessionStatus, StatusOut

LABELS_FILE = "topic-labels.json"
SIGNS_EVERY_SECONDS = 1.0


@dataclass(frozen=True)
class Sign:
    """What a remote service says of one party: its latest round, when it last showed life, whether that sign is a
    heartbeat (``liveness``), whether it finished, and (synchronous) whether the open round waits for it."""

    round: int | None = None
    last_sign: float | None = None
    interval: float | None = None  # seconds per round as observed (chain), for the silence rule
    heartbeat: bool = False
    finished: bool = False
    awaited: bool = False


@dataclass
class Signs:
    """The latest ``Sign`` per party, the ledger's publications and a note on the remote service."""

    parties: dict[str, Sign] = field(default_factory=dict)
    publications: list[dict[str, Any]] = field(default_factory=list)
    audit: dict[str, Any] | None = None
    note: str = ""


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _declared(algorithm: Any, options: Any, topics: Any, iterations: Any, seed: Any) -> dict[str, Any]:
    """What the algorithm declares of a run with these options: ``privacy`` (``Algorithm.privacy``), ``rounds`` and
    ``setup_rounds`` (``runs.round_count``); no DP and no round count for an unknown algorithm or options it no
    longer takes."""
    from fedtopic.algorithms.base import Privacy
    from fedtopic.algorithms.registry import algorithm_names, get_algorithm

    unknown = {"privacy": Privacy().as_dict(), "rounds": None, "setup_rounds": 0}
    if algorithm not in algorithm_names():
        return unknown
    algo = get_algorithm(str(algorithm))
    try:
        spec = algo.spec(int(topics or 2), int(iterations or 1), int(seed or 0), dict(options or {}))
        return {"privacy": algo.privacy(spec).as_dict(), "rounds": algo.rounds(spec),
                "setup_rounds": algo.setup_rounds(spec)}
    except (FedTopicError, TypeError, ValueError):
        return unknown


def _mode_of(algorithm: str) -> str | None:
    """sync, async or centralised for a registry name (None for an unknown one)."""
    from fedtopic.algorithms.base import Mode
    from fedtopic.algorithms.registry import algorithm_names, get_algorithm

    if algorithm not in algorithm_names():
        return None
    modes = get_algorithm(algorithm).modes
    return "sync" if Mode.sync in modes else "async" if Mode.async_ in modes else "centralised"


class RunFolder:
    """A run folder (``simulate``, ``train``, ``experiment``, ``demo``), while it runs or after."""

    def __init__(self, path: Path) -> None:
        path = Path(path)
        if not path.is_dir():
            raise ConfigError(f"{path} is not a folder: give a run folder (of simulate, train, experiment or demo) "
                              "or a consortium.toml with --party")
        if not any((path / n).exists() for n in (RUN_INFO, "summary.json", "history", "model.npz")):
            raise ConfigError(f"{path} holds no run (no run-info.json, summary.json, history/ or model.npz)")
        self.path = path
        self.viewer: str | None = None
        self.labels_path = path / LABELS_FILE
        self._alive: tuple[float, bool | None] = (float("-inf"), None)

    def meta(self) -> dict[str, Any]:
        info = _read_json(self.path / RUN_INFO) or {}
        summary = _read_json(self.path / "summary.json")
        out = {k: info.get(k) for k in ("kind", "algorithm", "mode", "topics", "iterations", "seed", "dataset",
                                        "protection", "transport", "options")}
        out["party_ids"] = list(info.get("parties") or [])
        if isinstance(summary, dict):
            for k in ("algorithm", "topics", "iterations", "seed", "dataset"):
                out[k] = out[k] if out[k] is not None else summary.get(k)
            out["protection"] = out["protection"] or summary.get("protection")
        if out["mode"] is None and out["algorithm"]:
            out["mode"] = _mode_of(str(out["algorithm"]))
        out |= _declared(out["algorithm"], out["options"], out["topics"], out["iterations"], out["seed"])
        out |= {k: info[k] for k in ("privacy",) if info.get(k) is not None}  # what the run recorded
        if info.get("setup_rounds") is not None:  # a run recorded before it did counted its setup as a round
            out |= {k: info[k] for k in ("rounds", "setup_rounds") if info.get(k) is not None}
        out["summary"] = summary if isinstance(summary, dict) else None
        out["finished"] = isinstance(summary, dict)
        out["process_alive"] = self.party_process_alive("")
        out["title"] = self.path.resolve().name
        return out

    def histories(self) -> dict[str, Path]:
        folder = self.path / "history"
        if not folder.is_dir():
            return {}
        return {p.stem: p for p in sorted(folder.glob("*.jsonl"))}

    def snapshots(self) -> dict[str, Path]:
        return {party: snapshot_path(path) for party, path in self.histories().items()}

    def party_process_alive(self, party: str) -> bool | None:
        """The run's process (every party of a run folder shares it, whatever ``party``), looked at most every
        0.5 s."""
        now = clock()
        if now - self._alive[0] > 0.5:
            info = _read_json(self.path / RUN_INFO)
            self._alive = (now, process_alive(info) if isinstance(info, dict) else None)
        return self._alive[1]

    def signs(self) -> Signs:
        return Signs(note="")

    def close(self) -> None:
        """Nothing runs in the background."""


def _file_stamp(path: Path) -> tuple[int, int] | None:
    """(mtime in ns, size) of ``path``, None where it cannot be read."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


class PartyView:
    """One party's view of a consortium: its own state folder, and the aggregator's status or the chain's channel
    heads for the others, polled on a background thread (``SIGNS_EVERY_SECONDS``)."""

    def __init__(self, config_path: Path, party: str, *, state_dir: Path | None = None,
                 rpc: str | None = None, url: str | None = None, insecure: bool = False) -> None:
        from fedtopic.algorithms.base import Mode
        from fedtopic.algorithms.registry import get_algorithm
        from fedtopic.consortium.config import load_consortium

        self.cfg = load_consortium(config_path)
        self._config_seen = _file_stamp(config_path)
        if party not in self.cfg.party_ids:
            raise ConfigError(f"--party {party}: not a party of {config_path} ({', '.join(self.cfg.party_ids)})")
        self.config_path, self.viewer = config_path, party
        self.state_dir = state_dir or config_path.parent / "state" / party
        self.labels_path = self.state_dir / LABELS_FILE
        self.sync = Mode.sync in get_algorithm(self.cfg.algorithm.name).modes
        self.rpc, self.url = rpc, url
        if self.sync:  # what the node itself trusts and signs with; a missing key or certificate is one line now
            from fedtopic.network.tls import configure_trust
            from fedtopic.node.party_setup import load_own_keys

            configure_trust(self.cfg.aggregator.tls_cert_file(config_path.parent), insecure)
            self.keys = load_own_keys(self.cfg, config_path, party)
        else:
            from fedtopic.ledger.endpoint import registry_of

            registry_of(self.cfg)  # a consortium not yet deployed is one line now, not a note on the page
        self._signs = Signs(note="asking the " + ("aggregator" if self.sync else "chain") + " …")
        self._stop, self._first = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._poll, name="dashboard-signs", daemon=True)
        self._thread.start()

    # ---- the party's own files -----------------------------------------------------------------------------
    def _follow_config(self) -> None:
        """Read consortium.toml again when it changed: a next run (``node run --fresh``) may train for another
        number of rounds, and a page left open since the first run showed that run's total ("round 182 / 150").
        A file caught mid-edit, or one that drops this party, keeps the settings read before."""
        from fedtopic.consortium.config import load_consortium

        stamp = _file_stamp(self.config_path)
        if stamp == self._config_seen:
            return
        self._config_seen = stamp
        try:
            cfg = load_consortium(self.config_path)
        except FedTopicError:
            return
        if self.viewer in cfg.party_ids:
            self.cfg = cfg

    def meta(self) -> dict[str, Any]:
        from fedtopic.algorithms.registry import get_algorithm

        self._follow_config()
        a = self.cfg.algorithm
        summary = _read_json(self.state_dir / "model" / "summary.json")
        return {"kind": "node", "algorithm": a.name, "mode": "sync" if self.sync else "async", "topics": a.topics,
                "iterations": a.iterations, "seed": a.seed, "dataset": self.cfg.data.dataset,
                "protection": self.cfg.aggregator.protection if self.sync else None,
                "transport": None if self.sync else "chain", "options": dict(a.options),
                "party_ids": list(self.cfg.party_ids), "summary": summary if isinstance(summary, dict) else None,
                "finished": isinstance(summary, dict), "process_alive": None,
                "privacy": get_algorithm(a.name).privacy(a.spec()).as_dict(),
                "rounds": get_algorithm(a.name).rounds(a.spec()),
                "setup_rounds": get_algorithm(a.name).setup_rounds(a.spec()),
                "title": f"{self.cfg.algorithm.name} — {self.viewer}'s view"}

    def histories(self) -> dict[str, Path]:
        return {self.viewer: self.state_dir / FILE_NAME}  # type: ignore[dict-item]

    def snapshots(self) -> dict[str, Path]:
        return {self.viewer: snapshot_path(self.state_dir / FILE_NAME)}  # type: ignore[dict-item]

    def party_process_alive(self, party: str) -> bool | None:
        if party != self.viewer:
            return None
        mark = _read_json(self.state_dir / PROCESS_FILE)
        return process_alive(mark) if isinstance(mark, dict) else None

    def signs(self) -> Signs:
        return self._signs

    def wait_for_signs(self, timeout: float = 10.0) -> None:
        """Until the first answer (or failure) of the aggregator or chain, at most ``timeout`` seconds."""
        self._first.wait(timeout)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)

    # ---- the others, from the aggregator or the chain ------------------------------------------------------
    def _poll(self) -> None:
        reader: _AggregatorReader | _ChainReader | None = None
        while not self._stop.is_set():
            try:
                if reader is None:
                    reader = _AggregatorReader(self) if self.sync else _ChainReader(self)
                self._signs = reader.read()
                self._first.set()
            except Exception as exc:  # noqa: BLE001 - the page says why the others are not shown, and retries
                self._signs = Signs(parties=self._signs.parties, publications=self._signs.publications,
                                    audit=self._signs.audit, note=f"cannot read the "
                                    f"{'aggregator' if self.sync else 'chain'}: {str(exc).splitlines()[0][:200]}")
                self._first.set()
            self._stop.wait(SIGNS_EVERY_SECONDS)


class _AggregatorReader:
    """The aggregator's ``/status``, asked as the viewing party."""

    def __init__(self, view: PartyView) -> None:
        from fedtopic.network.client import AggregatorClient

        self.client = AggregatorClient(view.url or view.cfg.aggregator.url, view.keys, "status", patience=0.0,
                                       timeout=5.0, link=view.cfg.aggregator.link)
        self.ids = list(view.cfg.party_ids)

    def read(self) -> Signs:
        status = self.client.status()
        out, live = signs_from_status(status, self.ids)
        return Signs(parties=out, note=f"aggregator {self.client.url}: {live} session(s) of this consortium")


def signs_from_status(status: StatusOut, ids: Sequence[str]) -> tuple[dict[str, Sign], int]:
    """Each member's sign of life from the aggregator's ``/status`` (its sessions with exactly these members; the
    running ones if any), and how many sessions that is. A party is awaited when an open round that has begun
    (another member's update is in) still lacks its update: an algorithm's sessions whose rounds have not begun
    (gFedNTM's validation sum between epochs, a setup session done with) list every member as missing.

    A party's round is its latest round that closed, as a history counts its rounds (a round is written once its
    aggregate is taken): an update in the open round is a round not yet done. Counting that update put a party
    waiting in round 101 at "101 (aggregator)" beside the viewer's own "100", both waiting in the same round."""
    sessions = [s for s in status.sessions if set(s.parties) == set(ids)]
    live = [s for s in sessions if s.state == "running"] or sessions
    out: dict[str, Sign] = {}
    for pid in ids:
        pairs = [(s, x) for s in live for x in s.seen if x.party == pid]
        seen = [x for _, x in pairs]
        times = [t for x in seen for t in (x.last_seen_at, x.last_update_at) if t is not None]
        rounds = [r for s, x in pairs if (r := _closed_round(s, x.last_round)) is not None]
        out[pid] = Sign(round=max(rounds) if rounds else None, last_sign=max(times) if times else None,
                        heartbeat=any(x.last_seen_at is not None for x in seen),
                        finished=bool(seen) and all(x.ended == "finished" for x in seen),
                        awaited=any(pid in s.missing and s.current_round.received for s in live))
    return out, len(live)


def _closed_round(session: SessionStatus, last_round: int | None) -> int | None:
    """``last_round``, or the round before it while that round is the session's open one (None before round 0)."""
    if last_round is None:
        return None
    open_ = session.current_round
    if last_round == open_.round and open_.state != "closed":
        return last_round - 1 if last_round > 0 else None
    return last_round


class _ChainReader:
    """The channel heads and new ``Published`` events of every member (sizes, blocks and gas; payloads sealed),
    and how far ``ledger audit`` has verified (``state/ledger-audit.json``). A party's sign of life is when this
    reader first saw its latest round (block timestamps follow the chain's clock, which a dev chain runs ahead)."""

    MAX_PUBLICATIONS = 2_000
    FIRST_BLOCKS = 1_000  # publications shown from this many blocks before the head at start
    BLOCKS_PER_READ = 200
    READ_SECONDS = 0.5
    GAS_RECEIPTS = 50

    def __init__(self, view: PartyView) -> None:
        from fedtopic.ledger.endpoint import chain_for, registry_of

        self.view = view
        self.w3 = chain_for(view.cfg, view.rpc)
        self.registry = registry_of(view.cfg)
        self.next_block: int | None = None
        self.publications: list[dict[str, Any]] = []
        self.seen: dict[str, tuple[int, float]] = {}  # party → (its latest round, when this reader first saw it)
        self.gaps: dict[str, list[float]] = {}  # party → seconds per round between the last changes seen

    def read(self) -> Signs:
        from fedtopic.ledger.audit import ledger_status
        from fedtopic.ledger.runs import local_round, run_of

        rows = ledger_status(self.w3, self.registry)
        now = clock()
        for r in rows:  # a block's timestamp is the chain's clock, not ours: a new round is a sign of life *now*
            before = self.seen.get(r.party_id)
            if r.latest_round is not None and (before is None or before[0] != r.latest_round):
                if before is not None and r.latest_round > before[0] and run_of(r.latest_round) == run_of(before[0]):
                    gaps = self.gaps.setdefault(r.party_id, [])
                    gaps.append((now - before[1]) / (r.latest_round - before[0]))
                    del gaps[:-20]
                self.seen[r.party_id] = (r.latest_round, now)
        head = int(self.w3.eth.block_number)
        channels = {r.channel: r.party_id for r in rows if int(r.channel, 16)}
        if channels:
            self._read_publications(channels, head, now)
        parties = {r.party_id: Sign(round=None if r.latest_round is None else local_round(r.latest_round),
                                    last_sign=self.seen[r.party_id][1],
                                    interval=statistics.median(self.gaps[r.party_id])
                                    if self.gaps.get(r.party_id) else None)
                   if r.party_id in self.seen else Sign() for r in rows}
        audit = _read_json(self.view.config_path.parent / "state" / "ledger-audit.json")
        verified = None if not isinstance(audit, dict) else {
            "through_block": audit.get("block"), "failures": len(audit.get("failures", [])),
            "rounds_verified": sum(int(c.get("rounds_verified", 0)) for c in audit.get("channels", {}).values())}
        return Signs(parties=parties, publications=list(self.publications), audit=verified,
                     note=f"chain at block {head}" + ("" if self.next_block is None or self.next_block > head else
                                                      f" (publications read through block {self.next_block - 1})"))

    def _read_publications(self, channels: dict[str, str], head: int, now: float) -> None:
        """The ``Published`` events from where the last read stopped through ``head``, ``BLOCKS_PER_READ`` blocks an
        ``eth_getLogs``, for at most ``READ_SECONDS`` (a longer backlog is read on at the next poll). Gas is asked
        for the newest ``GAS_RECEIPTS`` transactions only: a receipt a publication cost a request each, and a read of
        200 blocks' receipts took the poll so long that a fast consortium's chain ran away from it ("chain at block
        1122 (publications read through block 638)") and the rounds it showed were seconds old."""
        from fedtopic.ledger import raw
        from fedtopic.ledger.runs import local_round, run_of

        lo = self.next_block if self.next_block is not None else max(0, head - self.FIRST_BLOCKS)
        started, logs = time.monotonic(), []
        while lo <= head and time.monotonic() - started < self.READ_SECONDS:
            hi = min(head, lo + self.BLOCKS_PER_READ - 1)
            logs += raw.fetch_logs(self.w3, list(channels), lo, hi)
            lo = self.next_block = hi + 1
        logs = logs[-self.MAX_PUBLICATIONS:]
        newest = list(dict.fromkeys(log.tx_hash for log in reversed(logs)))[:self.GAS_RECEIPTS]
        gas = self._gas_of(newest)
        for log in logs:  # rounds as the parties' histories number them (run r's round t is (r−1)·2^32 + t)
            self.publications.append({"block": log.block, "party": channels.get(log.channel, log.channel),
                                      "round": local_round(log.round), "run": run_of(log.round),
                                      "chunk": log.chunk, "chunks": log.n_chunks,
                                      "bytes": len(log.payload), "gas": gas.get(log.tx_hash), "seen": now})
        self.publications = self.publications[-self.MAX_PUBLICATIONS:]

    def _gas_of(self, hashes: Sequence[str]) -> dict[str, int]:
        out = {}
        for h in hashes:
            try:
                out[h] = int(self.w3.eth.get_transaction_receipt(h)["gasUsed"])
            except Exception:  # noqa: BLE001 - a receipt the node no longer keeps: gas unknown
                continue
        return out


def open_source(path: Path, *, party: str | None = None, state_dir: Path | None = None,
                rpc: str | None = None, url: str | None = None, insecure: bool = False) -> RunFolder | PartyView:
    """A run folder, or a consortium.toml seen as ``party`` (ConfigError in one line otherwise)."""
    path = Path(path)
    if path.suffix == ".toml":
        if party is None:
            raise ConfigError(f"{path} is a consortium config: give --party ID to watch it as that party")
        if not path.is_file():
            raise ConfigError(f"{path}: no such file")
        return PartyView(path, party, state_dir=state_dir, rpc=rpc, url=url, insecure=insecure)
    if party is not None:
        raise ConfigError("--party goes with a consortium.toml, not a run folder")
    return RunFolder(path)


def clock() -> float:
    """Wall-clock time (the histories' and the chain's times are wall-clock)."""
    return time.time()
