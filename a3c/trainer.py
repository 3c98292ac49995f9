"""Orchestration: set up (or resume) a run, start and watch the processes, stop cleanly."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Optional

import torch
import torch.multiprocessing as mp

from . import __version__
from .checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from .config import Config, ConfigError, config_for_resume
from .counter import StepCounter
from .envs import EnvSpec, env_spec
from .evaluator import run_evaluator
from .flat import flatten_parameters
from .learner import build_model, current_lr
from .metrics import Console, MetricsWriter, drop_rows_after
from .model import ActorCritic
from .optim import SharedOptimizer, make_optimizer
from .processes import Shared
from .turns import Turns
from .worker import run_worker

STOP_GRACE_SECONDS = 5.0  # then stragglers are terminated: Ctrl-C must end a run within 10 s
EXIT_CODES = {"interrupted": 130, "terminated": 143, "worker_failed": 1, "evaluator_failed": 1, "diverged": 1,
              "parameter_server_failed": 1}


@dataclass
class RunSetup:
    """Everything a run starts from: fresh, or restored from a checkpoint."""

    config: Config
    run_dir: Path
    model: ActorCritic  # its parameters are views of optimizer.params[0], in shared memory
    optimizer: SharedOptimizer
    env_steps: int = 0
    counters: Optional[dict] = None
    ray_cluster: Any = None  # a3c.ray_backend.RayCluster with --backend ray


def default_run_dir(env_id: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", env_id)
    return str(Path("runs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}")


def prepare_run_dir(path: str) -> Path:
    """Create an empty run dir; refuse one that holds anything, so no earlier run is overwritten."""
    run_dir = Path(path)
    if run_dir.exists() and (not run_dir.is_dir() or any(run_dir.iterdir())):
        raise ConfigError(f"--run-dir {run_dir} already exists and is not empty; "
                          f"choose another or continue it with --resume {run_dir}")
    try:
        (run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(f"--run-dir {run_dir} cannot be created: {error.strerror}") from None
    if not os.access(run_dir, os.W_OK):
        raise ConfigError(f"--run-dir {run_dir} is not writable")
    return run_dir


def shared_model(config: Config, spec: EnvSpec) -> tuple[ActorCritic, SharedOptimizer]:
    torch.manual_seed(config.seed)
    model = build_model(config, spec)
    weights = flatten_parameters(model).share_memory_()
    model.share_memory()  # the noise and normalisation buffers; the parameters are views of `weights`
    optimizer = make_optimizer(config.optimizer, [weights], config.lr).share_memory()
    return model, optimizer


def new_run(config: Config) -> RunSetup:
    spec = env_spec(config.env)
    target = spec.reward_threshold if config.target_return == "auto" else config.target_return
    config = config.replace(target_return=target, run_dir=config.run_dir or default_run_dir(config.env))
    ray_cluster = connect_backend(config)
    run_dir = prepare_run_dir(config.run_dir)
    return RunSetup(config, run_dir, *shared_model(config, spec), ray_cluster=ray_cluster)


def checkpoint_path(path: str) -> Path:
    """A run dir means its checkpoints/last.pt."""
    given = Path(path)
    return given / "checkpoints" / "last.pt" if given.is_dir() else given


def resumed_run(path: str, overrides: dict) -> RunSetup:
    """Restore weights, optimizer moments, counters; drop metric rows newer than the checkpoint."""
    file = checkpoint_path(path)
    payload = load_checkpoint(file)
    if "optimizer" not in payload or "env_steps" not in payload:
        raise CheckpointError(f"{file} has no optimizer state to resume from; use a run's checkpoints/last.pt")
    run_dir = file.parent.parent if file.parent.name == "checkpoints" else file.parent
    saved = Config.from_dict(payload["config"])
    config = config_for_resume(saved, overrides).replace(run_dir=str(run_dir))
    if payload["env_steps"] >= config.max_steps:
        raise ConfigError(f"the checkpoint is at {payload['env_steps']:,} env steps, already at --max-steps "
                          f"{config.max_steps:,}; give a larger --max-steps to train on")
    model, optimizer = shared_model(config, env_spec(config.env))
    try:
        model.load_state_dict(payload["model"])
        optimizer.load_state_dict(payload["optimizer"])
    except (RuntimeError, KeyError, TypeError) as error:
        raise CheckpointError(f"{file} does not fit this network: {str(error).splitlines()[0]}") from None
    ray_cluster = connect_backend(config)
    for name in ("metrics.csv", "eval.csv"):
        drop_rows_after(run_dir / name, payload["env_steps"])
    return RunSetup(config, run_dir, model, optimizer, payload["env_steps"], payload.get("counters"), ray_cluster)


def connect_backend(config: Config):
    """With --backend ray, connect to Ray before anything is written: a bad address is a usage error."""
    if config.backend != "ray":
        return None
    from .ray_backend import connect  # here only: the local backend never imports Ray
    return connect(config)


def worker_turns(ctx, config: Config) -> Optional[Turns]:
    """One active worker per core unless told otherwise; none needed when every worker has a core,
    nor for Ray's workers, which are spread over a cluster's cores."""
    if config.backend == "ray":
        return None
    active = config.active_workers or os.cpu_count() or 1
    return Turns(ctx, active, config.num_processes) if active < config.num_processes else None


def start_method(config: Config) -> str:
    # fork starts 8 workers in 0.3 s against about 8 s for spawn (DESIGN.md fact 4).
    return config.start_method or ("fork" if sys.platform.startswith("linux") else "spawn")


class Interrupts:
    """The first SIGINT/SIGTERM asks for a clean stop; a second one kills everything at once.

    The handler only records the signal: the main loop reacts, so no lock is ever
    taken inside a signal handler.
    """

    def __init__(self, kill_children):
        self.received: Optional[int] = None
        self.kill_children = kill_children
        self._previous = {}

    def __enter__(self) -> "Interrupts":
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _handle(self, signum, frame) -> None:
        if self.received is None:
            self.received = signum
            return
        self.kill_children()
        os._exit(128 + signum)


class ProcessPool:
    """The worker processes and the evaluator, each with its own message pipe."""

    def __init__(self, ctx, config: Config, shared: Shared, run_dir: Path, start_time: float,
                 best_eval: Optional[float], console: Console):
        self.ctx, self.config, self.shared, self.console = ctx, config, shared, console
        self.evaluator_args = (start_time, str(run_dir), best_eval)
        self.workers: dict[int, mp.Process] = {}
        self.restarts = {rank: 0 for rank in range(config.num_processes)}
        self.evaluator: Optional[mp.Process] = None
        self.pipes: dict = {}  # receiving end -> process name

    def _start(self, name: str, target, *args) -> mp.Process:
        receiver, sender = self.ctx.Pipe(duplex=False)
        process = self.ctx.Process(target=target, name=name, daemon=True,
                                   args=(self.config, self.shared, sender, os.getpid(), *args))
        process.start()
        sender.close()  # the child holds it now; EOF on `receiver` then means the child is gone
        self.pipes[receiver] = name
        return process

    def start_worker(self, rank: int) -> None:
        self.workers[rank] = self._start(f"a3c-worker-{rank}", run_worker, rank, self.restarts[rank])

    def start_evaluator(self) -> None:
        if self.config.eval_episodes > 0:
            self.evaluator = self._start("a3c-evaluator", run_evaluator, *self.evaluator_args)

    def start(self) -> None:
        for rank in range(self.config.num_processes):
            self.start_worker(rank)
        self.start_evaluator()

    def processes(self) -> list[mp.Process]:
        return list(self.workers.values()) + ([self.evaluator] if self.evaluator else [])

    def receive(self, handle, timeout: float) -> None:
        """Pass every waiting message to `handle`, waiting up to `timeout` for the first."""
        for receiver in wait(list(self.pipes), timeout):
            try:
                while receiver.poll():
                    handle(receiver.recv())
            except (EOFError, OSError):
                del self.pipes[receiver]
                receiver.close()

    def check(self) -> Optional[str]:
        """Restart dead workers while restarts last; say why the run must stop, if it must."""
        for rank, process in list(self.workers.items()):
            if process.exitcode in (None, 0):
                continue
            cause = (f"killed by signal {-process.exitcode}" if process.exitcode < 0
                     else f"exit code {process.exitcode}")
            process.join()
            if self.shared.turns is not None:
                self.shared.turns.give_back_for(rank)
            if self.restart_worker(rank, cause) is not None:
                return "worker_failed"
        if self.evaluator_failed():
            return "evaluator_failed"
        if all(p.exitcode == 0 for p in self.workers.values()):
            return "max_steps"
        return None

    def restart_worker(self, rank: int, cause: str) -> Optional[str]:
        """Start a dead worker again; "worker_failed" once it has used up its restarts."""
        if self.restarts[rank] >= self.config.max_worker_restarts:
            self.console.message(f"worker {rank} died ({cause}) and has no restarts left "
                                 f"(--max-worker-restarts {self.config.max_worker_restarts})", error=True)
            return "worker_failed"
        self.restarts[rank] += 1
        self.console.message(f"worker {rank} died ({cause}); restarting it from the shared weights "
                             f"({self.restarts[rank]}/{self.config.max_worker_restarts})", error=True)
        self.start_worker(rank)
        return None

    def evaluator_failed(self) -> bool:
        return self.evaluator is not None and self.evaluator.exitcode not in (None, 0)

    def sync_state(self) -> bool:
        """Make the shared model and optimizer current for a checkpoint; False if they cannot be vouched for.

        Here the workers step them in shared memory: they always are.
        """
        return True

    def stop(self, handle) -> None:
        """Let every process finish its update, reading their messages so none blocks on a full pipe."""
        self.shared.stop.set()
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        while any(p.is_alive() for p in self.processes()) and time.monotonic() < deadline:
            self.receive(handle, timeout=0.05)
        for process in self.processes():
            if process.is_alive():
                process.terminate()
            process.join()
        self.receive(handle, timeout=0.0)

    def kill(self) -> None:
        for process in self.processes():
            if process.pid is not None and process.exitcode is None:
                os.kill(process.pid, signal.SIGKILL)


def make_ray_pool(ray_cluster, *pool_args) -> ProcessPool:
    from .ray_backend import RayPool
    return RayPool(ray_cluster, *pool_args)


def checkpoint_payload(setup: RunSetup, env_steps: int, writer: MetricsWriter) -> dict:
    return {"config": setup.config.to_dict(),
            "model": {k: v.clone() for k, v in setup.model.state_dict().items()},  # a snapshot of live weights
            "optimizer": setup.optimizer.state_dict(), "env_steps": env_steps,
            "counters": writer.counters(), "a3c_version": __version__}


def train(config: Config, print_fn=print, resume: Optional[str] = None, overrides: Optional[dict] = None) -> dict:
    """Run one training job to its end (or continue the one at `resume`); returns the summary."""
    torch.set_num_threads(1)  # before any worker starts (DESIGN.md fact 3)
    setup = resumed_run(resume, overrides or {}) if resume else new_run(config)
    config, run_dir = setup.config, setup.run_dir
    (run_dir / "config.json").write_text(json.dumps(config.to_dict(), indent=2) + "\n")
    start_time = time.monotonic() - (setup.counters or {}).get("wall_seconds", 0.0)

    ctx = mp.get_context(start_method(config))
    shared = Shared(setup.model, setup.optimizer, StepCounter(ctx, config.num_processes, setup.env_steps),
                    ctx.Event(), worker_turns(ctx, config))
    console = Console(print_fn)
    writer = MetricsWriter(run_dir, config.log_interval, config.print_interval, config.max_steps,
                           lambda steps: current_lr(config, steps), start_time, console, config.tensorboard,
                           setup.env_steps, setup.counters)
    pool_args = (ctx, config, shared, run_dir, start_time, writer.best_eval, console)
    pool = make_ray_pool(setup.ray_cluster, *pool_args) if setup.ray_cluster else ProcessPool(*pool_args)
    last_pt = run_dir / "checkpoints" / "last.pt"
    console.message(f"{'resuming' if resume else 'training'} {config.env} at {setup.env_steps:,} env steps with "
                    f"{config.num_processes} processes x {config.envs_per_process} envs; run dir {run_dir}")

    with Interrupts(pool.kill) as interrupts:
        pool.start()
        stop_reason, next_checkpoint = None, time.monotonic() + config.checkpoint_interval
        while stop_reason is None:
            pool.receive(writer.handle, timeout=0.05)
            writer.maybe_print()
            if time.monotonic() >= next_checkpoint:
                if pool.sync_state():
                    save_checkpoint(last_pt, checkpoint_payload(setup, shared.env_steps.total(), writer))
                next_checkpoint = time.monotonic() + config.checkpoint_interval
            if interrupts.received is not None:
                stop_reason = "interrupted" if interrupts.received == signal.SIGINT else "terminated"
            elif writer.diverged:
                stop_reason = "diverged"
                console.message(f"{writer.nonfinite_in_a_row} updates in a row had a NaN or infinite loss or "
                                "gradient; none was applied; stopping (try a lower --lr)", error=True)
            elif shared.stop.is_set():
                stop_reason = "max_steps"
            else:
                stop_reason = pool.check()
        if stop_reason in ("interrupted", "terminated"):
            console.message("stopping: finishing the current updates and writing the checkpoint "
                            "(press Ctrl-C again to quit at once)")
        pool.stop(writer.handle)

    if writer.solved_at is not None:
        stop_reason = "solved"
    env_steps = shared.env_steps.total()
    if pool.sync_state():  # else last.pt keeps the last state that could be vouched for
        save_checkpoint(last_pt, checkpoint_payload(setup, env_steps, writer))
    writer.close()
    summary = writer.summary(config.env, env_steps, config.target_return, stop_reason)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    writer.print_progress()
    console.message(format_summary(summary))
    return summary


def format_summary(summary: dict) -> str:
    solved = (f"solved at {summary['solved_env_steps']:,} env steps, {summary['solved_wall_seconds']:.1f} s"
              if summary["solved"] else "not solved")
    best = summary["best_eval_return"]
    return (f"done ({summary['stop_reason']}): {summary['env_steps']:,} env steps in "
            f"{summary['wall_seconds']:.1f} s ({summary['steps_per_second']:,.0f} steps/s); "
            f"best eval {'-' if best is None else f'{best:.1f}'}; {solved}")
