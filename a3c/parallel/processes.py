"""What the processes of a local run (the workers, the evaluator) share, and what each child does first."""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass
from typing import Optional

import torch
from threadpoolctl import threadpool_limits

from a3c.config.settings import Config
from a3c.envs.spec import EnvSpec
from a3c.learn.optim import SharedOptimizer, make_optimizer
from a3c.learn.seeding import model_seed
from a3c.nets.actor_critic import Network
from a3c.nets.factory import build_model
from a3c.nets.flat import flatten_parameters
from a3c.parallel.counter import StepCounter
from a3c.parallel.turns import Turns

# The signals that ask the trainer for a clean stop, and its stop reasons. SIGUSR1: a scheduler's warning
# before its time limit (Slurm's --signal=USR1@60): stop, keep last.pt and exit with the trainer's
# "preempted" code, which a requeueing script answers with --resume
STOP_SIGNALS = {
    signal.SIGINT: "interrupted",
    signal.SIGTERM: "terminated",
    signal.SIGHUP: "hangup",
    signal.SIGUSR1: "preempted",
}


class Heartbeats:
    """When each worker, and in the last slot the evaluator, last showed progress: shared monotonic times
    (CLOCK_MONOTONIC is one clock for every process of a machine). The trainer's watchdog reads them."""

    def __init__(self, ctx, num_workers: int):
        self.times = ctx.RawArray("d", num_workers + 1)
        self.evaluator = num_workers  # the evaluator's slot

    def beat(self, slot: int) -> None:
        self.times[slot] = time.monotonic()

    def silence(self, slot: int) -> float:
        """Seconds since `slot` last beat."""
        return time.monotonic() - self.times[slot]


class StopFlag:
    """The run's stop request, one shared byte. Not a multiprocessing Event: setting an Event notifies its
    waiters and waits for each to wake, so a process killed while it waited (SIGTERM to a whole process
    group, as Slurm's scancel sends it) left the trainer's set() waiting for ever; a byte has no waiters
    and no lock for a dead process to leave held."""

    POLL_SECONDS = 0.05  # how soon a waiting process sees the stop

    def __init__(self, ctx):
        self.flag = ctx.RawValue("b", 0)

    def set(self) -> None:
        self.flag.value = 1

    def is_set(self) -> bool:
        return bool(self.flag.value)

    def wait(self, timeout: float) -> bool:
        """Until set or `timeout` seconds have passed; whether it is set."""
        deadline = time.monotonic() + timeout
        while not self.is_set() and time.monotonic() < deadline:
            time.sleep(min(self.POLL_SECONDS, max(0.0, deadline - time.monotonic())))
        return self.is_set()


@dataclass
class Shared:
    """What every process of a run shares: handed over once, when the process starts."""

    model: Network  # parameters are views of optimizer.params[0], in shared memory
    optimizer: SharedOptimizer
    env_steps: StepCounter
    stop: StopFlag
    started_at: float  # the time.monotonic() the run's training seconds count from (--max-minutes's lr decay)
    turns: Optional[Turns] = None  # None: every worker acts at once
    heartbeats: Optional[Heartbeats] = None  # None: no watchdog (--worker-timeout 0)


def one_thread() -> None:
    """One compute thread in this process, for torch and for numpy's BLAS (docs/design/facts.md, fact 3).

    Setting OMP_NUM_THREADS=1 before numpy loads does the same for BLAS, but a caller of
    the Python API may have imported numpy already: with BLAS's own threads, 8 workers
    on 2 cores ran 3.2x slower (Pendulum, numpy learner).
    """
    torch.set_num_threads(1)
    threadpool_limits(1)


def become_child_process() -> None:
    """Settings every worker and evaluator process needs first."""
    one_thread()
    # Ctrl-C, a closed terminal and a scheduler's warning reach the whole group: the trainer decides. SIGTERM
    # ends a child (LocalBackend.stop terminates stragglers with it)
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_DFL if signum == signal.SIGTERM else signal.SIG_IGN)


def parent_is_gone(parent_pid: int) -> bool:
    """An orphan (its trainer was SIGKILLed) must not train on forever."""
    return os.getppid() != parent_pid


def shared_model(config: Config, spec: EnvSpec) -> tuple[Network, SharedOptimizer]:
    """The model and optimizer the workers update, in shared memory: the parameters are views of
    the optimizer's one flat weight tensor."""
    torch.manual_seed(model_seed(config))
    model = build_model(config, spec)
    weights = flatten_parameters(model).share_memory_()
    model.share_memory()  # the noise and normalisation buffers; the parameters are views of `weights`
    optimizer = make_optimizer(config.optimizer, [weights], config.lr).share_memory()
    return model, optimizer


def worker_turns(ctx, config: Config) -> Optional[Turns]:
    """One active worker per core unless told otherwise; none needed when every worker has a core,
    nor in the trainer of a Ray run, whose workers run in node groups (each with turns of its own)."""
    if config.backend == "ray":
        return None
    active = config.active_workers or os.cpu_count() or 1
    return Turns(ctx, active, config.num_processes) if active < config.num_processes else None


def start_method(config: Config) -> str:
    # fork starts 8 workers in 0.3 s against about 8 s for spawn (docs/design/facts.md, fact 4).
    return config.start_method or ("fork" if sys.platform.startswith("linux") else "spawn")
