"""The classic-control and Box2D suites' old results, as records: one a run, per seed of each contender.

For each env and contender, the newest figures the 0.26 results page (now docs/results/history.md) presented as current:

- zoo-cartpole-b.json (0.8): CartPole's preset and SB3 A2C to a confirmed solve. zoo-cartpole-a.json is the
  same command a few minutes before, on the same seeds and version: its records would share file names.
- solve-confirmed.log (0.7): SB3 PPO's confirmed solves of CartPole; the run's JSON was not kept.
- holdout-mean-confirmation.json (0.7): Acrobot's preset, best.pt replayed on 100 new episodes; holdout.json
  (0.7) for Pendulum's preset, holdout-lunarlander-0.11.json for LunarLander's.

A solve here is a confirmed one (the page's rule), so the runs of version 0.3 (zoo.json, zoo-pendulum.json,
zoo-lunarlander-partial.log: SB3 A2C and PPO on Acrobot, Pendulum and LunarLander, the presets without
replay), whose solves no new episodes confirmed, and `--confirm-episodes 0` stay history.

The rows these replaced (solve.json, solve-replay-preset.json, zoo.json's presets and CartPole SB3 runs,
holdout.json's LunarLander) stay history; sweep-*.json and tune-*.json chose settings and stay out.

    cd benchmarks && ../.venv/bin/python -m harness.legacy.classic
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from harness.records import Record, write

RESULTS = Path(__file__).resolve().parents[2] / "results"
SUITES = {
    "CartPole-v1": "classic-control",
    "Acrobot-v1": "classic-control",
    "Pendulum-v1": "classic-control",
    "LunarLander-v3": "box2d",
}
# zoo.py's seconds a run; holdout.py and the logs' runs had the same, which only zoo.py's files record
TIMEOUTS = {"CartPole-v1": 120.0, "Acrobot-v1": 600.0, "Pendulum-v1": 900.0, "LunarLander-v3": 1800.0}
# The benchmarks ran ours on 8 processes (the default is the machine's 2 cores)
OURS = {"num_processes": 8}
# The files' contender names: the table's name and the options that differ from that contender's defaults
CONTENDERS = {
    "ours (preset)": ("a3c", OURS),
    "confirmed (100 episodes)": ("a3c", OURS),
    "SB3 A2C (Zoo)": ("SB3 A2C (RL Zoo settings)", {}),
    "SB3 PPO (Zoo)": ("SB3 PPO (RL Zoo settings)", {}),
}
# final_eval is one greedy evaluation of 10 episodes on both sides (the trainer's eval_episodes, sb3_solve.py's)
EVAL_EPISODES = 10
# The logs have no header: the date is their page section's, the cores the page's machine, and SB3 the
# version every results file of that day records
LOG_HEADER = {"date": "2026-12-01", "cores": 2, "versions": {"stable-baselines3": "2.9.2"}}
LOG_LINE = re.compile(
    r"^\s*(?:(\S+-v\d+) )?seed (\d+) (.+?): (solved|NOT solved) in ([\d.]+) s, ([\d,]+|unsolved) env steps"
    r"(?:, final eval (\S+))?$",
    re.M,
)


@dataclass(frozen=True)
class Source:
    file: str
    version: str  # a3c's, as the page's section states it: no file records it
    command: str  # as the page's section gives it
    keep: dict  # env: the file's contenders whose figures are still the current ones


HOLDOUT = "make bench-holdout HOLDOUT_ARGS='--env {} --contender \"confirmed (100 episodes)\"{}'"
SOURCES = [
    Source(
        "zoo-cartpole-b.json",
        "0.8.0",
        'make bench-zoo ZOO_ARGS=\'--env CartPole-v1 --only "ours (preset)" --only "SB3 A2C (Zoo)" '
        "--out zoo-cartpole-b'",
        {"CartPole-v1": ["ours (preset)", "SB3 A2C (Zoo)"]},
    ),
    Source(
        "solve-confirmed.log",
        "0.7.0",
        'make bench-solve SOLVE_ARGS="--seeds 10 --baseline /tmp/old"',
        {"CartPole-v1": ["SB3 PPO (Zoo)"]},
    ),
    Source(
        "holdout-mean-confirmation.json", "0.7.0", "make bench-holdout", {"Acrobot-v1": ["confirmed (100 episodes)"]}
    ),
    Source(
        "holdout.json",
        "0.7.0",
        HOLDOUT.format("Pendulum-v1 --env LunarLander-v3", ""),
        {"Pendulum-v1": ["confirmed (100 episodes)"]},
    ),
    Source(
        "holdout-lunarlander-0.11.json",
        "0.11.0",
        HOLDOUT.format("LunarLander-v3", " --out holdout-lunarlander-0.11"),
        {"LunarLander-v3": ["confirmed (100 episodes)"]},
    ),
]


def from_log(text: str, env: str) -> dict:
    """A log of zoo.py's or solve.py's per-run lines, in zoo.py's JSON layout (no curves there); `env` where a
    line names none (solve.py's)."""
    runs: dict = {}
    for line_env, seed, name, solved, seconds, steps, final_eval in LOG_LINE.findall(text):
        run = {"seed": int(seed), "solved": solved == "solved", "wall_seconds": float(seconds), "curve": []}
        run["env_steps"] = int(steps.replace(",", "")) if steps != "unsolved" else None
        run["final_eval"] = float(final_eval) if final_eval else None
        runs.setdefault(line_env or env, {}).setdefault(name, []).append(run)
    cores = re.search(r"(\d+) cores", text)
    return {**LOG_HEADER, "cores": int(cores[1]) if cores else LOG_HEADER["cores"], "runs": runs}


def from_holdout(data: dict) -> dict:
    """holdout.py's layout in zoo.py's: final_eval is best.pt's mean over the held-out episodes."""
    runs = {
        env: {
            name: [
                {**run, "env_steps": run["solved_env_steps"], "final_eval": run["held_out"], "curve": []}
                for run in by_seed
            ]
            for name, by_seed in by_contender.items()
        }
        for env, by_contender in data["results"].items()
    }
    return {**data, "runs": runs}


def load(source: Source) -> dict:
    """The file in zoo.py's layout, with `episodes`: how many episodes each final_eval is a mean over."""
    text = (RESULTS / source.file).read_text()
    if source.file.endswith(".log"):
        return {**from_log(text, next(iter(source.keep))), "episodes": EVAL_EPISODES}
    data = json.loads(text)
    return from_holdout(data) if "results" in data else {**data, "episodes": EVAL_EPISODES}


def final(run: dict, episodes: int) -> dict:
    """Solved or not, the env steps to the solve (none for an unsolved run: the files have no count at its end),
    the minutes from launch to exit (each run exits at its solve) and the final greedy return."""
    figures = {"solved": run["solved"], "minutes": round(run["wall_seconds"] / 60, 4)}
    if run["env_steps"] is not None:
        figures["env_steps"] = run["env_steps"]
    if run["final_eval"] is not None:
        figures.update({"return": run["final_eval"], "return_episodes": episodes})
    return figures


def record(source: Source, data: dict, env: str, name: str, run: dict) -> Record:
    contender, settings = CONTENDERS[name]  # a name not listed is a layout this converter does not know: fail
    sb3 = name.startswith("SB3")
    return Record(
        suite=SUITES[env],
        env=env,
        contender=contender,
        seed=run["seed"],
        version=f"stable-baselines3 {data['versions']['stable-baselines3']}" if sb3 else f"a3c {source.version}",
        command=source.command,
        date=data["date"],
        machine={"cores": data["cores"], "cpu": data.get("cpu", {})},
        budget={"minutes": data.get("suites", {}).get(env, {}).get("timeout", TIMEOUTS[env]) / 60},
        final=final(run, data["episodes"]),
        # zoo-cartpole-b's a3c curves end on the 100-episode confirmation (a second point at the same env steps)
        curve=[list(point) for point in run["curve"]],
        settings=dict(settings),
        source=source.file,
    )


def convert() -> list[Record]:
    records = []
    for source in SOURCES:
        data = load(source)
        for env, names in source.keep.items():
            records += [record(source, data, env, name, run) for name in names for run in data["runs"][env][name]]
    names = Counter(each.file_name() for each in records)
    clashes = [name for name, count in names.items() if count > 1]
    if clashes:  # two sources of one env, contender, version and seed: one would overwrite the other
        raise ValueError(f"records sharing a file: {clashes}")
    return records


if __name__ == "__main__":
    written = Counter(write(each).parent.name for each in convert())
    for suite, count in written.items():
        print(f"{suite}: wrote {count} records")
