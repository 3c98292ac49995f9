"""Orchestration: set up (or resume) a run, start and watch the processes, stop cleanly."""

from __future__ import annotations

import gc
import json
import os
import re
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import torch
import torch.multiprocessing as mp

from a3c.backends import connect_backend, make_backend
from a3c.backends.base import Backend
from a3c.config.settings import Config, config_for_resume, for_spaces
from a3c.envs.make import env_spec
from a3c.envs.spec import EnvSpec
from a3c.errors import CheckpointError, ConfigError, WriteError, first_line, writing
from a3c.learn.checkpoint import check_spaces, checkpoint_payload, load_checkpoint, save_checkpoint
from a3c.learn.distributions import Categorical, distribution
from a3c.learn.optim import SharedOptimizer, budget_used, current_lr
from a3c.learn.policies import numpy_covers
from a3c.nets.actor_critic import Network
from a3c.nets.precision import Convolutions, describe_precision
from a3c.parallel.counter import StepCounter
from a3c.parallel.messages import WriteFailed
from a3c.parallel.processes import STOP_SIGNALS, Heartbeats, Shared, StopFlag, shared_model, start_method, worker_turns
from a3c.run.callbacks import Callbacks
from a3c.run.capacity import check_machine
from a3c.run.console import Console
from a3c.run.final_evaluation import BUDGET_SPENT, evaluate_final_weights
from a3c.run.lock import RunLock
from a3c.run.metrics import MetricsSettings, MetricsWriter, drop_rows_after
from a3c.run.phases import Phases, format_phases
from a3c.run.tracking import PREEMPTED_EXIT_CODE, Tracker, require_tracker

EXIT_CODES = {
    "interrupted": 130,
    "terminated": 143,
    "hangup": 129,
    "preempted": PREEMPTED_EXIT_CODE,
    "worker_failed": 1,
    "evaluator_failed": 1,
    "diverged": 1,
    "global_model_failed": 1,
    "node_group_failed": 1,
    "node_group_unplaced": 1,
    "write_failed": 1,
    "callback_failed": 1,
}


@dataclass
class RunSetup:
    """Everything a run starts from: fresh, or restored from a checkpoint."""

    config: Config
    run_dir: Path
    lock: RunLock  # held until the run ends: one trainer per run dir
    model: Network  # its parameters are views of optimizer.params[0], in shared memory
    optimizer: SharedOptimizer
    env_steps: int = 0
    counters: Optional[dict] = None
    ray_cluster: Any = None  # a3c.backends.ray.RayCluster with --backend ray
    warnings: tuple[str, ...] = ()  # what the capacity checks found that fits, but badly


def default_run_dir(env_id: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", env_id)
    return str(Path("runs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}")


def prepare_run_dir(path: str) -> Path:
    """Create an empty run dir; refuse one that holds anything, so no earlier run is overwritten."""
    run_dir = Path(path)
    if run_dir.exists() and (not run_dir.is_dir() or any(run_dir.iterdir())):
        raise ConfigError(
            f"--run-dir {run_dir} already exists and is not empty; "
            f"choose another or continue it with --resume {run_dir}"
        )
    try:
        (run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(f"--run-dir {run_dir} cannot be created: {error.strerror}") from None
    if not os.access(run_dir, os.W_OK):
        raise ConfigError(f"--run-dir {run_dir} is not writable")
    return run_dir


def new_run(config: Config) -> RunSetup:
    spec = env_spec(config.env)
    target = spec.reward_threshold if config.target_return == "auto" else config.target_return
    config = for_spaces(config, spec).replace(
        target_return=target, run_dir=config.run_dir or default_run_dir(config.env)
    )
    warnings = check_machine(config, spec, Path(config.run_dir))  # before the network is built: it may not fit
    model, optimizer = shared_model(config, spec)  # a user's --model is checked here, before anything is written
    check_noise_target(config, model, spec)
    check_video(config)
    require_tracker(config.track)
    ray_cluster = connect_backend(config)
    run_dir = prepare_run_dir(config.run_dir)
    return RunSetup(
        config, run_dir, RunLock(run_dir), model, optimizer, ray_cluster=ray_cluster, warnings=tuple(warnings)
    )


def check_noise_target(config: Config, model: Network, spec: EnvSpec) -> None:
    """--noise-kl-target adapts the draws to what the learner measures of them (ActorLearner.noise_effects):
    only the numpy learner, on the stock network, with one categorical action, measures it."""
    if not config.noise_kl_target:
        return
    numpy_learner = config.learner != "torch" and numpy_covers(model)
    if not (numpy_learner and isinstance(distribution(spec), Categorical)):
        raise ConfigError(
            "--noise-kl-target needs the numpy learner's measure of the draws: the stock network, one discrete "
            "action, and flat observations or frames"
        )


def check_video(config: Config) -> None:
    if config.video_interval:
        from a3c.tools.video import check_renders  # imageio and a rendering env: only when asked for

        check_renders(config.env)


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
    lock = RunLock(run_dir)  # before anything here changes: a second --resume of a running run stops now
    try:
        return restore(payload, file, run_dir, lock, overrides)
    except BaseException:
        lock.release()
        raise


def restore(payload: dict, file: Path, run_dir: Path, lock: RunLock, overrides: dict) -> RunSetup:
    saved = Config.from_dict(payload["config"])
    spec = env_spec(saved.env)  # the env is the checkpoint's: --env given again may not change it
    config = config_for_resume(saved, overrides, spec).replace(run_dir=str(run_dir))
    if payload["env_steps"] >= config.max_steps:
        raise ConfigError(
            f"the checkpoint is at {payload['env_steps']:,} env steps, already at --max-steps "
            f"{config.max_steps:,}; give a larger --max-steps to train on"
        )
    trained_minutes = (payload.get("counters") or {}).get("wall_seconds", 0.0) / 60
    if 0 < config.max_minutes <= trained_minutes:
        raise ConfigError(
            f"the run has trained {trained_minutes:.1f} minutes, already at --max-minutes {config.max_minutes:g}; "
            "give a larger --max-minutes to train on"
        )
    check_spaces(payload, spec, config.env)
    warnings = check_machine(config, spec, run_dir)
    model, optimizer = shared_model(config, spec)
    check_noise_target(config, model, spec)
    check_video(config)
    require_tracker(config.track)
    try:
        model.load_state_dict(payload["model"])
        optimizer.load_state_dict(payload["optimizer"])
    except (RuntimeError, KeyError, TypeError) as error:
        raise CheckpointError(f"{file} does not fit this network: {first_line(error)}") from None
    ray_cluster = connect_backend(config)
    for name in ("metrics.csv", "eval.csv"):
        drop_rows_after(run_dir / name, payload["env_steps"])
    return RunSetup(
        config,
        run_dir,
        lock,
        model,
        optimizer,
        payload["env_steps"],
        payload.get("counters"),
        ray_cluster,
        tuple(warnings),
    )


# GNU timeout signals the trainer, then its process group: one request arriving twice within microseconds
SAME_REQUEST_SECONDS = 1.0


class Interrupts:
    """The first of STOP_SIGNALS asks for a clean stop; the same signal again within SAME_REQUEST_SECONDS is
    the same request; any later one kills everything at once and calls `on_quit` with the stop reason (it
    writes summary.json), and an exception leaving the block kills everything too (a fault of the trainer
    itself: no child may outlive it).

    The handler only records the first signal: the main loop reacts, so no lock is ever
    taken inside a signal handler for a clean stop.
    """

    def __init__(self, kill_children, on_quit=lambda stop_reason: None):
        self.received: Optional[int] = None
        self.received_at = 0.0
        self.kill_children, self.on_quit = kill_children, on_quit
        self._previous = {}

    def __enter__(self) -> "Interrupts":
        if threading.current_thread() is not threading.main_thread():
            return self  # only the main thread may set handlers; a caller's thread stops the run otherwise
        for signum in STOP_SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        if exc_type is not None:
            self.kill_children()
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    @property
    def stop_reason(self) -> Optional[str]:
        return None if self.received is None else STOP_SIGNALS[self.received]

    def _handle(self, signum, frame) -> None:
        if self.received is None:
            self.received, self.received_at = signum, time.monotonic()
            return
        if signum == self.received and time.monotonic() - self.received_at < SAME_REQUEST_SECONDS:
            return
        self.kill_children()
        self.on_quit(self.stop_reason)
        os._exit(128 + signum)


def save_last_checkpoint(path: Path, setup: RunSetup, env_steps: int, writer: MetricsWriter) -> None:
    """What a resumed run needs: the weights, the optimizer state and the counters."""
    save_checkpoint(
        path,
        checkpoint_payload(
            setup.config, setup.model, env_steps, optimizer=setup.optimizer.state_dict(), counters=writer.counters()
        ),
    )


@dataclass(frozen=True)
class TrainResult:
    summary: dict  # what summary.json holds
    run_dir: Path


def train(
    config: Optional[Config],
    print_fn=print,
    resume: Optional[str] = None,
    overrides: Optional[dict] = None,
    launched_at: Optional[float] = None,
    callbacks: Sequence = (),
) -> TrainResult:
    """Run one training job to its end (or continue the one at `resume`, with `config` None).

    `launched_at`: the time.monotonic() the phase timings count from (the CLI: its process's start);
    by default, this call. `callbacks`: see a3c/run/callbacks.py. Leaves the calling process as it found
    it: its torch thread count, its signal handlers and its garbage collector's generations are
    restored on the way out.
    """
    phases = Phases(time.monotonic() if launched_at is None else launched_at)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # before any worker starts (docs/design/facts.md, fact 3)
    gc.freeze()  # the objects of now (torch's modules) are never scanned again, here or in a forked worker
    try:
        return run(config, print_fn, resume, overrides, phases, callbacks)
    finally:
        gc.unfreeze()
        torch.set_num_threads(threads)


def run(
    config: Config, print_fn, resume: Optional[str], overrides: Optional[dict], phases: Phases, callbacks: Sequence
) -> TrainResult:
    setup = resumed_run(resume, overrides or {}) if resume else new_run(config)
    try:
        return run_to_the_end(setup, print_fn, resume is not None, phases, callbacks)
    finally:
        setup.lock.release()


def run_to_the_end(setup: RunSetup, print_fn, resuming: bool, phases: Phases, user_callbacks: Sequence) -> TrainResult:
    parts = open_run(setup, print_fn, resuming, phases, user_callbacks)
    return close_run(parts, drive(parts))


@dataclass
class RunParts:
    """What a run is made of between its set-up and its shut-down: the loop and the end both use them."""

    setup: RunSetup
    phases: Phases
    shared: Shared
    console: Console
    callbacks: Callbacks
    writer: MetricsWriter
    backend: Backend
    disk: Disk

    def handle(self, message) -> None:
        """Every message of the workers and the evaluator, as the backend hands them over."""
        self.phases.observe(message)
        if isinstance(message, WriteFailed):
            self.disk.failed_with(message.error)
        else:
            self.disk.write(self.writer.handle, message)

    def save_checkpoint(self, env_steps: int) -> None:
        self.disk.write(
            save_last_checkpoint, self.setup.run_dir / "checkpoints" / "last.pt", self.setup, env_steps, self.writer
        )


def open_run(setup: RunSetup, print_fn, resuming: bool, phases: Phases, user_callbacks: Sequence) -> RunParts:
    """Write config.json, build the run's parts (on_start is called before the metrics files are opened), say
    what starts. The processes are not started yet."""
    config, run_dir = setup.config, setup.run_dir
    with writing(run_dir / "config.json"):
        (run_dir / "config.json").write_text(json.dumps(config.to_dict(), indent=2) + "\n")
    start_time = time.monotonic() - (setup.counters or {}).get("wall_seconds", 0.0)

    ctx = mp.get_context(start_method(config))
    shared = Shared(
        setup.model,
        setup.optimizer,
        StepCounter(ctx, config.num_processes, setup.env_steps),
        StopFlag(ctx),
        start_time,
        worker_turns(ctx, config),
        Heartbeats(ctx, config.num_processes),
    )
    console = Console(print_fn)
    tracking = [Tracker(config.track, console, EXIT_CODES)] if config.track != "none" else []
    callbacks = Callbacks([*user_callbacks, *tracking], console)  # the tracker last: its on_end waits for its process
    callbacks.call("on_start", config, run_dir)
    settings = MetricsSettings(
        run_dir,
        config.log_interval,
        config.print_interval,
        lambda steps, seconds: budget_used(steps, config.max_steps, seconds, config.max_minutes),
        lambda steps, seconds: current_lr(config, steps, seconds),
        config.tensorboard,
    )
    writer = MetricsWriter(settings, start_time, console, setup.env_steps, setup.counters, on_row=callbacks.row)
    backend = make_backend(setup.ray_cluster, ctx, config, shared, run_dir, start_time, writer.best_eval, console)
    parts = RunParts(setup, phases, shared, console, callbacks, writer, backend, Disk(console, run_dir))
    for warning in setup.warnings:
        console.message(f"warning: {warning}", error=True)
    console.message(
        f"{'resuming' if resuming else 'training'} {config.env} at {setup.env_steps:,} env steps with "
        f"{config.num_processes} processes x {config.envs_per_process} envs; run dir {run_dir}"
    )
    if any(isinstance(module, Convolutions) for module in setup.model.modules()):
        console.message(describe_precision(config.precision))
    return parts


def drive(parts: RunParts) -> str:
    """Start the processes and pass their messages on, with a checkpoint every checkpoint_interval, until a
    reason to stop holds; then stop them. Returns that reason."""
    interval = parts.setup.config.checkpoint_interval
    with Interrupts(parts.backend.kill, lambda stop_reason: write_quit_summary(parts, stop_reason)) as interrupts:
        parts.backend.start()
        parts.phases.mark("processes_started")
        stop_reason, next_checkpoint = None, time.monotonic() + interval
        while stop_reason is None:
            parts.backend.receive(parts.handle, timeout=0.05)
            parts.writer.maybe_print()
            if time.monotonic() >= next_checkpoint:
                if parts.backend.sync_state():
                    parts.save_checkpoint(parts.shared.env_steps.total())
                next_checkpoint = time.monotonic() + interval
            stop_reason = reason_to_stop(parts, interrupts)
        parts.phases.mark("stopped")
        if stop_reason in STOP_SIGNALS.values():
            parts.console.message(
                "stopping: finishing the current updates and writing the checkpoint "
                "(press Ctrl-C again to quit at once; last.pt then holds the last checkpoint written)"
            )
        parts.backend.stop(parts.handle)
    return stop_reason


def reason_to_stop(parts: RunParts, interrupts: Interrupts) -> Optional[str]:
    """The first reason to stop the run that holds now, in this order; None to train on."""
    if parts.disk.failed:
        return "write_failed"
    if interrupts.stop_reason is not None:
        return interrupts.stop_reason
    if parts.callbacks.stop_reason is not None:
        return parts.callbacks.stop_reason
    if parts.writer.diverged:
        parts.console.message(
            f"{parts.writer.nonfinite_in_a_row} updates in a row had a NaN or infinite loss or "
            "gradient; none was applied; stopping (try a lower --lr)",
            error=True,
        )
        return "diverged"
    if parts.shared.stop.is_set():
        return "max_steps"
    if 0 < parts.setup.config.max_minutes <= parts.writer.elapsed() / 60:
        return "max_minutes"
    return parts.backend.check()


def close_run(parts: RunParts, stop_reason: str) -> TrainResult:
    """After the processes have stopped: the last checkpoint, the final weights' evaluation where the budget was
    spent unsolved, the metrics files closed, summary.json, the last lines, on_end. A failed write skips the
    writes after it (but the closing) and makes the reason write_failed."""
    writer, disk, run_dir, config = parts.writer, parts.disk, parts.setup.run_dir, parts.setup.config
    env_steps = parts.shared.env_steps.total()
    if parts.backend.sync_state():  # else last.pt keeps the last state that could be vouched for
        parts.save_checkpoint(env_steps)
        if stop_reason in BUDGET_SPENT and writer.solved_at is None and config.eval_episodes > 0:
            disk.write(  # best.pt may be written: a full disk is a line, as any write of the run's
                evaluate_final_weights,
                config,
                parts.setup.model,
                parts.setup.optimizer.params[0],
                run_dir,
                env_steps,
                writer.start_time,
                writer.best_eval,
                parts.console,
                parts.handle,
            )
    if writer.solved_at is not None:
        stop_reason = "solved"
    disk.write(writer.close, always=True)
    if disk.failed:
        stop_reason = "write_failed"
    summary = run_summary(parts, env_steps, stop_reason)
    disk.write(write_summary, run_dir / "summary.json", summary)
    writer.print_progress()
    parts.console.message(format_summary(summary))
    parts.callbacks.call("on_end", summary)
    return TrainResult(summary, run_dir)


def run_summary(parts: RunParts, env_steps: int, stop_reason: str) -> dict:
    """What summary.json holds."""
    config = parts.setup.config
    return {
        **parts.writer.summary(config.env, env_steps, config.target_return, stop_reason),
        **parts.backend.report(),
        "phases": parts.phases.report(),
        "quit_at_once": False,
    }


def write_quit_summary(parts: RunParts, stop_reason: str) -> None:
    """summary.json of a run quit at once (a second request to stop), its processes already killed: the stop
    reason of the first request, the env steps counted, `quit_at_once` true; last.pt stays the last one
    written whole (checkpoints are written to a temporary file and renamed)."""
    summary = {**run_summary(parts, parts.shared.env_steps.total(), stop_reason), "quit_at_once": True}
    parts.disk.write(write_summary, parts.setup.run_dir / "summary.json", summary)


def write_summary(path: Path, summary: dict) -> None:
    with writing(path):
        path.write_text(json.dumps(summary, indent=2) + "\n")


class Disk:
    """The run's writes after start-up. The first that fails (a full or failing disk), the trainer's or the
    evaluator's, is reported in one line and stops the run; the trainer's writes after it are skipped,
    except `always` ones (closing files)."""

    def __init__(self, console: Console, run_dir: Path):
        self.console, self.run_dir = console, run_dir
        self.failed = False

    def write(self, write, *args, always: bool = False) -> None:
        if self.failed and not always:
            return
        try:
            write(*args)
        except WriteError as error:
            self.failed_with(str(error))

    def failed_with(self, error: str) -> None:
        """A write failed, here or in the evaluator: the first is said, the run stops."""
        if not self.failed:
            self.console.message(
                f"{error}; stopping (make room, then continue with --resume {self.run_dir})", error=True
            )
        self.failed = True


def format_summary(summary: dict) -> str:
    confirmed = (
        f" (confirmed: {summary['confirmed_return']:.1f} over {summary['confirmed_episodes']} new episodes)"
        if summary["solved"] and summary["confirmed_episodes"]
        else ""
    )
    solved = (
        f"solved at {summary['solved_env_steps']:,} env steps, {summary['solved_wall_seconds']:.1f} s{confirmed}"
        if summary["solved"]
        else "not solved"
    )
    best = summary["best_eval_return"]
    return (
        f"done ({summary['stop_reason']}): {summary['env_steps']:,} env steps in "
        f"{summary['wall_seconds']:.1f} s ({summary['steps_per_second']:,.0f} steps/s); "
        f"best eval {'-' if best is None else f'{best:.1f}'}; {solved}; {format_phases(summary['phases'])}"
    )
