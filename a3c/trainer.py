"""Orchestration: the shared model, optimizer and counters; start, watch and stop the processes."""

from __future__ import annotations

import json
import os
import queue as queue_module
import re
import sys
import time
from pathlib import Path

import torch
import torch.multiprocessing as mp

from .checkpoint import save_checkpoint
from .config import Config, ConfigError
from .envs import env_spec
from .evaluator import run_evaluator
from .metrics import MetricsWriter
from .flat import flatten_parameters
from .optim import make_optimizer
from .worker import build_model, current_lr, run_worker

SHUTDOWN_SECONDS = 10.0


def default_run_dir(env_id: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", env_id)
    return str(Path("runs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}")


def prepare_run_dir(path: str) -> Path:
    """Create an empty run dir; refuse one that holds anything, so no earlier run is overwritten."""
    run_dir = Path(path)
    if run_dir.exists() and (not run_dir.is_dir() or any(run_dir.iterdir())):
        raise ConfigError(f"--run-dir {run_dir} already exists and is not empty; choose another")
    try:
        (run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(f"--run-dir {run_dir} cannot be created: {error.strerror}") from None
    if not os.access(run_dir, os.W_OK):
        raise ConfigError(f"--run-dir {run_dir} is not writable")
    return run_dir


def resolve_config(config: Config) -> Config:
    """Fill in what depends on the environment: the target return and the run dir."""
    spec = env_spec(config.env)
    target = spec.reward_threshold if config.target_return == "auto" else config.target_return
    return config.replace(target_return=target, run_dir=config.run_dir or default_run_dir(config.env))


def start_method(config: Config) -> str:
    # fork starts 8 workers in 0.3 s against about 8 s for spawn (DESIGN.md fact 4).
    return config.start_method or ("fork" if sys.platform.startswith("linux") else "spawn")


def drain(queue, writer: MetricsWriter, timeout: float) -> None:
    try:
        writer.handle(queue.get(timeout=timeout))
        while True:
            writer.handle(queue.get_nowait())
    except queue_module.Empty:
        pass


def train(config: Config, print_fn=print) -> dict:
    """Run one training job to its end; returns the summary that is also in summary.json."""
    start_time = time.monotonic()
    torch.set_num_threads(1)  # before any worker starts (DESIGN.md fact 3)
    config = resolve_config(config)
    spec = env_spec(config.env)
    run_dir = prepare_run_dir(config.run_dir)
    (run_dir / "config.json").write_text(json.dumps(config.to_dict(), indent=2) + "\n")

    torch.manual_seed(config.seed)
    model = build_model(config, spec.obs_size, spec.num_actions)
    flat_weights = flatten_parameters(model).share_memory_()
    model.share_memory()  # the noise buffers; the parameters are views of flat_weights
    optimizer = make_optimizer(config.optimizer, [flat_weights], config.lr).share_memory()

    ctx = mp.get_context(start_method(config))
    env_steps, stop, queue = ctx.Value("q", 0), ctx.Event(), ctx.Queue()
    processes = [ctx.Process(target=run_worker, name=f"a3c-worker-{rank}", daemon=True,
                             args=(rank, config, model, optimizer, env_steps, stop, queue))
                 for rank in range(config.num_processes)]
    if config.eval_episodes > 0:
        processes.append(ctx.Process(target=run_evaluator, name="a3c-evaluator", daemon=True,
                                     args=(config, model, env_steps, stop, queue, start_time, str(run_dir))))
    writer = MetricsWriter(run_dir, config.log_interval, config.print_interval,
                           lambda steps: current_lr(config, steps), start_time, print_fn)
    print_fn(f"training {config.env} with {config.num_processes} processes x {config.envs_per_process} envs; "
             f"run dir {run_dir}", flush=True)
    for process in processes:
        process.start()

    stop_reason = "max_steps"
    workers, evaluator = processes[:config.num_processes], processes[config.num_processes:]
    try:
        while not stop.is_set():
            drain(queue, writer, timeout=0.05)
            writer.maybe_print()
            if any(p.exitcode not in (None, 0) for p in workers):
                stop_reason = "worker_failed"
                break
            if any(p.exitcode not in (None, 0) for p in evaluator):
                stop_reason = "evaluator_failed"
                break
            if not any(p.is_alive() for p in workers):
                break
    except KeyboardInterrupt:
        stop_reason = "interrupted"
    stop.set()
    stop_processes(processes, queue, writer)

    if writer.solved_at is not None:
        stop_reason = "solved"
    save_checkpoint(run_dir / "checkpoints" / "last.pt", {
        "config": config.to_dict(), "model": model.state_dict(), "optimizer": optimizer.state_dict(),
        "env_steps": env_steps.value})
    writer.close()
    summary = writer.summary(config.env, env_steps.value, config.target_return, stop_reason)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    for error in writer.errors:
        print(error, file=sys.stderr)
    writer.print_progress()
    print_fn(format_summary(summary), flush=True)
    return summary


def stop_processes(processes: list, queue, writer: MetricsWriter) -> None:
    """Let every process finish its update; keep draining so none blocks on a full pipe."""
    deadline = time.monotonic() + SHUTDOWN_SECONDS
    while any(p.is_alive() for p in processes) and time.monotonic() < deadline:
        drain(queue, writer, timeout=0.05)
    for process in processes:
        if process.is_alive():
            process.terminate()
        process.join()
    drain(queue, writer, timeout=0.0)


def format_summary(summary: dict) -> str:
    solved = (f"solved at {summary['solved_env_steps']:,} env steps, {summary['solved_wall_seconds']:.1f} s"
              if summary["solved"] else "not solved")
    best = summary["best_eval_return"]
    return (f"done ({summary['stop_reason']}): {summary['env_steps']:,} env steps in "
            f"{summary['wall_seconds']:.1f} s ({summary['steps_per_second']:,.0f} steps/s); "
            f"best eval {'-' if best is None else f'{best:.1f}'}; {solved}")
