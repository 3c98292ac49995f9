"""The exploration suite's old results, as records: one a run, per seed of each contender.

Only `results/explore-defaults.json` is converted: "Defaults that explore" (docs/design/choices.md)
(version 0.24.0, when the novelty bonus and normalised observations became the defaults on flat observations)
presents it as the current figures for DeepSea 20, DeepSea 30 and MountainCar-v0, with the contrasts (no
NoisyNet heads, no novelty bonus, neither) and SB3 A2C and PPO at the RL Zoo's settings, all in one invocation.
The earlier explore-*.json files (NoisyNet passes, the KL-held draws, novelty at 0.23, the learning-rate study
and its SB3 runs) chose those defaults and stay history.

    cd benchmarks && ../.venv/bin/python -m harness.legacy.exploration
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from harness.records import Record, write

RESULTS = Path(__file__).resolve().parents[2] / "results"
SOURCE = "explore-defaults.json"
SUITE = "exploration"
# The file records no a3c version: the page's section states it
A3C_VERSION = "a3c 0.24.0"
COMMAND = (
    'make bench-explore EXPLORE_ARGS="--env a3c/DeepSea20-v0 --env a3c/DeepSea30-v0 --env MountainCar-v0 '
    "--seeds 5 --only defaults --only 'no noise' --only 'no novelty' --only 'no novelty, no noise' "
    "--only 'SB3 A2C (Zoo)' --only 'SB3 PPO (Zoo)' --timeout 300 --out explore-defaults\""
)
# explore.py ran ours on 8 processes (the default is the machine's 2 cores); the rest is the contender's own
OURS = {"num_processes": 8}
# explore.py's contender names: the table's name and the options that differ from that contender's defaults
CONTENDERS = {
    "defaults": ("a3c", OURS),
    "no noise": ("a3c, no noise", {**OURS, "noise": False}),
    "no novelty": ("a3c, no novelty bonus", {**OURS, "novelty_coef": 0.0}),
    "no novelty, no noise": ("a3c, no novelty bonus, no noise", {**OURS, "novelty_coef": 0.0, "noise": False}),
    "SB3 A2C (Zoo)": ("SB3 A2C (RL Zoo settings)", {}),
    "SB3 PPO (Zoo)": ("SB3 PPO (RL Zoo settings)", {}),
}
# Both sides' final_eval is one greedy evaluation of 10 episodes (the trainer's eval_episodes, sb3_solve.py's)
EVAL_EPISODES = 10
# The trainer's default --max-steps and the Zoo's n_timesteps for MountainCar are both 1M
STEP_BUDGET = 1_000_000


def version(name: str, data: dict) -> str:
    if name.startswith("SB3"):
        return f"stable-baselines3 {data['versions']['stable-baselines3']}"
    return A3C_VERSION


def final(run: dict) -> dict:
    """Solved or not, the env steps to the solve (the file has no count at the end of an unsolved run, so none),
    the minutes from launch to exit (the process exits at the confirmed solve) and the last greedy return."""
    figures = {"solved": run["solved"], "minutes": round(run["wall_seconds"] / 60, 4)}
    if run["solved"] and run["env_steps"] is not None:
        figures["env_steps"] = run["env_steps"]
    if run["final_eval"] is not None and math.isfinite(run["final_eval"]):  # NaN: an SB3 run killed outright
        figures["return"] = run["final_eval"]
        figures["return_episodes"] = EVAL_EPISODES
    return figures


def record(data: dict, env: str, name: str, run: dict) -> Record:
    contender, settings = CONTENDERS[name]  # a name not listed is a layout this converter does not know: fail
    return Record(
        suite=SUITE,
        env=env,
        contender=contender,
        seed=run["seed"],
        version=version(name, data),
        command=COMMAND,
        date=data["date"],
        machine={"cores": data["cores"], "cpu": data.get("cpu", {})},
        budget={"env_steps": STEP_BUDGET, "minutes": data["suites"][env]["timeout"] / 60},
        final=final(run),
        # ours' curves hold the 100-episode confirmations too (a second point at the same env steps)
        curve=[list(point) for point in run["curve"]],
        settings=dict(settings),
        source=SOURCE,
    )


def convert() -> list[Record]:
    data = json.loads((RESULTS / SOURCE).read_text())
    return [
        record(data, env, name, run)
        for env, by_contender in data["runs"].items()
        for name, runs in by_contender.items()
        for run in runs
    ]


if __name__ == "__main__":
    paths = [write(each) for each in convert()]
    print(f"wrote {len(paths)} records to {paths[0].parent}")
