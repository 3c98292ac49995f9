"""The Ray backend (--backend ray): a node group per node, synced through a sharded global model.

Each node group (node_group.py) runs the local backend's Hogwild workers on its
node's shared memory; only the groups' parameter deltas cross the network,
every --sync-interval updates of a group, and no worker ever waits on Ray
(docs/design/choices.md, "Node groups"). The trainer keeps its shared-memory model as
a mirror of the global model, so the evaluator process, the metrics writer and
the checkpoints work as with the local backend.

Ray is imported only here, and a3c.backends imports this module only for --backend ray.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from a3c.backends.base import Backend
from a3c.backends.children import STOP_GRACE_SECONDS, ChildProcesses, EvaluatorProcess, EvaluatorSettings
from a3c.backends.global_model import CALL_TIMEOUT_SECONDS, GlobalModel, read_only_tensor
from a3c.backends.node_group import GLOBAL_LOST, STOPPED, NodeGroup
from a3c.backends.ray_access import GUIDE, prepare_join, secure_local_instance
from a3c.backends.sync import SyncedState
from a3c.config.settings import Config
from a3c.errors import ConfigError, first_line
from a3c.learn.optim import average_states
from a3c.parallel.messages import Notice, Update

PROBE_TIMEOUT_SECONDS = 5.0  # Ray itself retries an unreachable address for minutes before failing
DRAIN_INTERVAL_SECONDS = 0.1  # how often the trainer collects the groups' messages


def import_ray():
    try:
        import ray
    except ImportError:
        raise ConfigError("--backend ray needs Ray: pip install -r requirements-ray.txt") from None
    return ray


@dataclass
class RayCluster:
    """This process's connection to Ray: an instance it started, or a cluster it joined."""

    ray: Any  # the ray module
    address: str
    started: bool
    groups: int  # node groups to run: --nodes, or one per node of the cluster
    access: str = ""  # who may use it: the line the run prints first (ray_access.py)
    access_warning: bool = False  # a cluster without authentication, joined as the user allowed

    def disconnect(self) -> None:
        """Stops an instance we started; leaves a joined cluster running (its driver just disconnects)."""
        self.ray.shutdown()

    def kill(self) -> None:
        """Second Ctrl-C: end a local instance's daemons now (ray.shutdown is no option in a signal handler)."""
        if self.started:
            self.ray._private.worker._global_node.kill_all_processes(check_alive=False, allow_graceful=True)


def connect(config: Config) -> RayCluster:
    """Start a local Ray instance, or join the cluster at --ray-address; Ray's errors become one line."""
    cluster = join(config) if config.ray_address else start_local(config)
    cpus = cluster.ray.cluster_resources().get("CPU", 0)
    if cpus < cluster.groups * config.num_processes:
        cluster.disconnect()
        raise ConfigError(
            f"{cluster.groups} node groups x --num-processes {config.num_processes} need as many "
            f"CPUs, and the Ray cluster at {cluster.address} has {cpus:g}"
        )
    return cluster


def ray_options() -> dict:
    """ray.init's options of every run."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # a trainer does not phone home
    # py_modules ships this package to every node: the nodes need the same Python packages, not our code
    return dict(
        log_to_driver=False,
        logging_level=logging.WARNING,
        runtime_env={"py_modules": [str(Path(__file__).parent.parent)]},
    )


def join(config: Config) -> RayCluster:
    """Join the cluster at --ray-address, once it has said whether it requires a token and taken ours."""
    ray = import_ray()
    address = reachable_address(ray, config.ray_address)
    access, warning = prepare_join(address, config.ray_allow_unauthenticated, os.environ, Path.home())
    reread_settings()
    try:
        ray.init(address=address, **ray_options())
    except (ConnectionError, RuntimeError, ValueError) as error:
        raise ConfigError(f"--ray-address {config.ray_address}: {first_line(error)}") from None
    nodes = [node for node in ray.nodes() if node["Alive"] and node["Resources"].get("CPU", 0) > 0]
    groups = config.nodes or max(len(nodes), 1)
    return RayCluster(ray, address, started=False, groups=groups, access=access, access_warning=warning)


def start_local(config: Config) -> RayCluster:
    """A Ray instance of this run only: with a token, on the loopback (set before Ray is imported, which reads
    the node address's setting once)."""
    access = secure_local_instance(os.environ, Path.home())
    ray = import_ray()
    reread_settings()
    # "local": a new instance even where `ray start` runs one. As many CPUs as workers (a group takes one
    # per worker), so --num-processes may oversubscribe the cores as with the local backend.
    groups = config.nodes or 1
    context = ray.init(
        address="local",
        num_cpus=max(os.cpu_count() or 1, groups * config.num_processes),
        include_dashboard=False,
        **ray_options(),
    )
    node = context.address_info["node_ip_address"]
    warning = not ipaddress.ip_address(node).is_loopback
    if warning:  # Ray was imported before this run, by the caller: its node address was read then
        access = (
            f"warning: Ray's local instance listens on {node}, not the loopback (Ray was imported before the run); "
            f"its token still guards it ({GUIDE})"
        )
    return RayCluster(ray, context.address_info["gcs_address"], True, groups, access, warning)


def reread_settings() -> None:
    """Ray reads RAY_AUTH_MODE once, when it is imported; after a change, it is read again as Ray itself does
    where it turns the mode on."""
    from ray._raylet import Config

    Config.initialize("")


def reachable_address(ray, address: str) -> str:
    """HOST:PORT of the cluster's GCS ("auto": the one `ray start` recorded), checked to answer."""
    try:
        resolved = ray._private.services.canonicalize_bootstrap_address_or_die(address)
    except (ConnectionError, ValueError) as error:  # no cluster found for "auto", or not HOST:PORT
        raise ConfigError(f"--ray-address {address}: {first_line(error)}") from None
    host, port = resolved.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=PROBE_TIMEOUT_SECONDS).close()
    except OSError as error:
        raise ConfigError(
            f"--ray-address {address}: no Ray cluster answers at {resolved} ({error.strerror or type(error).__name__})"
        ) from None
    return resolved


class RayBackend(Backend):
    """Node-group actors and the global model on Ray; the evaluator stays a local child process (ChildProcesses).

    receive() drains the groups' messages (the same Update messages local workers
    send) and copies the global weights where the evaluator reads them; sync_state()
    does before a checkpoint.
    """

    def __init__(self, cluster: RayCluster, children: ChildProcesses, evaluation: EvaluatorSettings):
        """`children` runs the evaluator of `evaluation` (none with --eval-episodes 0) on this machine."""
        self.cluster, self.ray = cluster, cluster.ray
        self.children, self.console = children, children.console
        self.config, self.shared = children.config, children.shared
        self.evaluator = EvaluatorProcess(children, evaluation)
        self.mirror = SyncedState(self.shared.optimizer.params[0], list(self.shared.model.statistics().values()))
        self.global_model: Optional[GlobalModel] = None
        self.groups: dict[int, Any] = {}  # index -> actor handle
        self.runs: dict[Any, int] = {}  # the ref of each group's run() call -> index
        self.placing: dict[Any, tuple[int, float]] = {}  # the ref of a group's node() call -> index, deadline
        self.placed: set[int] = set()
        self.group_figures: dict[int, dict] = {}  # index -> what the group did, fetched at the stop
        self.group_restarts = dict.fromkeys(range(cluster.groups), 0)
        self.failed: Optional[str] = None  # the stop reason, once the run cannot go on
        self.next_drain = self.next_mirror = 0.0
        self.final_state_fetched = False
        self.traffic: dict = {}

    def start(self) -> None:
        self.console.message(self.cluster.access, error=self.cluster.access_warning)
        # Forked after ray.init: measured safe (the child never calls into Ray), and connecting first
        # lets a bad --ray-address fail before the run dir is made.
        self.evaluator.start()
        self.global_model = GlobalModel.create(
            self.ray,
            [value.numpy() for value in self.mirror.read()],
            self.shared.env_steps.total(),
            self.config.global_shards,
            self.cluster.groups,
        )
        self.group_class = self.ray.remote(
            num_cpus=self.config.num_processes, max_restarts=0, max_concurrency=4, scheduling_strategy="SPREAD"
        )(NodeGroup)
        for index in range(self.cluster.groups):
            self.start_group(index)

    def start_group(self, index: int) -> None:
        """A new group, from the global weights and the mirror's optimizer state (fresh, resumed or last
        checkpointed)."""
        actor = self.group_class.remote(
            self.config,
            index,
            self.group_restarts[index],
            self.shared.optimizer.state_dict(),
            time.monotonic() - self.shared.started_at,
        )
        self.groups[index] = actor
        self.placing[actor.node.remote()] = (index, time.monotonic() + self.config.placement_timeout)
        self.runs[actor.run.remote(self.global_model)] = index

    def receive(self, handle, timeout: float) -> None:
        self.children.receive(handle, timeout)  # the evaluator's messages; paces the trainer's loop
        if self.global_model is None or self.failed is not None:
            return
        now = time.monotonic()
        if now >= self.next_drain:
            self.next_drain = now + DRAIN_INTERVAL_SECONDS
            self._drain(handle)
        if self.config.eval_episodes > 0 and now >= self.next_mirror:
            # twice per evaluation interval: the evaluator reads weights at most half an interval older than
            # the global model's, at a few calls a second (checkpoints mirror it too)
            self.next_mirror = now + self.config.eval_interval / 2
            self._mirror()

    def _drain(self, handle) -> None:
        """The placed groups' messages (a lost group's are lost with it)."""
        calls = [self.groups[index].drain.remote() for index in sorted(self.placed)]
        answered, _ = self.ray.wait(calls, num_returns=len(calls), timeout=CALL_TIMEOUT_SECONDS)
        for ref in answered:
            try:
                messages = self.ray.get(ref, timeout=0)
            except self.ray.exceptions.RayError:  # its group is gone: check() replaces it
                continue
            for message in messages:
                self._deliver(message, handle)
        if self.shared.env_steps.total() >= self.config.max_steps:
            self.shared.stop.set()

    def _deliver(self, message, handle) -> None:
        if isinstance(message, Notice):
            self.console.message(message.line, error=message.error)
            return
        if isinstance(message, Update):
            self.shared.env_steps.add(0, message.report.env_steps)  # the trainer's own count: it has no workers
        handle(message)

    def _mirror(self) -> None:
        try:
            values, _ = self.global_model.read()
        except (self.ray.exceptions.RayActorError, self.ray.exceptions.GetTimeoutError) as error:
            self._global_lost(first_line(error))
            return
        self.mirror.assign([read_only_tensor(value) for value in values])

    def _global_lost(self, cause: str) -> None:
        if self.failed is None:
            self.console.message(
                f"the global model is lost ({cause}); stopping; checkpoints/last.pt keeps the last checkpoint",
                error=True,
            )
        self.failed = "global_model_failed"

    def check(self) -> Optional[str]:
        if self.failed is None:
            self.failed = self._check_placements() or self._check_groups()
        if self.failed is not None:
            return self.failed
        return self.evaluator.check() or (None if self.runs else "max_steps")

    def _check_placements(self) -> Optional[str]:
        """Groups that are placed. One that waited past --placement-timeout while others train is left to
        Ray's queue, to start where a node has room (a host that comes back, or joins); with none training,
        "node_group_unplaced"."""
        if not self.placing:
            return None
        ready, _ = self.ray.wait(list(self.placing), num_returns=len(self.placing), timeout=0)
        for ref in ready:  # built, or failed to build: then its run() call says so
            index = self.placing.pop(ref)[0]
            self.placed.add(index)
            try:
                self.console.message(f"node group {index} runs on {self.ray.get(ref, timeout=0)}")
            except self.ray.exceptions.RayError:
                pass
        for ref, (index, deadline) in self.placing.items():
            if time.monotonic() <= deadline:
                continue
            said = (
                f"node group {index} did not start within --placement-timeout {self.config.placement_timeout:g} s: "
                f"no node has {self.config.num_processes} free CPUs for it"
            )
            if not self.placed:
                self.console.message(f"{said}; stopping", error=True)
                return "node_group_unplaced"
            self.console.message(
                f"{said}; training on with {len(self.placed)} group(s), and starting it where a node has room",
                error=True,
            )
            self.placing[ref] = (index, math.inf)  # said once; Ray keeps the request queued
        return None

    def _check_groups(self) -> Optional[str]:
        """Replace lost groups while restarts last; say why the run must stop, if it must."""
        ended, _ = self.ray.wait(list(self.runs), num_returns=len(self.runs), timeout=0)
        for ref in ended:
            index = self.runs.pop(ref)
            outcome = self._outcome(index, ref)
            if outcome == GLOBAL_LOST:
                # the trainer asks the global model itself: where it answers, only the group's link to it broke
                self._mirror()
                if self.failed is not None:
                    return self.failed
                self.ray.kill(self.groups[index])  # idle since its run() ended; its CPUs go to the new group
                self.placed.discard(index)
                outcome = "it could not reach the global model, which answers the trainer"
            if outcome == "worker_failed":
                return outcome
            if outcome not in (STOPPED, "max_steps") and self.restart_group(index, outcome) is not None:
                return "node_group_failed"
        return None

    def _outcome(self, index: int, ref) -> str:
        """How group `index`'s run() ended, or why the group was lost (then its actor is gone). A group that
        ended stays placed: its last messages and its optimizer state are still to be fetched."""
        ray = self.ray
        try:
            return ray.get(ref, timeout=CALL_TIMEOUT_SECONDS)
        except ray.exceptions.RayTaskError as error:  # an exception in the group's own code: its actor lives on idle
            ray.kill(self.groups[index])
            self.console.message(f"node group {index} failed:\n{str(error).rstrip()}", error=True)
            cause = f"raised {type(error.cause).__name__}"
        except ray.exceptions.RayActorError as error:
            cause = f"its actor died: {first_line(error)}"
        self.placed.discard(index)
        return cause

    def restart_group(self, index: int, cause: str) -> Optional[str]:
        """Start a lost group again, on any node with room; "node_group_failed" once its restarts are used up."""
        restarted = self.children.restart_within_limit(
            self.group_restarts,
            index,
            f"node group {index} was lost ({cause})",
            "starting a new one from the global weights",
            self.start_group,
        )
        return None if restarted else "node_group_failed"

    def sync_state(self) -> bool:
        """Mirror the global weights, and the mean of the groups' optimizer states (those that answer);
        after stop(): what it fetched."""
        if self.global_model is None:
            return self.final_state_fetched
        self._mirror()
        if self.failed == "global_model_failed":
            return False
        calls = [self.groups[index].optimizer_state.remote() for index in sorted(self.placed)]
        answered, _ = self.ray.wait(calls, num_returns=len(calls), timeout=CALL_TIMEOUT_SECONDS)
        states = []
        for ref in answered:
            try:
                states.append(self.ray.get(ref, timeout=0))
            except self.ray.exceptions.RayError:  # a group lost meanwhile
                pass
        if states:
            self.shared.optimizer.load_state_dict(average_states(states))
        return True

    def stop(self, handle) -> None:
        """Groups finish their updates and send their last deltas, the evaluator stops, the final state is
        fetched; then Ray is released."""
        for index in self.placed:
            self.groups[index].request_stop.remote()
        self.shared.stop.set()
        # the evaluator; the receive() calls meanwhile keep draining the groups
        self.children.wind_down(self.evaluator.processes(), lambda timeout: self.receive(handle, timeout))
        placed_runs = [ref for ref, index in self.runs.items() if index in self.placed]
        if placed_runs:
            self.ray.wait(placed_runs, num_returns=len(placed_runs), timeout=STOP_GRACE_SECONDS + CALL_TIMEOUT_SECONDS)
        if self.failed != "global_model_failed":
            self._drain(handle)
            self.final_state_fetched = self.sync_state()
            self.traffic = self._traffic()
            self.group_figures = self._group_figures()
        for actor in self.groups.values():
            self.ray.kill(actor)
        self.global_model.kill()
        self.global_model = None
        self.cluster.disconnect()

    def _group_figures(self) -> dict[int, dict]:
        """Each placed group's figures (a3c.backends.node_group.NodeGroup.figures), those that answer."""
        indices = sorted(self.placed)
        calls = [self.groups[index].figures.remote() for index in indices]
        answered, _ = self.ray.wait(calls, num_returns=len(calls), timeout=CALL_TIMEOUT_SECONDS)
        figures = {}
        for index, ref in zip(indices, calls):
            if ref in answered:
                try:
                    figures[index] = self.ray.get(ref, timeout=0)
                except self.ray.exceptions.RayError:  # a group lost meanwhile
                    pass
        return figures

    def _traffic(self) -> dict:
        try:
            traffic = self.global_model.traffic()
        except (self.ray.exceptions.RayActorError, self.ray.exceptions.GetTimeoutError):
            return {}
        return {
            "node_groups": self.cluster.groups,
            "global_model_calls": traffic["calls"],
            "sync_megabytes": round(traffic["bytes"] / 1e6, 3),
        }

    def report(self) -> dict:
        if not self.traffic:
            return {}
        return {
            **self.traffic,
            "group_figures": [{"group": index, **self.group_figures[index]} for index in sorted(self.group_figures)],
        }

    def kill(self) -> None:
        self.children.kill(self.evaluator.processes())
        self.cluster.kill()
