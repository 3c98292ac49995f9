"""A node group: the local backend's Hogwild workers on one node, synced with the global model now and then.

The group is a Ray actor that owns its node's shared-memory model and runs the
local backend inside it, unchanged: the same worker processes, turns and
restarts. Its workers never call Ray. Every --sync-interval updates of the
group's optimizer, the actor's loop sends the group's delta to the global
model and takes the global weights back (a3c/backends/sync.py); meanwhile the workers
go on updating. The trainer drains the group's messages and asks it to stop.

The actor is threaded: run() loops in one thread while drain(), request_stop()
and optimizer_state() answer in others.
"""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections import deque

import torch
import torch.multiprocessing as mp

from a3c.backends.children import ChildProcesses
from a3c.backends.global_model import GlobalModel, read_only_tensor
from a3c.backends.local import LocalBackend
from a3c.backends.sync import SyncedState, sync_round
from a3c.config.settings import Config
from a3c.envs.make import env_spec
from a3c.errors import first_line
from a3c.parallel.counter import StepCounter
from a3c.parallel.messages import Failure, Notice, Update
from a3c.parallel.processes import Heartbeats, Shared, StopFlag, one_thread, shared_model, start_method, worker_turns

STOPPED, GLOBAL_LOST = "stopped", "global_model_lost"  # how run() ends, besides the local backend's reasons


class Outbox:
    """What a group tells the trainer, kept until the trainer drains it: the workers' messages with
    run-wide ranks, and the local backend's console lines (it is their MessageSink: message())."""

    def __init__(self, index: int, first_rank: int):
        self.index, self.first_rank = index, first_rank
        self.queue: deque = deque()  # appended by run()'s thread, popped by drain()'s

    def handle(self, message) -> None:
        if isinstance(message, Update):
            message = dataclasses.replace(message, rank=self.first_rank + message.rank)
        elif isinstance(message, Failure):
            message = Failure(f"node group {self.index} {message.source}", message.details)
        self.queue.append(message)

    def message(self, line: str, error: bool = False) -> None:
        self.queue.append(Notice(f"node group {self.index}: {line}", error))

    def drain(self) -> list:
        return [self.queue.popleft() for _ in range(len(self.queue))]


class NodeGroup:
    """One node's workers around its shared-memory model; `incarnation` counts replacements of group `index`;
    `run_seconds`: the run's training seconds when the group is made (its workers' clock for --max-minutes:
    a node's time.monotonic() is its own)."""

    def __init__(self, config: Config, index: int, incarnation: int, optimizer_state: dict, run_seconds: float):
        one_thread()
        self.config = config
        # inside a group, a local run
        local = config.replace(backend="local", ray_address="", ray_allow_unauthenticated=False, eval_episodes=0)
        model, optimizer = shared_model(local, env_spec(config.env))
        optimizer.load_state_dict(optimizer_state)
        ctx = mp.get_context(start_method(config))
        workers = config.num_processes
        self.shared = Shared(
            model,
            optimizer,
            StepCounter(ctx, workers),
            StopFlag(ctx),
            time.monotonic() - run_seconds,
            worker_turns(ctx, local),
            Heartbeats(ctx, workers),
        )
        self.outbox = Outbox(index, index * workers)
        self.backend = LocalBackend(
            ChildProcesses(ctx, local, self.shared, self.outbox),
            first_rank=index * workers,
            first_incarnation=incarnation * (config.max_worker_restarts + 1),
        )
        self.synced = SyncedState(optimizer.params[0], list(model.statistics().values()))
        self.stop_requested = threading.Event()
        self.global_model = self.anchor = None
        self.reported_steps = self.synced_at = 0
        self.syncs, self.sync_seconds = 0, 0.0  # exchanges with the global model, and their time

    def node(self) -> str:
        """Answers once the actor is placed and built: the host it runs on, by its address on the cluster's
        network and its name (hosts that share a name, as containers may, differ by address)."""
        import ray

        return f"{ray.util.get_node_ip_address()} ({socket.gethostname()})"

    def figures(self) -> dict:
        """What this group did: its host, the env steps its workers counted, its syncs and their mean time."""
        return {
            "host": self.node(),
            "env_steps": self.shared.env_steps.own(),
            "syncs": self.syncs,
            "sync_ms": round(1000 * self.sync_seconds / max(self.syncs, 1), 3),
        }

    def run(self, global_model: GlobalModel) -> str:
        """Train until stopped; returns STOPPED, "max_steps", "worker_failed" or GLOBAL_LOST."""
        import ray

        self.global_model = global_model
        try:
            self._take_global_weights()
            self.backend.start()
            outcome = self._train()
            self.backend.stop(self.outbox.handle)
            self._sync()  # the last updates count too
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            self.backend.stop(self.outbox.handle)
            return GLOBAL_LOST
        return outcome

    def _take_global_weights(self) -> None:
        """The global values replace the group's; its updates since its last exchange are dropped."""
        values, env_steps = self.global_model.read()
        self.anchor = [read_only_tensor(value) for value in values]
        self.synced.assign(self.anchor)
        self.shared.env_steps.set_elsewhere(env_steps - self.reported_steps)

    def _train(self) -> str:
        while True:
            self.backend.receive(self.outbox.handle, timeout=0.05)
            if self.shared.optimizer.step_count() - self.synced_at >= self.config.sync_interval:
                self._sync_or_rejoin()
            if self.stop_requested.is_set():
                return STOPPED
            if self.shared.stop.is_set():  # the run's env steps, as this group last heard them, reached --max-steps
                return "max_steps"
            if (failed := self.backend.check()) is not None:
                return failed

    def _sync_or_rejoin(self) -> None:
        """An exchange that got no answer (this node's link down for a while) is given up and the group
        rejoins from the global weights, losing its updates since its last exchange, as a replacement
        would but on the CPUs it holds; where the global model does not answer that read either, run()
        ends (GLOBAL_LOST) and the trainer decides. An exchange given up may still land late: its delta
        and env steps then count (the steps twice)."""
        import ray

        try:
            self._sync()
        except (ray.exceptions.GetTimeoutError, ray.exceptions.ActorUnavailableError) as error:
            self.outbox.message(
                f"its exchange with the global model got no answer ({first_line(error)}); "
                "taking the global weights again",
                error=True,
            )
            self._take_global_weights()

    def _sync(self) -> None:
        started = time.monotonic()
        own_steps = self.shared.env_steps.own()
        self.synced_at = self.shared.optimizer.step_count()

        def exchange(deltas: list[torch.Tensor]) -> list[torch.Tensor]:
            values, env_steps = self.global_model.exchange(
                [delta.numpy() for delta in deltas], own_steps - self.reported_steps
            )
            self.shared.env_steps.set_elsewhere(env_steps - own_steps)
            return [read_only_tensor(value) for value in values]

        self.anchor = sync_round(self.synced, self.anchor, exchange)
        self.reported_steps = own_steps
        self.syncs += 1
        self.sync_seconds += time.monotonic() - started

    def drain(self) -> list:
        return self.outbox.drain()

    def request_stop(self) -> None:
        self.stop_requested.set()

    def optimizer_state(self) -> dict:
        return self.shared.optimizer.state_dict()
