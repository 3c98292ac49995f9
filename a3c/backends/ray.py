"""The Ray backend (--backend ray): worker actors around one parameter-server actor.

Only the transport differs from the local backend. A worker actor runs the same
ActorLearner and pushes its flat gradient (a numpy array) to the parameter
server, which applies it with the same optimizer code, lr schedule and NaN
guard, and answers with the fresh weights in the same call: one round trip per
update. The trainer keeps its shared-memory model as a mirror of the server's,
so the evaluator process, the metrics writer and the checkpoints work unchanged.

Ray is imported only here, and a3c.backends imports this module only for --backend ray.
"""

from __future__ import annotations

import logging
import os
import socket
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch

from ..config import Config
from ..errors import ConfigError, first_line
from ..learner import ActorLearner, current_lr
from ..messages import Update
from ..optim import make_optimizer
from ..processes import one_thread
from ..seeding import seed_worker_torch, worker_seeds
from ..worker import apply_gradient
from .local import STOP_GRACE_SECONDS, LocalBackend

CALL_TIMEOUT_SECONDS = 60.0  # every ray.get has one: a blocked get ignores signals and pytest-timeout
PROBE_TIMEOUT_SECONDS = 5.0  # Ray itself retries an unreachable address for minutes before failing
STOPPED, SERVER_LOST = "stopped", "parameter_server_lost"  # how a worker's run() ends


def import_ray():
    try:
        import ray
    except ImportError:
        raise ConfigError("--backend ray needs Ray: pip install -r requirements-ray.txt") from None
    return ray


def read_only_tensor(array: np.ndarray) -> torch.Tensor:
    """A tensor over an array from Ray's object store (always read-only), without a copy; never write to it."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(array)


@dataclass
class RayCluster:
    """This process's connection to Ray: an instance it started, or a cluster it joined."""

    ray: Any  # the ray module
    address: str
    started: bool

    def disconnect(self) -> None:
        """Stops an instance we started; leaves a joined cluster running (its driver just disconnects)."""
        self.ray.shutdown()

    def kill(self) -> None:
        """Second Ctrl-C: end a local instance's daemons now (ray.shutdown is no option in a signal handler)."""
        if self.started:
            self.ray._private.worker._global_node.kill_all_processes(check_alive=False, allow_graceful=True)


def connect(config: Config) -> RayCluster:
    """Start a local Ray instance, or join the cluster at --ray-address; Ray's errors become one line."""
    ray = import_ray()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # a trainer does not phone home
    # py_modules ships this package to every node: the nodes need the same Python packages, not our code
    options = dict(log_to_driver=False, logging_level=logging.WARNING,
                   runtime_env={"py_modules": [str(Path(__file__).parent.parent)]})
    if config.ray_address:
        address = reachable_address(ray, config.ray_address)
        try:
            ray.init(address=address, **options)
        except (ConnectionError, RuntimeError, ValueError) as error:
            raise ConfigError(f"--ray-address {config.ray_address}: {first_line(error)}") from None
        cluster = RayCluster(ray, address, started=False)
    else:
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # an instance of this run only, on this machine
        # "local": a new instance even where `ray start` runs one. As many CPUs as workers (a worker actor
        # takes one), so --num-processes may oversubscribe the cores as with the local backend.
        context = ray.init(address="local", num_cpus=max(os.cpu_count() or 1, config.num_processes),
                           include_dashboard=False, **options)
        cluster = RayCluster(ray, context.address_info["gcs_address"], started=True)
    cpus = ray.cluster_resources().get("CPU", 0)
    if cpus < config.num_processes:
        cluster.disconnect()
        raise ConfigError(f"--num-processes {config.num_processes} needs as many CPUs, and the Ray cluster at "
                          f"{cluster.address} has {cpus:g}")
    return cluster


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
        raise ConfigError(f"--ray-address {address}: no Ray cluster answers at {resolved} "
                          f"({error.strerror or type(error).__name__})") from None
    return resolved


class ParameterServer:
    """The shared model and optimizer of a Ray run, in one actor that applies gradients as they arrive.

    A Ray actor runs one call at a time, so no two gradients race (unlike Hogwild).
    """

    def __init__(self, config: Config, weights: np.ndarray, optimizer_state: dict, env_steps: int):
        one_thread()
        self.config = config
        self.weights = torch.from_numpy(weights.copy())
        self.optimizer = make_optimizer(config.optimizer, [self.weights], config.lr)
        self.optimizer.load_state_dict(optimizer_state)
        self.env_steps = env_steps
        self.updates: list[Update] = []
        self.stop_requested = False
        self.read_at: dict[int, int] = {}  # rank -> the optimizer step of the weights it was last sent

    def pull(self, rank: int) -> tuple[np.ndarray, bool]:
        """The current weights and whether the workers should stop."""
        self.read_at[rank] = self.optimizer.step_count()
        return self.weights.numpy(), self.stop_requested or self.env_steps >= self.config.max_steps

    def push(self, rank: int, grad: np.ndarray, report) -> tuple[np.ndarray, bool]:
        """Apply one worker's gradient, as the local worker does; answer as pull() does."""
        lr = current_lr(self.config, self.env_steps)
        apply_gradient(self.optimizer, read_only_tensor(grad), lr, report, self.read_at[rank])
        self.env_steps += report.env_steps
        self.updates.append(Update(rank, report))
        return self.pull(rank)

    def drain(self) -> tuple[list[Update], np.ndarray]:
        """The updates since the last drain, and the current weights."""
        updates, self.updates = self.updates, []
        return updates, self.weights.numpy()

    def state(self) -> tuple[np.ndarray, dict]:
        return self.weights.numpy(), self.optimizer.state_dict()

    def request_stop(self) -> None:
        self.stop_requested = True


class RolloutWorker:
    """One worker actor: the local worker's ActorLearner, its weights coming from the parameter server."""

    def __init__(self, config: Config, rank: int, incarnation: int):
        one_thread()
        seeds = worker_seeds(config, rank, incarnation)
        seed_worker_torch(seeds)
        self.rank = rank
        self.learner = ActorLearner(config, seeds)

    def run(self, server) -> str:
        """Update until the server says stop; returns STOPPED, or SERVER_LOST when the server died."""
        ray = import_ray()
        try:
            weights, stop = ray.get(server.pull.remote(self.rank), timeout=CALL_TIMEOUT_SECONDS)
            while not stop:
                self.learner.load_weights(read_only_tensor(weights))
                grad, report = self.learner.next_gradient()
                weights, stop = ray.get(server.push.remote(self.rank, grad.numpy(), report),
                                        timeout=CALL_TIMEOUT_SECONDS)
        except ray.exceptions.RayActorError:
            return SERVER_LOST
        return STOPPED


class RayBackend(LocalBackend):
    """Worker actors and the parameter server on Ray, behind LocalBackend's interface; the evaluator stays local.

    receive() drains the server into the trainer's shared-memory mirror: the
    updates become the same Update messages local workers
    send, and the weights are copied where the evaluator reads them.
    """

    def __init__(self, cluster: RayCluster, *backend_args):
        super().__init__(*backend_args)
        self.cluster, self.ray = cluster, cluster.ray
        self.server = None
        self.actors: dict[int, Any] = {}  # rank -> actor handle
        self.runs: dict[Any, int] = {}  # the ref of each worker's run() call -> rank
        self.server_failed = False
        self.final_state_fetched = False

    def start(self) -> None:
        # Forked after ray.init: measured safe (the child never calls into Ray), and connecting first
        # lets a bad --ray-address fail before the run dir is made.
        self.start_evaluator()
        optimizer = self.shared.optimizer  # fresh, or restored by --resume
        self.server = self.ray.remote(num_cpus=0, max_restarts=0)(ParameterServer).remote(
            self.config, optimizer.params[0].numpy(), optimizer.state_dict(), self.shared.env_steps.total())
        self.worker_class = self.ray.remote(num_cpus=1, max_restarts=0)(RolloutWorker)
        for rank in range(self.config.num_processes):
            self.start_worker(rank)

    def start_worker(self, rank: int) -> None:
        actor = self.worker_class.remote(self.config, rank, self.restarts[rank])
        self.actors[rank] = actor
        self.runs[actor.run.remote(self.server)] = rank

    def receive(self, handle, timeout: float) -> None:
        super().receive(handle, timeout)  # the evaluator's messages; paces the trainer's loop
        if self.server is not None and not self.server_failed:
            self._drain(handle)

    def _call_server(self, method: str):
        """One call to the parameter server; None (and server_failed) when it is gone or hangs."""
        try:
            return self.ray.get(getattr(self.server, method).remote(), timeout=CALL_TIMEOUT_SECONDS)
        except (self.ray.exceptions.RayActorError, self.ray.exceptions.GetTimeoutError) as error:
            self._server_lost(first_line(error))
            return None

    def _server_lost(self, cause: str) -> None:
        if not self.server_failed:
            self.console.message(f"the parameter server is lost ({cause}); stopping; checkpoints/last.pt "
                                 "keeps the last checkpoint", error=True)
        self.server_failed = True

    def _drain(self, handle) -> None:
        drained = self._call_server("drain")
        if drained is None:
            return
        updates, weights = drained
        for update in updates:
            self.shared.env_steps.add(update.rank, update.report.env_steps)
            handle(update)
        self._mirror(weights)
        if self.shared.env_steps.total() >= self.config.max_steps:
            self.shared.stop.set()

    @torch.no_grad()
    def _mirror(self, weights: np.ndarray) -> None:
        self.shared.optimizer.params[0].copy_(read_only_tensor(weights))

    def check(self) -> Optional[str]:
        if self.server_failed:
            return "parameter_server_failed"
        ended, _ = self.ray.wait(list(self.runs), num_returns=len(self.runs), timeout=0)
        for ref in ended:
            rank = self.runs.pop(ref)
            outcome = self._outcome(rank, ref)
            if outcome == SERVER_LOST:
                self._server_lost(f"worker {rank} could not reach it")
                return "parameter_server_failed"
            if outcome != STOPPED and self.restart_worker(rank, outcome) is not None:
                return "worker_failed"
        if self.evaluator_failed():
            return "evaluator_failed"
        return None if self.runs else "max_steps"

    def _outcome(self, rank: int, ref) -> str:
        """STOPPED, SERVER_LOST, or why the worker died (then its actor is gone)."""
        ray = self.ray
        try:
            return ray.get(ref, timeout=CALL_TIMEOUT_SECONDS)
        except ray.exceptions.RayTaskError as error:  # an exception in the worker: its actor lives on idle
            ray.kill(self.actors[rank])
            self.console.message(f"worker {rank} failed:\n{str(error).rstrip()}", error=True)
            return f"raised {type(error.cause).__name__}"
        except ray.exceptions.RayActorError as error:
            return f"its actor died: {first_line(error)}"

    def sync_state(self) -> bool:
        """Fetch the server's weights and optimizer state into the mirror (after stop(): what it fetched)."""
        if self.server is None:
            return self.final_state_fetched
        state = None if self.server_failed else self._call_server("state")
        if state is None:
            return False
        weights, optimizer_state = state
        self._mirror(weights)
        self.shared.optimizer.load_state_dict(optimizer_state)
        return True

    def stop(self, handle) -> None:
        """Workers finish their update, the evaluator stops, the final state is fetched; then Ray is released."""
        if not self.server_failed:
            self._call_server("request_stop")
        super().stop(handle)  # the evaluator; its receive() calls keep draining the server
        if self.runs:
            self.ray.wait(list(self.runs), num_returns=len(self.runs), timeout=STOP_GRACE_SECONDS)
        if not self.server_failed:
            self._drain(handle)
            self.final_state_fetched = self.sync_state()
        for actor in [*self.actors.values(), self.server]:
            self.ray.kill(actor)
        self.server = None
        self.cluster.disconnect()

    def kill(self) -> None:
        super().kill()
        self.cluster.kill()
