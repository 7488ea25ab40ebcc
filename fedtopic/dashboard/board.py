"""The dashboard's figures: every panel's data as JSON-ready dicts, from a source (``sources``), read
incrementally (``tail``) and cached, so that ``/api/state`` answers in milliseconds over 20 parties × 1,000 rounds.

History rows go to the page in a compact form (``compact``), each party's rows in arrival order; a client keeps
a cursor per party (how many it has) and asks only for what came after it.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.dashboard.liveness import (
    Leaders,
    Verdict,
    judge,
    stop_after,
    usual_interval,
)
from fedtopic.dashboard.protection_view import what_is_seen
from fedtopic.dashboard.sources import PartyView, RunFolder, clock
from fedtopic.dashboard.tail import HistoryTail
from fedtopic.eval.topic_view import match_topics, topic_map
from fedtopic.runs.folder import write_json
from fedtopic.runs.history import TOP_WORDS
from fedtopic.runs.round_count import training_round

REFRESH_SECONDS = 0.25  # files are looked at no more often than this, however many pages ask
MAX_LABEL_CHARS = 80
MAX_LABELS = 10_000
MAP_MAX_TOPICS = 400  # the 2-D map's JS matrix is K² × words: beyond this the page says why it has no map


def compact(row: Mapping[str, Any], everyone: frozenset[str]) -> dict[str, Any]:
    """A history line as the page needs it: r round, t time, c/x/w compute/exchange/wait seconds, u/d bytes
    up/down, q quality, e ε, s the largest staleness, in the contributors when not every party, behind, ledger,
    rs resumed. Absent fields are left out."""
    out: dict[str, Any] = {"r": row["round"], "t": row.get("time"), "c": row.get("compute_s"),
                           "x": row.get("exchange_s"), "w": row.get("wait_s"), "u": row.get("bytes_up"),
                           "d": row.get("bytes_down")}
    if row.get("quality") is not None:
        out["q"] = row["quality"]
    if row.get("epsilon") is not None:
        out["e"] = row["epsilon"]
    staleness = row.get("staleness")
    if isinstance(staleness, dict) and staleness:
        out["s"] = max(int(v) for v in staleness.values())
    contributors = row.get("contributors")
    if isinstance(contributors, list) and frozenset(contributors) != everyone:
        out["in"] = contributors
    extra = row.get("extra") or {}
    if isinstance(extra, dict):
        if extra.get("behind"):
            out["behind"] = extra["behind"]
        if isinstance(extra.get("ledger"), dict):
            out["ledger"] = extra["ledger"]
    if row.get("resumed"):
        out["rs"] = True
    return out


class _Track:
    """One party's history as read so far: the tail, and its compact rows in arrival order."""

    def __init__(self, path: Path) -> None:
        self.tail = HistoryTail(path)
        self.log: list[dict[str, Any]] = []
        self.snapshots: list[dict[str, Any]] = []  # history lines with top words: round, words, weights, prevalence
        self.generation = 0  # the tail's: a file read again from the start (a new run) empties the lists
        self.bytes_up = self.bytes_down = 0  # over the last line of every round
        self.quality_name: str | None = None  # the last one a line named (a round without a figure names none)

    def count(self, row: Mapping[str, Any], replaced: Mapping[str, Any] | None) -> None:
        """Keep the byte totals as ``row`` arrives (``replaced``: the earlier line of its round)."""
        self.quality_name = row.get("quality_name") or self.quality_name
        for old, sign in ((replaced, -1), (row, 1)):
            if old is not None:
                self.bytes_up += sign * int(old.get("bytes_up") or 0)
                self.bytes_down += sign * int(old.get("bytes_down") or 0)

    def view(self) -> _PartyRows:
        """What the state needs of this party, copied (so it can be read while the files are read again)."""
        latest = self.tail.latest()
        return _PartyRows(latest=None if latest is None else dict(latest),
                          times=[r["t"] for r in self.log[-50:] if r.get("t") is not None],
                          bytes_up=self.bytes_up, bytes_down=self.bytes_down, quality_name=self.quality_name)


@dataclass(frozen=True)
class _PartyRows:
    latest: dict[str, Any] | None
    times: list[float]
    bytes_up: int
    bytes_down: int
    quality_name: str | None = None


def _ended_at(tracks: Mapping[str, _PartyRows], told: Mapping[str, Any], last: int | None) -> float | None:
    """When an ended run ended, as far as this board saw: the earliest sign of a party at round ``last`` or beyond
    (its own history line's time, else when the remote service first showed it there); None where none is known."""
    if last is None:
        return None
    times = [float(t.latest["time"]) for t in tracks.values() if t.latest is not None and t.latest.get("time")
             is not None and int(t.latest["round"]) >= last]
    times += [float(s.last_sign) for s in told.values() if getattr(s, "round", None) is not None and
              getattr(s, "last_sign", None) is not None and s.round >= last]
    return min(times, default=None)


def _remote(meta: Mapping[str, Any]) -> str:
    """Where a party's page learns of the others: the chain (DAFed, asynchronous) or the aggregator."""
    return "chain" if meta.get("mode") == "async" else "aggregator"


class Board:
    """Every panel's data for one source; thread-safe; files are re-read at most every ``REFRESH_SECONDS``."""

    def __init__(self, source: RunFolder | PartyView) -> None:
        self.source = source
        self._lock = threading.Lock()
        self._tracks: dict[str, _Track] = {}
        self._last_refresh = 0.0
        self._meta: dict[str, Any] = {}
        self.version = 0
        self._topics_cache: dict[str, tuple[Any, dict[str, Any]]] = {}
        self._topic_ids: dict[str, _TopicIds] = {}
        self._topics_lock = threading.Lock()

    # ---- reading ---------------------------------------------------------------------------------------------
    def refresh(self, *, force: bool = False) -> None:
        """Read what was appended since the last look (at most every ``REFRESH_SECONDS`` unless ``force``)."""
        with self._lock:
            now = clock()
            if not force and now - self._last_refresh < REFRESH_SECONDS:
                return
            self._last_refresh = now
            meta = self.source.meta()
            changed = meta != self._meta
            self._meta = meta
            everyone = frozenset(meta.get("party_ids") or [])
            for party, path in self.source.histories().items():
                track = self._tracks.setdefault(party, _Track(path))
                new = track.tail.poll()
                if track.tail.generation != track.generation:  # another run's file: forget the old one's rows
                    track.log, track.snapshots, track.generation = [], [], track.tail.generation
                    track.quality_name = None
                    track.bytes_up = track.bytes_down = 0
                    with self._topics_lock:
                        self._topic_ids.pop(party, None)
                        self._topics_cache.pop(party, None)
                latest: dict[int, dict[str, Any]] = {}  # this poll's line per round so far
                for row in new:  # a redone round's bytes replace its earlier line's
                    r = row["round"]
                    track.count(row, latest[r] if r in latest else track.tail.replaced.get(r))
                    latest[r] = row
                    track.log.append(compact(row, everyone or frozenset(row.get("contributors") or [])))
                    if row.get("top_words"):
                        track.snapshots.append({"round": row["round"], "words": row["top_words"],
                                                "weights": row.get("top_weights"),
                                                "prevalence": row.get("prevalence")})
                changed = changed or bool(new)
            if changed:
                self.version += 1

    # ---- /api/state ----------------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The run and every party's current status (small: what the page redraws on every update)."""
        self.refresh()
        with self._lock:
            meta = dict(self._meta)
            tracks = {pid: t.view() for pid, t in self._tracks.items()}
            version = self.version
        signs = self.source.signs()
        now = clock()
        ids = list(meta.get("party_ids") or []) or sorted(tracks)
        for pid in tracks:
            if pid not in ids:
                ids.append(pid)
        own = {pid: t.latest["round"] for pid, t in tracks.items() if t.latest is not None}
        told = {pid: s.round for pid, s in signs.parties.items() if s.round is not None}
        leader = max([*own.values(), *told.values()], default=None)
        # a chain counts each party's publications, the runtime's rounds; an aggregator counts its sessions' rounds
        leaders = Leaders(own=leader if _remote(meta) == "chain" else max(own.values(), default=None),
                          told=max(told.values(), default=None))
        # DAFed ends for everyone once the fastest party has published its last round (history round setup + R − 1,
        # ``runs.round_count``): a party silent after that ended
        rounds, setup = meta.get("rounds"), int(meta.get("setup_rounds") or 0)
        last = setup + rounds - 1 if isinstance(rounds, int) else None
        run_over = bool(meta.get("finished")) or (meta.get("mode") == "async" and leader is not None and
                                                 last is not None and leader >= last)
        ended_at = None  # when a run that is over ended (-inf where no time of it is known: every silent party ended with it)
        if run_over:
            ended_at = _ended_at(tracks, signs.parties, last if last is not None else leader) or float("-inf")
        parties = [self._party(pid, tracks.get(pid), signs.parties.get(pid), meta, leaders, now, ended_at)
                   for pid in ids]
        privacy = meta.get("privacy") or {}
        budget = privacy.get("epsilon_budget")
        run = {k: meta.get(k) for k in ("title", "kind", "algorithm", "mode", "topics", "iterations", "seed",
                                        "dataset", "protection", "transport", "finished")}
        run |= {"parties": len(ids), "viewer": getattr(self.source, "viewer", None), "epsilon_budget": budget,
                "rounds": rounds if isinstance(rounds, int) else None, "setup_rounds": setup,
                "sees": what_is_seen(meta.get("mode"), meta.get("protection"), meta.get("transport"),
                                     dp=bool(privacy.get("dp"))),
                "summary": _headline(meta.get("summary")), "note": signs.note,
                "state": "finished" if meta.get("finished") else
                ("stopped" if meta.get("process_alive") is False else "running")}
        return {"version": version, "now": now, "run": run, "parties": parties,
                "audit": signs.audit}

    def _party(self, pid: str, track: _PartyRows | None, sign: Any, meta: Mapping[str, Any], leaders: Leaders,
               now: float, ended_at: float | None) -> dict[str, Any]:
        last = None if track is None else track.latest
        interval = (None if track is None else usual_interval(track.times)) or getattr(sign, "interval", None)
        own_round = None if last is None else int(last["round"])
        round_ = own_round if own_round is not None else (sign.round if sign is not None else None)
        leader = leaders.own if own_round is not None else leaders.told
        last_time = None if last is None else last.get("time")
        last_sign = max([t for t in (last_time, getattr(sign, "last_sign", None)) if t is not None], default=None)
        alive = self.source.party_process_alive(pid)
        viewer = getattr(self.source, "viewer", None)
        finished = bool(getattr(sign, "finished", False)) or (bool(meta.get("finished")) and viewer in (None, pid))
        heartbeat = bool(getattr(sign, "heartbeat", False)) and alive is None
        verdict = judge(now=now, last_sign=last_sign, interval=interval, round=round_, leader=leader,
                        finished=finished, process_alive=alive, heartbeat=heartbeat)
        if ended_at is not None and verdict.status == "stopped":  # silent after the run ended: it ended with it;
            quiet_from = ended_at - stop_after(interval, heartbeat=heartbeat)  # silent already before: it stopped
            verdict = (Verdict("finished", "silent since the run ended") if last_sign is None or last_sign >= quiet_from
                       else Verdict("stopped", f"no sign of life for {now - last_sign:.0f} s, since before the run "
                                               "ended"))
        if verdict.status == "behind" and own_round is None:  # compared with the same answer's rounds only
            verdict = Verdict("behind", f"{verdict.why} by the {_remote(meta)}'s figures")
        up, down = (0, 0) if track is None else (track.bytes_up, track.bytes_down)
        out = {"party": pid, "round": round_, "last_time": last_sign, "age_s": None if last_sign is None else
               now - last_sign, "status": verdict.status, "why": verdict.why, "bytes_up": up, "bytes_down": down,
               "interval_s": interval, "stop_after_s": stop_after(interval, heartbeat=heartbeat),
               "own_history": track is not None and last is not None,
               "round_source": None if round_ is None else "history" if own_round is not None else
               _remote(meta),
               "awaited": bool(getattr(sign, "awaited", False)),
               "training_round": None if own_round is None else
               training_round(own_round, int(meta.get("setup_rounds") or 0))}
        if last is not None:
            staleness = last.get("staleness") or {}
            out |= {"quality": last.get("quality"),
                    "quality_name": last.get("quality_name") or (None if track is None else track.quality_name),
                    "epsilon": last.get("epsilon"), "contributors": last.get("contributors"),
                    "staleness": staleness if isinstance(staleness, dict) else {},
                    "behind": (last.get("extra") or {}).get("behind") or {}}
        if leader is not None and round_ is not None:
            out["rounds_behind"] = leader - round_
        return out

    # ---- /api/history --------------------------------------------------------------------------------------
    def history(self, cursors: Mapping[str, int] | None = None) -> dict[str, Any]:
        """Each party's compact rows after ``cursors[party]`` (all without), and the new cursors."""
        self.refresh()
        cursors = cursors or {}
        with self._lock:
            rows = {pid: t.log[_start(cursors.get(pid, 0), len(t.log)):] for pid, t in self._tracks.items()}
            return {"version": self.version, "rows": rows,
                    "cursors": {pid: len(t.log) for pid, t in self._tracks.items()}}

    # ---- /api/topics ---------------------------------------------------------------------------------------
    def topics(self, party: str | None = None) -> dict[str, Any]:
        """The latest topics of ``party`` (default: the viewer, else the first party with a snapshot): every topic
        with its stable id, label, relevance candidates, prevalence and drift; the 2-D map; drift over rounds."""
        self.refresh()
        snaps = self.source.snapshots()
        with self._lock:
            tracks = {pid: list(t.snapshots) for pid, t in self._tracks.items()}
        asked = party
        if party is None:
            party = getattr(self.source, "viewer", None) or next(
                (p for p, path in snaps.items() if path.is_file()), None) or next(iter(tracks), None)
        labels = self.labels()
        live = _read_snapshot(snaps.get(party)) if party is not None else None
        finished = isinstance(self.source, RunFolder) and (self.source.path / "summary.json").is_file()
        if isinstance(self.source, RunFolder) and (live is None or (finished and asked is None)):
            # a finished run shows its final model (what `fedtopic topics` shows), not its last snapshot
            live = _model_snapshot(self.source.path) or live
        history = tracks.get(party, []) if party is not None else []
        key = (party, None if live is None else (live.get("round"), live.get("time")), len(history))
        with self._topics_lock:  # two pages asking at once advance the ids once
            cached = self._topics_cache.get(str(party))
            if cached is None or cached[0] != key:
                known = self._topic_ids.setdefault(str(party), _TopicIds())
                known.advance(history)
                cached = (key, _topic_panel(party, live, known))
                self._topics_cache[str(party)] = cached
        return dict(cached[1]) | {"labels": labels,
                                  "parties": sorted(p for p, path in snaps.items() if path.is_file())}

    # ---- labels --------------------------------------------------------------------------------------------
    def labels(self) -> dict[str, str]:
        """The user's topic labels (stable id → text), saved beside the run."""
        try:
            data = json.loads(self.source.labels_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def set_label(self, topic: int, text: str) -> dict[str, str]:
        """Save ``text`` as topic ``topic``'s label (empty: remove it); ValueError on a label too long or a topic
        id this board does not show. The file is 0600, as the party's state around it."""
        text = " ".join(text.split())
        if len(text) > MAX_LABEL_CHARS:
            raise ValueError(f"a label has at most {MAX_LABEL_CHARS} characters")
        if not 0 <= topic < MAX_LABELS:
            raise ValueError(f"topic ids run from 0 to {MAX_LABELS - 1}")
        shown = self._shown_ids()
        with self._lock:
            labels = self.labels()
            if text and topic not in shown:
                raise ValueError(f"no topic has id {topic} on this board" + (
                    f" (its topics' ids: {min(shown)}–{max(shown)})" if shown else " (it shows no topics yet)"))
            if text:
                labels[str(topic)] = text
            else:
                labels.pop(str(topic), None)
            self.source.labels_path.parent.mkdir(parents=True, exist_ok=True)
            write_json(self.source.labels_path, dict(sorted(labels.items(), key=lambda kv: int(kv[0]))),
                       mode=0o600)
            return labels

    def _shown_ids(self) -> set[int]:
        """The stable ids of every topic the board shows, for any party."""
        first = self.topics()
        ids = {int(t["id"]) for t in first["topics"]}
        for party in first["parties"]:
            if party != first["party"]:
                ids |= {int(t["id"]) for t in self.topics(party)["topics"]}
        return ids

    # ---- /api/ledger ---------------------------------------------------------------------------------------
    def ledger(self) -> dict[str, Any]:
        """Publications on a chain (block, party, round, bytes, gas): from the chain where this view reads it,
        else from the parties' own history lines; and how far ``ledger audit`` has verified."""
        self.refresh()
        signs = self.source.signs()
        if signs.publications:
            return {"publications": signs.publications[-500:], "total": len(signs.publications),
                    "audit": signs.audit, "source": "chain"}
        with self._lock:
            pubs = [{"party": pid, "round": r["r"], "time": r.get("t")} | r["ledger"]
                    for pid, t in self._tracks.items() for r in t.log if "ledger" in r]
        pubs.sort(key=lambda p: (p.get("block", 0), p["party"]))
        return {"publications": pubs[-500:], "total": len(pubs), "audit": signs.audit, "source": "history"}

    def close(self) -> None:
        self.source.close()


def _start(cursor: int, length: int) -> int:
    """Where a page's rows resume: after its cursor, or from the start when the cursor is past the end (the
    history was read again from the start: a new run in the folder)."""
    return cursor if 0 <= cursor <= length else 0


def _headline(summary: Any) -> dict[str, Any] | None:
    """The figures of a finished run the convergence panel shows beside the curves."""
    if not isinstance(summary, dict):
        return None
    keys = ("perplexity", "npmi", "topic_diversity", "wall_seconds", "centralized_perplexity",
            "perplexity_gap_vs_centralized", "standalone_perplexity", "rounds", "epsilon", "bytes_sent")
    out = {k: summary[k] for k in keys if k in summary and not isinstance(summary[k], (dict, list))}
    comparison = summary.get("comparison")  # the demo's baselines, trained beside it
    if isinstance(comparison, dict):
        for name, key in (("centralized-lda", "centralized_perplexity"), ("stand-alone", "standalone_perplexity")):
            value = comparison.get(name, {}).get("perplexity") if isinstance(comparison.get(name), dict) else None
            if isinstance(value, (int, float)) and key not in out:
                out[key] = value
    curve = summary.get("perplexity_curve")  # a train run's held-out perplexity every --eval-every iterations
    if isinstance(curve, dict):
        out["perplexity_curve"] = {str(k): [[float(x) for x in point[:2]] for point in points]
                                   for k, points in curve.items() if isinstance(points, list)}
    return out


def _read_snapshot(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("topics"), list) else None


def _model_snapshot(run_dir: Path) -> dict[str, Any] | None:
    """A finished run without history snapshots (``train``): its model.npz as a topic snapshot, built once per
    version of the file (the topics' cache keys on the snapshot's time)."""
    try:
        mtime = (run_dir / "model.npz").stat().st_mtime_ns
    except OSError:
        return None
    return _model_snapshot_of(str(run_dir), mtime)


@functools.lru_cache(maxsize=4)
def _model_snapshot_of(run_dir: str, mtime_ns: int) -> dict[str, Any] | None:
    """``_model_snapshot`` of ``run_dir`` whose model.npz was last written at ``mtime_ns``."""
    from fedtopic.errors import ModelError
    from fedtopic.runs.folder import load_topic_model
    from fedtopic.runs.topic_snapshot import build_snapshot

    try:
        model = load_topic_model(Path(run_dir))
    except ModelError:
        return None
    phi = np.asarray(model.phi, dtype=np.float64)
    phi = phi / np.maximum(phi.sum(axis=1, keepdims=True), 1e-300)
    prevalence = _prevalence_file(Path(run_dir))
    return build_snapshot(phi, prevalence, model.vocab, party="model", algorithm=model.algorithm, round=-1)


def _prevalence_file(run_dir: Path) -> np.ndarray | None:
    """The topics' prevalence from topics.json, where the run wrote it."""
    try:
        topics = json.loads((run_dir / "topics.json").read_text(encoding="utf-8"))
        values = [t.get("prevalence") for t in topics]
    except (OSError, ValueError, AttributeError, TypeError):
        return None
    if not values or any(not isinstance(v, (int, float)) for v in values):
        return None
    arr = np.asarray(values, dtype=np.float64)
    return arr / arr.sum() if arr.sum() > 0 else None


def _as_dist(words: list[str], weights: list[float] | None) -> dict[str, float]:
    """A topic's listed words as word → weight (rank weights 1/(i+1) where the history has no weights)."""
    if weights is None or len(weights) != len(words):
        return {w: 1.0 / (i + 1) for i, w in enumerate(words)}
    return {w: float(x) for w, x in zip(words, weights)}


def _top_by_weight(words: list[str], weights: list[float] | None, n: int = TOP_WORDS) -> dict[str, float]:
    """A snapshot topic's ``n`` heaviest listed words as word → φ: the history's ``top_words`` rule, so that the
    live drift and the drift series measure the same thing (``eval.topic_view``)."""
    if weights is None or len(weights) != len(words):
        return _as_dist(words[:n], None)
    return dict(sorted(zip(words, weights), key=lambda wx: -wx[1])[:n])


class _TopicIds:
    """Stable topic ids through one party's history snapshots, advanced only over the snapshots not yet seen."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.previous: list[dict[str, float]] = []
        self.last_drift: list[float | None] = []
        self.last_round: int | None = None
        self.drift_series: dict[str, list[list[float]]] = {}
        self.done = 0

    def advance(self, snapshots: list[dict[str, Any]]) -> None:
        for snap in snapshots[self.done:]:
            current = [_as_dist(w, None if snap["weights"] is None else snap["weights"][k])
                       for k, w in enumerate(snap["words"])]
            self.ids, self.last_drift = match_topics(self.previous, current, self.ids)
            for i, d in zip(self.ids, self.last_drift):
                if d is not None:
                    self.drift_series.setdefault(str(i), []).append([snap["round"], round(d, 4)])
            self.previous, self.last_round = current, snap["round"]
        self.done = len(snapshots)


def _topic_panel(party: str | None, live: dict[str, Any] | None, known: _TopicIds) -> dict[str, Any]:
    """The live snapshot's topics under the ids ``known`` carries (matched to the last history snapshot), the
    drift series, the map."""
    out: dict[str, Any] = {"party": party, "round": None, "topics": [], "map": None,
                           "drift": known.drift_series, "map_note": ""}
    if live is None:
        return out
    topics = live["topics"]
    if live.get("round") == known.last_round and len(known.ids) == len(topics):
        live_ids, live_drift = known.ids, known.last_drift
    else:
        current = [_top_by_weight(t["words"], t["weights"]) for t in topics]
        live_ids, live_drift = match_topics(known.previous, current, known.ids)
    prevalence = live.get("prevalence")
    rows = []
    for k, t in enumerate(topics):
        rows.append({"id": live_ids[k], "index": k, "words": t["words"], "weights": t["weights"],
                     "marginal": t["marginal"], "prevalence": None if prevalence is None else prevalence[k],
                     "drift": live_drift[k]})
    out |= {"round": live.get("round"), "algorithm": live.get("algorithm"), "topics": rows,
            "has_prevalence": prevalence is not None}
    if isinstance(live.get("map"), list) and len(live["map"]) == len(topics):
        out["map"] = live["map"]  # drawn from the whole Φ when the snapshot was taken
    elif len(topics) > MAP_MAX_TOPICS:
        out["map_note"] = f"no map beyond {MAP_MAX_TOPICS} topics"
    elif len(topics) >= 2:
        out["map"] = [[round(float(x), 5), round(float(y), 5)] for x, y in topic_map(_candidate_phi(topics))]
        out["map_note"] = "drawn from the topics' leading words (Φ too large to map whole)"
    return out


def _candidate_phi(topics: list[dict[str, Any]]) -> np.ndarray:
    """float64[K,U]: each topic's weights over the union U of every topic's candidate words, rows renormalised
    (the snapshot keeps candidates, not Φ: the map's distances are those of Φ restricted to the words any topic
    leads with)."""
    vocab: dict[str, int] = {}
    for t in topics:
        for w in t["words"]:
            vocab.setdefault(w, len(vocab))
    phi = np.zeros((len(topics), len(vocab)))
    for k, t in enumerate(topics):
        for w, x in zip(t["words"], t["weights"]):
            phi[k, vocab[w]] = x
    # a word another topic leads with but this one did not list: its (small) weight is unknown; the marginal
    # floor keeps the distance finite and is the same for every topic
    floor = min((min(t["weights"]) for t in topics if t["weights"]), default=1e-9) * 1e-3
    phi = np.maximum(phi, floor)
    return phi / phi.sum(axis=1, keepdims=True)
