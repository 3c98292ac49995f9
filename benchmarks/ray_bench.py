"""The Ray backend against the local one on CartPole-v1: parameter-server round trips and env steps per second.

One local Ray instance, started as the trainer starts its own, serves every measurement:
- round trips/s of the parameter server with no rollout work: pusher actors send a
  fixed gradient of the real model's size in a loop (1 and 2 pushers);
- round trips/s with rollout work: the backend's own RolloutWorker actors (2) updating
  against the parameter server, counted by draining its reports;
- env steps/s and updates/s of whole training runs through the CLI, --backend local
  and --backend ray (joined to the instance), 2 workers x 8 envs, no evaluator, each
  stopped by SIGINT after --seconds; steady rate from metrics.csv after a warm-up.
Each figure is the median of --repeats.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import ray

from common import DEFAULTS_WITHOUT_PRESET, REPO, environment, print_table, read_summary, run_timed, save_results, trainer_command

sys.path.insert(0, str(REPO))  # the a3c package, for the measurements that drive its actors directly
from a3c.backends.ray import CALL_TIMEOUT_SECONDS, ParameterServer, RolloutWorker, connect  # noqa: E402
from a3c.config import Config  # noqa: E402
from a3c.envs import env_spec  # noqa: E402
from a3c.learner import RolloutReport  # noqa: E402
from a3c.processes import shared_model  # noqa: E402

ENV = "CartPole-v1"
WORKERS, ENVS = 2, 8
WARMUP_SECONDS = 2.0


class Pusher:
    """Pushes one fixed gradient to the parameter server as fast as the answers come: no rollout work."""

    def __init__(self, size: int):
        self.grad = np.full(size, 1e-3, dtype=np.float32)

    def push_for(self, server, rank: int, seconds: float) -> int:
        """Push the same gradient in a loop for `seconds`; returns the round trips made."""
        report = RolloutReport(0, [], [], 0.0, 0.0, 0.0, 1.0)  # no env steps: the lr never decays
        ray.get(server.pull.remote(rank), timeout=CALL_TIMEOUT_SECONDS)
        count, deadline = 0, time.monotonic() + seconds
        while time.monotonic() < deadline:
            ray.get(server.push.remote(rank, self.grad, report), timeout=CALL_TIMEOUT_SECONDS)
            count += 1
        return count


def new_server(config: Config):
    _, optimizer = shared_model(config, env_spec(config.env))
    return ray.remote(num_cpus=0)(ParameterServer).remote(config, optimizer.params[0].numpy(),
                                                         optimizer.state_dict(), 0)


def round_trips_without_rollouts(config: Config, pushers: int, seconds: float) -> float:
    server = new_server(config)
    size = len(ray.get(server.pull.remote(0), timeout=CALL_TIMEOUT_SECONDS)[0])
    actors = [ray.remote(num_cpus=1)(Pusher).remote(size) for _ in range(pushers)]
    counts = ray.get([actor.push_for.remote(server, rank, seconds) for rank, actor in enumerate(actors)],
                     timeout=seconds + 60)
    for actor in [*actors, server]:
        ray.kill(actor)
    return sum(counts) / seconds


def round_trips_with_rollouts(config: Config, seconds: float) -> dict:
    server = new_server(config)
    workers = [ray.remote(num_cpus=1)(RolloutWorker).remote(config, rank, 0) for rank in range(WORKERS)]
    runs = [worker.run.remote(server) for worker in workers]
    deadline = time.monotonic() + CALL_TIMEOUT_SECONDS
    while not ray.get(server.drain.remote(), timeout=CALL_TIMEOUT_SECONDS)[0] and time.monotonic() < deadline:
        time.sleep(0.1)  # actors start in seconds: new processes that import torch
    time.sleep(WARMUP_SECONDS)
    ray.get(server.drain.remote(), timeout=CALL_TIMEOUT_SECONDS)
    began = time.monotonic()
    time.sleep(seconds)
    updates, _ = ray.get(server.drain.remote(), timeout=CALL_TIMEOUT_SECONDS)
    elapsed = time.monotonic() - began
    ray.get(server.request_stop.remote(), timeout=CALL_TIMEOUT_SECONDS)
    ray.wait(runs, num_returns=len(runs), timeout=CALL_TIMEOUT_SECONDS)
    for actor in [*workers, server]:
        ray.kill(actor)
    return {"round_trips_per_second": len(updates) / elapsed,
            "env_steps_per_second": sum(update.report.env_steps for update in updates) / elapsed}


def steady_rates(run_dir: Path) -> dict:
    """env steps/s and updates/s between the first row after the warm-up and the last row before the stop."""
    with open(run_dir / "metrics.csv") as file:
        rows = [(float(r["wall_seconds"]), int(r["env_steps"]), int(r["updates"])) for r in csv.DictReader(file)]
    window = [row for row in rows[:-1] if row[0] >= rows[0][0] + WARMUP_SECONDS]
    (wall0, steps0, updates0), (wall1, steps1, updates1) = window[0], window[-1]
    return {"env_steps_per_second": (steps1 - steps0) / (wall1 - wall0),
            "updates_per_second": (updates1 - updates0) / (wall1 - wall0)}


def train_for(seconds: float, **backend) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        options = dict(DEFAULTS_WITHOUT_PRESET, envs_per_process=ENVS)  # the pipeline, not CartPole's preset
        command = trainer_command(run_dir, env=ENV, num_processes=WORKERS, max_steps=10**9, target_return="none",
                                  eval_episodes=0, log_interval=2000, print_interval=3600, **options,
                                  **backend) + ["--no-tensorboard"]
        run_timed(command, timeout=seconds)  # SIGINT at the timeout: a clean stop that writes the summary
        return {**steady_rates(run_dir), "stop_reason": read_summary(run_dir)["stop_reason"]}


def median_of(runs: list[dict], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def plot(results: dict):
    figure, (trips, steps) = plt.subplots(1, 2, figsize=(10, 4))
    trips.bar(["PS, 1 pusher\nno rollouts", "PS, 2 pushers\nno rollouts", "PS, 2 workers\nrollouts",
               "local backend\n2 workers"],
              [results["ps_no_rollouts_1"], results["ps_no_rollouts_2"], results["ps_with_rollouts"],
               results["local_updates_per_second"]], color=["C0", "C0", "C1", "C2"])
    trips.set_ylabel("gradient updates / s (median)")
    steps.bar(["--backend local", "--backend ray"],
              [results["local_env_steps_per_second"], results["ray_env_steps_per_second"]], color=["C2", "C1"])
    steps.set_ylabel("env steps / s, steady (median)")
    figure.suptitle(f"Ray backend vs local, {ENV}, {WORKERS} workers x {ENVS} envs, {os.cpu_count()} cores")
    figure.tight_layout()
    return figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=15.0, help="length of one training run, start-up included")
    args = parser.parse_args()
    info = environment()
    config = Config(env=ENV, num_processes=WORKERS, envs_per_process=ENVS, max_steps=10**9, backend="ray")
    cluster = connect(config)
    try:
        ps_1 = [round_trips_without_rollouts(config, 1, 3.0) for _ in range(args.repeats)]
        ps_2 = [round_trips_without_rollouts(config, 2, 3.0) for _ in range(args.repeats)]
        ps_rollouts = [round_trips_with_rollouts(config, 4.0) for _ in range(args.repeats)]
        local, ray_runs = [], []
        for _ in range(args.repeats):  # interleaved, so machine noise hits both alike
            local.append(train_for(args.seconds))
            ray_runs.append(train_for(args.seconds, backend="ray", ray_address=cluster.address))
    finally:
        cluster.disconnect()

    results = {
        "ps_no_rollouts_1": statistics.median(ps_1), "ps_no_rollouts_2": statistics.median(ps_2),
        "ps_with_rollouts": median_of(ps_rollouts, "round_trips_per_second"),
        "ps_with_rollouts_env_steps_per_second": median_of(ps_rollouts, "env_steps_per_second"),
        "local_env_steps_per_second": median_of(local, "env_steps_per_second"),
        "local_updates_per_second": median_of(local, "updates_per_second"),
        "ray_env_steps_per_second": median_of(ray_runs, "env_steps_per_second"),
        "ray_updates_per_second": median_of(ray_runs, "updates_per_second"),
    }
    # A worker spends WORKERS / updates-per-second on each update; the difference is what the transport adds.
    results["overhead_ms_per_gradient"] = 1000 * WORKERS * (1 / results["ray_updates_per_second"]
                                                           - 1 / results["local_updates_per_second"])
    results["round_trip_ms_no_rollouts"] = 1000 / results["ps_no_rollouts_1"]

    print(f"\n{ENV}, {WORKERS} workers x {ENVS} envs, median of {args.repeats}; {info['cores']} cores, "
          f"load average at start {info['load_average_at_start'][0]:.2f}")
    print_table(["measurement", "updates/s", "env steps/s"], [
        ["parameter server, 1 pusher, no rollouts", f"{results['ps_no_rollouts_1']:,.0f}", ""],
        ["parameter server, 2 pushers, no rollouts", f"{results['ps_no_rollouts_2']:,.0f}", ""],
        [f"parameter server, {WORKERS} RolloutWorkers", f"{results['ps_with_rollouts']:,.0f}",
         f"{results['ps_with_rollouts_env_steps_per_second']:,.0f}"],
        ["trainer, --backend ray", f"{results['ray_updates_per_second']:,.0f}",
         f"{results['ray_env_steps_per_second']:,.0f}"],
        ["trainer, --backend local", f"{results['local_updates_per_second']:,.0f}",
         f"{results['local_env_steps_per_second']:,.0f}"],
    ])
    print(f"\nround trip with no rollout work: {results['round_trip_ms_no_rollouts']:.2f} ms; "
          f"transport overhead per gradient (ray - local, per worker): {results['overhead_ms_per_gradient']:.2f} ms")
    data = {**info, "env": ENV, "workers": WORKERS, "envs_per_process": ENVS, "repeats": args.repeats,
            "seconds": args.seconds, "ray_version": ray.__version__, **results,
            "runs": {"ps_no_rollouts_1": ps_1, "ps_no_rollouts_2": ps_2, "ps_with_rollouts": ps_rollouts,
                     "local": local, "ray": ray_runs}}
    save_results("ray", data, plot(results))


if __name__ == "__main__":
    main()
