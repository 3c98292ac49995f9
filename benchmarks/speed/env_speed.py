"""Env steps a second of the trainer with an env's preset, beside the env alone on the same cores, side by side.

    env_speed.py --env Hopper-v5 --env HalfCheetah-v5 --env Ant-v5      # make bench-env-speed
    env_speed.py --env Hopper-v5 --repeats 1 --max-steps 100000         # a quick look

For each env and repeat, interleaved: the env alone (random actions, one process per core, each stepping one env in
a plain loop: the trainer's workers step theirs in a loop too), then the trainer with the env's preset through the
CLI (8 processes, no evaluator, no early stop), its steady rate read from metrics.csv past the first fifth of the
budget. Reported per env: both rates' medians, their ratio, and where a worker's time goes: stepping the env (a
rollout's steps at the env-alone rate of one core), the network's acting (the rest of the rollout) and the update,
from the run's own clock. Each trainer run writes a record (suite throughput), its rate beside the env
alone's of the same repeat.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

import gymnasium as gym

from harness.launch import (
    environment,
    print_table,
    read_summary,
    run_rows,
    run_timed,
    save_json,
    steady_rate,
    trainer_command,
)
from harness.records import write
from harness.trainer_runs import make_command, on_every_core, speed_record

WARMUP_FRACTION = 0.2  # metrics.csv rows before this share of the budget: start-up, not the steady rate
COMMAND = make_command("bench-env-speed", "ENV_SPEED_ARGS", sys.argv[1:])


def random_steps(env_id: str, seconds: float) -> int:
    """Steps of one env with random actions (sampled ahead, not timed) in `seconds`."""
    env = gym.make(env_id, disable_env_checker=True)
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(1000)]
    env.reset(seed=0)
    steps, deadline = 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        for action in actions:
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()
        steps += len(actions)
    return steps


def env_alone(env_id: str, seconds: float) -> float:
    """The env's ceiling on these cores: total random-action steps/s of one process per core."""
    return on_every_core(random_steps, (env_id,), seconds, "spawn")


def trainer(env_id: str, max_steps: int) -> dict:
    """One run of the preset: its steady rate and the workers' time split, from the run's own files."""
    options = dict(env=env_id, num_processes=8, max_steps=max_steps, eval_episodes=0, target_return="none")
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        wall, _, _ = run_timed(trainer_command(run_dir, **options, tensorboard=False), timeout=900)
        rows = [row for row in run_rows(run_dir) if int(row["env_steps"]) >= WARMUP_FRACTION * max_steps]
        rollout, update = (statistics.median(float(row[name]) for row in rows) for name in ("rollout_ms", "update_ms"))
        config = json.loads((run_dir / "config.json").read_text())
        return {
            "steady": steady_rate(run_dir, WARMUP_FRACTION * max_steps),
            "whole": read_summary(run_dir)["steps_per_second"],
            "process_seconds": round(wall, 2),
            "rollout_ms": rollout,
            "update_ms": update,
            "steps_a_rollout": config["envs_per_process"] * config["t_max"],
            "settings": options,
        }


def time_shares(run: dict, cores: int) -> tuple[float, float, float]:
    """A worker's time a rollout and update: the env's share (its steps at one core's env-alone rate), the
    network's acting (the rest of the rollout) and the update's."""
    total = run["rollout_ms"] + run["update_ms"]
    env_ms = min(1000 * run["steps_a_rollout"] / (run["alone"] / cores), run["rollout_ms"])
    return env_ms / total, (run["rollout_ms"] - env_ms) / total, run["update_ms"] / total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", action="append", required=True, help="an env id; repeat for more")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-steps", type=int, default=300_000, help="each trainer run's budget")
    parser.add_argument("--alone-seconds", type=float, default=10.0)
    args = parser.parse_args()
    info = environment()
    runs = {env_id: [] for env_id in args.env}
    for repeat in range(args.repeats):
        for env_id in args.env:
            alone = env_alone(env_id, args.alone_seconds)
            run = trainer(env_id, args.max_steps)
            runs[env_id].append({"repeat": repeat, "alone": alone, **run})
            fields = dict(suite="throughput", env=env_id, contender="a3c (preset), 8 processes", seed=repeat)
            fields |= dict(command=COMMAND, budget={"env_steps": args.max_steps}, settings=run["settings"])
            write(speed_record(steps_per_second=run["steady"], env_alone=alone, stop_reason="max_steps", **fields))
            print(f"  {env_id} repeat {repeat}: {run['steady']:,.0f} env steps/s, alone {alone:,.0f}", flush=True)
    print(f"\n{info['cores']} cores, load average at start {info['load_average_at_start'][0]:.2f}")
    rows = []
    for env_id, results in runs.items():
        steady, alone = (statistics.median(run[name] for run in results) for name in ("steady", "alone"))
        shares = [statistics.median(part) for part in zip(*(time_shares(run, os.cpu_count()) for run in results))]
        percents = [f"{share:.0%}" for share in shares]
        rows.append([env_id, f"{steady:,.0f}", f"{alone:,.0f}", f"{steady / alone:.2f}x", *percents])
    print_table(["env", "trainer env steps/s", "env alone", "ratio", "env", "acting", "update"], rows)
    save_json("env-speed", {**info, "max_steps": args.max_steps, "runs": runs})


if __name__ == "__main__":
    main()
