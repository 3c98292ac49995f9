"""CartPole's pipeline through the CLI on either backend, as ray_bench.py and scale/cluster_bench.py run it: for a
number of seconds (its steady rates, its updates and global-model calls per 1,000 env steps), or to its solve."""

from __future__ import annotations

import csv
import statistics
import tempfile
from pathlib import Path

from harness.launch import DEFAULTS_WITHOUT_PRESET, read_summary, run_timed, trainer_command

ENV = "CartPole-v1"
WORKERS, ENVS = 2, 8
WARMUP_SECONDS = 2.0


def steady_rates(run_dir: Path) -> dict:
    """env steps/s and updates/s between the first row after the warm-up and the last row before the stop."""
    with open(run_dir / "metrics.csv") as file:
        rows = [(float(r["wall_seconds"]), int(r["env_steps"]), int(r["updates"])) for r in csv.DictReader(file)]
    window = [row for row in rows[:-1] if row[0] >= rows[0][0] + WARMUP_SECONDS]
    (wall0, steps0, updates0), (wall1, steps1, updates1) = window[0], window[-1]
    return {
        "env_steps_per_second": (steps1 - steps0) / (wall1 - wall0),
        "updates_per_second": (updates1 - updates0) / (wall1 - wall0),
    }


def train_for(seconds: float, workers: int = WORKERS, envs: int = ENVS, host: list[str] = (), **backend) -> dict:
    """CartPole's pipeline for `seconds` (a group's workers, their envs, the backend's options), launched behind
    the words of `host` (another host's namespace, say): its steady rates, its stop, its updates and
    global-model calls per 1000 env steps, and its summary."""
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        options = dict(DEFAULTS_WITHOUT_PRESET, envs_per_process=envs)  # the pipeline, not CartPole's preset
        command = trainer_command(
            run_dir,
            env=ENV,
            num_processes=workers,
            max_steps=10**9,
            target_return="none",
            eval_episodes=0,
            log_interval=2000,
            print_interval=3600,
            **options,
            **backend,
        ) + ["--no-tensorboard"]
        run_timed([*host, *command], timeout=seconds)  # SIGINT at the timeout: a clean stop that writes the summary
        summary = read_summary(run_dir)
        return {
            **steady_rates(run_dir),
            "stop_reason": summary["stop_reason"],
            "updates_per_1000_steps": 1000 * summary["updates"] / summary["env_steps"],
            "calls_per_1000_steps": 1000 * summary.get("global_model_calls", 0) / summary["env_steps"],
            "summary": summary,
        }


def solve(seed: int, timeout: float, **backend) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        wall, _, _ = run_timed(trainer_command(run_dir, env=ENV, seed=seed, **backend) + ["--no-tensorboard"], timeout)
        summary = read_summary(run_dir)
    return {
        "solved": summary["solved"],
        "wall_seconds": wall,
        "env_steps": summary["solved_env_steps"],
        "updates_per_1000_steps": 1000 * summary["updates"] / summary["env_steps"],
        "calls_per_1000_steps": 1000 * summary.get("global_model_calls", 0) / summary["env_steps"],
    }


def median_of(runs: list[dict], key: str) -> float:
    return statistics.median(run[key] for run in runs)
