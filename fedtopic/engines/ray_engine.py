"""``ray``: the parties of a simulation on a Ray cluster (the optional extra ``fedtopic[cluster]``), as Flower's
simulation engine runs its clients.

A pool of actors, one per CPU of the cluster (never more than the parties), each holding a shard of the parties
(party i in actor i mod n) and running them as threads of its process with its own compute slots: a synchronous
round needs every party at once, so a shard's parties cannot take turns. One actor per party would cost a process
each (20 actors on this 2-core machine spawned 28 processes in 11 s). The aggregator stays the separate process the
harness starts, which every party reaches over HTTP; so the parties compute the same model bit for bit as on the
threads engine (``tests/test_engines_ray.py``). A party's work and its result cross processes by Ray's pickling;
results are plain data (history rows, state arrays). Each party's history lines and the run's summary name the
Ray node it ran on (``ray_node``).

``address``: a running cluster (``ray start --head`` on one machine, ``ray start --address HEAD:6379`` on the
others; then ``--address auto`` or ``HEAD:6379``); None starts a local Ray for the run and stops it after. The
actors are spread over the cluster's nodes by their CPUs (``_cpu_places``). The aggregator listens on 127.0.0.1
unless ``simulate --aggregator-host ADDR`` binds it where the other nodes reach it; the parties' keys and data
travel with their work, and their history lines come back with their results.

Ray's own log lines ("Started a local Ray instance", its token warning) stay out of fedtopic's output unless
``--verbose``. Its token: a local Ray started for a run gets a fresh one in the run's folder (``ray/auth_token``,
0600), never ``~/.ray``, unless the user gives one (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or
``RAY_AUTH_MODE``); joining a cluster uses the cluster's, as Ray finds it. Either way the run says where it is.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from fedtopic.engines.base import Engine, Work, set_placement
from fedtopic.engines.threads import ThreadEngine
from fedtopic.errors import ConfigError, TrainingError

T = TypeVar("T")
RESTARTS = 2
"""Times a shard's actor is restarted after its process died (a killed worker, a lost node)."""
USER_TOKEN = ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE")
"""The variables by which a user gives Ray its token (or its mode): then fedtopic makes none."""


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError("--engine ray needs Ray: pip install 'fedtopic[cluster]'") from None
    return ray


class _Shard:
    """One actor's parties, run as threads of its process (``ThreadEngine``) with the actor's slots."""

    def run(self, work: Work[Any], indices: list[int], names: list[str], slots: int) -> list[Any]:
        import ray

        set_placement({"ray_node": ray.get_runtime_context().get_node_id()})
        return ThreadEngine().run(names, lambda j, sem: work(indices[j], sem), slots=slots)


class RayEngine(Engine):
    """A pool of Ray actors, each running a shard of the parties."""

    name: ClassVar[str] = "ray"
    summary: ClassVar[str] = "a pool of Ray actors, one per CPU of the cluster, each with a shard of the parties"
    in_process: ClassVar[bool] = False

    def __init__(self, folder: Path | None = None, verbose: bool = False,
                 say: Callable[[str], None] | None = None) -> None:
        self.folder, self.verbose, self.say = folder, verbose, say

    def configured(self, folder: Path | None, *, verbose: bool = False,
                   say: Callable[[str], None] | None = None) -> RayEngine:
        """This engine for a run in ``folder`` (its token goes there), saying where the token is through ``say``."""
        return RayEngine(folder, verbose, say)

    def run(self, names: Sequence[str], work: Work[T], *, slots: int, address: str | None = None) -> list[T]:
        ray = _ray()
        with self._joined(ray, address):
            actors: list[Any] = []
            try:
                return self._run_shards(ray, names, work, slots, actors)
            finally:
                for actor in actors:
                    ray.kill(actor)

    @staticmethod
    def _run_shards(ray: Any, names: Sequence[str], work: Work[T], slots: int, actors: list[Any]) -> list[T]:
        """The pool's shards to the end (the actors it starts are appended to ``actors``, for the caller to stop)."""
        places = _cpu_places(ray)
        n = max(1, min(len(names), len(places)))
        shards = [list(range(a, len(names), n)) for a in range(n)]
        # the slots, not Ray's CPU count, bound the parties' compute; an actor whose process dies is restarted
        # and its shard run again, each party resuming from its checkpoint (the launcher gives them state)
        remote = ray.remote(num_cpus=0, max_restarts=RESTARTS, max_task_retries=RESTARTS)(_Shard)
        actors += [remote.options(scheduling_strategy=_on(places[a])).remote() if places else remote.remote()
                   for a in range(len(shards))]
        try:
            futures = {actor.run.remote(work, shard, [names[i] for i in shard], slots): shard
                       for actor, shard in zip(actors, shards)}
        except TypeError as exc:  # the work holds something of this process that cannot travel
            raise TrainingError(f"the parties' work cannot be sent to Ray: {exc}") from None
        results: dict[int, T] = {}
        pending = list(futures)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            try:
                out = ray.get(done[0])
            except ray.exceptions.RayError as exc:
                cause = getattr(exc, "cause", None)
                raise TrainingError(str(cause) if cause is not None else f"a Ray actor failed: {exc}") from None
            results.update(zip(futures[done[0]], out))
        return [results[i] for i in range(len(names))]

    def map(self, fn: Callable[..., T], tasks: Sequence[tuple[Any, ...]], *, address: str | None = None) -> list[T]:
        """Every task as a Ray task of one CPU; results in task order; the first failure stops the others. An
        argument object that several tasks share (a corpus, its parts) goes into Ray's object store once."""
        ray = _ray()
        with self._joined(ray, address):
            remote = ray.remote(num_cpus=1)(_placed(fn))
            stored: dict[int, Any] = {}

            def once(arg: Any) -> Any:
                if isinstance(arg, (str, int, float, bool, type(None))):
                    return arg
                if id(arg) not in stored:  # the tasks hold every argument, so no id is reused meanwhile
                    stored[id(arg)] = ray.put(arg)
                return stored[id(arg)]

            try:
                futures = [remote.remote(*map(once, task)) for task in tasks]
            except TypeError as exc:
                raise TrainingError(f"the tasks cannot be sent to Ray: {exc}") from None
            try:
                return list(ray.get(futures))
            except ray.exceptions.RayError as exc:
                for future in futures:
                    ray.cancel(future, force=True)
                cause = getattr(exc, "cause", None)
                raise TrainingError(str(cause) if cause is not None else f"a Ray task failed: {exc}") from None

    def machines(self, address: str | None) -> tuple[str | None, list[str]]:
        """Ray's address of this node and of the cluster's other live nodes (a local Ray: none)."""
        if address is None:
            return None, []
        ray = _ray()
        with self._joined(ray, address, quiet=True):
            mine = ray.util.get_node_ip_address()
            return mine, sorted({n["NodeManagerAddress"] for n in ray.nodes() if n.get("Alive")} - {mine})

    @contextlib.contextmanager
    def _joined(self, ray: Any, address: str | None, quiet: bool = False) -> Iterator[None]:
        """Connected to ``address`` (or to a local Ray started for this block, with a token of the run's) unless this
        process already is; a Ray this block started is stopped after it. ``quiet``: the token is not told."""
        if ray.is_initialized():
            yield
            return
        with contextlib.ExitStack() as stack:
            told = _token_for(address, self.folder, stack)
            try:
                ray.init(address=address, include_dashboard=False, log_to_driver=False,
                         logging_level=logging.INFO if self.verbose else logging.ERROR,
                         **({} if address else {"num_cpus": os.cpu_count() or 1}))
            except (ConnectionError, ValueError, RuntimeError) as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise ConfigError(f"cannot join the Ray cluster at {address or 'this machine'}: {first}") from None
            if self.say is not None and not quiet:
                self.say(told)
            try:
                yield
            finally:
                ray.shutdown()


def _token_for(address: str | None, folder: Path | None, stack: contextlib.ExitStack) -> str:
    """Where Ray's token is, as one line. A local Ray (``address`` None) without a token the user gave gets a fresh
    one in ``folder``/ray/auth_token (0600; a temporary folder, removed after, without a run folder), named to Ray
    through the environment of this block (``stack`` restores it)."""
    given = [v for v in USER_TOKEN if os.environ.get(v)]
    if given:
        return f"Ray's token: as {', '.join(given)} give it"
    if address is not None:
        return f"Ray's token: the cluster's, where Ray looks for it ({Path.home() / '.ray' / 'auth_token'})"
    if folder is None:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="fedtopic-ray-")))
    path = folder / "ray" / "auth_token"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32))  # Ray's own form: 256 bits in hex
    os.chmod(path, 0o600)
    stack.enter_context(_environment({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(path)}))
    return f"Ray's token (a local Ray for this run): {path}"


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """``values`` in os.environ for the block (Ray's processes inherit them), the previous ones back after; Ray's
    token loader, which caches what it read, reads again on both sides."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    _reload_token()
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _reload_token()


def _reload_token() -> None:
    """Ray's cached settings and token read again from the environment (as Ray's own ``_enable_token_auth``)."""
    try:
        from ray._raylet import AuthenticationTokenLoader, Config
    except ImportError:  # a Ray without token authentication
        return
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def _cpu_places(ray: Any) -> list[str]:
    """One node id per CPU of the cluster's live nodes, the nodes interleaved (A, B, A, … for 2 and 1 CPUs): the
    pool's actor i goes to place i, so a pool smaller than the cluster still spreads over its nodes (Ray would pack
    zero-CPU actors on one)."""
    per_node = [[n["NodeID"]] * int(n.get("Resources", {}).get("CPU", 0)) for n in ray.nodes() if n.get("Alive")]
    out: list[str] = []
    for layer in range(max((len(p) for p in per_node), default=0)):
        out += [p[layer] for p in per_node if layer < len(p)]
    return out


def _on(node_id: str) -> Any:
    """Ray's strategy for an actor on ``node_id``, strictly: with ``soft=True`` Ray put every zero-CPU actor of a
    two-node cluster on the driver's node (a node that is gone by then fails the run, which says so)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)


def _placed(fn: Callable[..., T]) -> Callable[..., T]:
    """``fn`` in a Ray worker that first says where it runs (``placement``)."""

    def run(*args: Any) -> T:
        import ray

        set_placement({"ray_node": ray.get_runtime_context().get_node_id()})
        return fn(*args)

    run.__name__ = getattr(fn, "__name__", "task")
    return run


RAY = RayEngine()
