"""The record (records.py) of one run of the trainer, from its run directory and the benchmark's own clock: what
every benchmark that launches `python main.py` writes, so that `make report` finds its runs."""

from __future__ import annotations

import csv
import datetime
import json
import multiprocessing
import os
import re
import shlex
import subprocess
import time
from dataclasses import replace
from importlib import metadata
from pathlib import Path

import gymnasium as gym
import numpy as np

from a3c.config.options import as_option, option_value

from harness.records import Record

REPO = Path(__file__).resolve().parent.parent.parent
CARTPOLE = "CartPole-v1"  # the env of the throughput suite's runs and of env_ceiling


def cpu_features() -> dict:
    """The CPU's model and the vector features that change a run's speed from one machine to the next."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "")
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), [])
    wanted = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")
    return {"model": model, "flags": [flag for flag in wanted if flag in flags]}


def machine() -> dict:
    return {"cores": os.cpu_count(), "cpu": cpu_features()}


def checkout(repo: Path = REPO) -> tuple[str, str]:
    """The version ("a3c 0.26.0") and commit of the checkout whose main.py ran (another one for a baseline)."""
    text = (repo / "a3c" / "_version.py").read_text()
    version = re.search(r'__version__ = "([^"]+)"', text).group(1)
    found = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True)
    return f"a3c {version}", found.stdout.strip() if found.returncode == 0 else ""


def curve(run_dir: Path) -> list[list]:
    """The greedy evaluations of eval.csv (the confirmations aside): env steps, the trainer's seconds, mean
    return."""
    path = run_dir / "eval.csv"
    if not path.exists():
        return []
    with path.open() as file:
        return [
            [int(row["env_steps"]), round(float(row["wall_seconds"]), 2), round(float(row["mean_return"]), 3)]
            for row in csv.DictReader(file)
            if row.get("confirmation", "0") in ("0", "")
        ]


def final(summary: dict, launch_seconds: float) -> dict:
    """The figures a learning run ends with: solved where it had a target, the env steps to the solve or the end,
    minutes from launch to exit (a solve ends the run), and the greedy return that was confirmed, or the last."""
    figures = {
        "env_steps": summary["solved_env_steps"] or summary["env_steps"],
        "minutes": round(launch_seconds / 60, 3),
    }
    if summary.get("target_return") is not None:
        figures["solved"] = bool(summary["solved"])
    if summary.get("confirmed_return") is not None:
        figures["return"], figures["return_episodes"] = summary["confirmed_return"], summary["confirmed_episodes"]
    elif summary.get("last_eval_return") is not None:
        figures["return"] = summary["last_eval_return"]
    return figures


def record(*, repo: Path = REPO, settings: dict | None = None, version: str = "", **fields) -> Record:
    """A record of a run of the checkout at `repo` (or of another trainer, its `version` given), made now on this
    machine: `fields` are the run's own."""
    version, commit = (version, "") if version else checkout(repo)
    date = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    return Record(version=version, commit=commit, date=date, machine=machine(), settings=settings or {}, **fields)


def learning_record(
    run_dir: Path, *, launch_seconds: float, replayed: tuple[float, int] | None = None, **fields
) -> Record:
    """The record of the learning run in `run_dir`, launched `launch_seconds` before it exited; `fields`: its
    suite, contender, seed, command, budget (and settings, repo). `replayed`: the mean greedy return of a
    checkpoint of the run played after it on new episodes, and their count: the run's final return (a mean of None:
    none was played)."""
    summary = json.loads((run_dir / "summary.json").read_text())
    made = record(
        env=summary["env"],
        final=final(summary, launch_seconds),
        curve=curve(run_dir),
        stop_reason=summary["stop_reason"],
        **fields,
    )
    if replayed is None or replayed[0] is None:
        return made
    return replace(made, final={**made.final, "return": replayed[0], "return_episodes": replayed[1]})


def budget(run_dir: Path, minutes: float) -> dict:
    """A run's budget: the env steps its config.json gives it and the minutes the benchmark gave it."""
    config = json.loads((run_dir / "config.json").read_text())
    return {"env_steps": config["max_steps"], "minutes": minutes}


def options_of(arguments: list[str]) -> dict:
    """The trainer's options on a command line, by field (a later one wins): a number or text as written, a flag
    True or False (--no-x)."""
    found, index = {}, 0
    while index < len(arguments):
        name = arguments[index].removeprefix("--").replace("-", "_")
        if index + 1 < len(arguments) and not arguments[index + 1].startswith("--"):
            found[name], index = number_or_text(arguments[index + 1]), index + 2
        else:
            found[name.removeprefix("no_")], index = not name.startswith("no_"), index + 1
    return found


def number_or_text(text: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def written(value) -> str:
    """A value as the command line writes it, a number alike however it was spelt (5e-4 as 0.0005)."""
    return option_value(number_or_text(option_value(value)))


def variant(arguments: list[str], preset: dict) -> tuple[str, dict]:
    """The table's name of the trainer run with these options on top of the env's preset, and those of them that
    differ from the preset's: "a3c" where none do, else "a3c, --core lstm"."""
    given = options_of(arguments)
    differ = {
        name: value for name, value in given.items() if name not in preset or written(preset[name]) != written(value)
    }
    return "a3c" + "".join(f", {as_option(name, value)}" for name, value in differ.items()), differ


def checkout_contender(repo: Path, contender: str = "a3c") -> str:
    """The contender a run of the checkout at `repo` is (a baseline beside this one): `contender` at that
    checkout's version, or where it has this one's version (another commit of it), at its commit, so that
    neither run's record replaces the other's."""
    if repo.resolve() == REPO:
        return contender
    version, commit = checkout(repo)
    return contender if version != checkout()[0] else f"{contender}, commit {commit[:8]}"


def sb3_record(result: dict, *, launch_seconds: float, episodes: int, **fields) -> Record:
    """The record of a Stable-Baselines3 run, from sb3_solve.py's JSON line or the like (curve points: env steps,
    seconds, mean return over `episodes` greedy episodes)."""
    figures = {"minutes": round(launch_seconds / 60, 3)}
    if result.get("solved") is not None:  # None: a run with no target, or none that it could confirm
        figures["solved"] = bool(result["solved"])
    if result.get("env_steps") is not None:
        figures["env_steps"] = result["env_steps"]
    if result.get("final_eval") is not None and result["final_eval"] == result["final_eval"]:  # not NaN
        figures["return"], figures["return_episodes"] = result["final_eval"], episodes
    curve = [[int(steps), round(float(seconds), 2), round(float(mean), 3)] for steps, seconds, mean in result["curve"]]
    return record(
        version=f"stable-baselines3 {metadata.version('stable-baselines3')}", final=figures, curve=curve, **fields
    )


def speed_record(
    *, steps_per_second: float, env_alone: float, ratio: float | None = None, stop_reason: str = "", **fields
) -> Record:
    """The record of a timed run: its steady env steps a second, beside the env alone on the same cores and, where
    it was measured side by side with the suite's reference, their ratio."""
    figures = {"steps_per_second": round(steps_per_second, 1), "env_alone_steps_per_second": round(env_alone, 1)}
    if ratio is not None:
        figures["ratio"] = round(ratio, 4)
    return record(final=figures, stop_reason=stop_reason, **fields)


def random_steps(num_envs: int, seconds: float) -> int:
    """Steps of CartPole with random actions in `seconds`: one env in a plain loop, or the
    numpy-vectorised CartPole (what a worker with several envs uses) for num_envs > 1."""
    rng = np.random.default_rng(0)
    steps, deadline = 0, time.monotonic() + seconds
    if num_envs == 1:
        env = gym.make(CARTPOLE, disable_env_checker=True)
        env.reset(seed=0)
        while time.monotonic() < deadline:
            for action in rng.integers(0, 2, 1000):
                _, _, terminated, truncated, _ = env.step(int(action))
                if terminated or truncated:
                    env.reset()
            steps += 1000
    else:
        env = gym.make_vec(CARTPOLE, num_envs=num_envs, vectorization_mode="vector_entry_point")
        env.reset(seed=0)
        while time.monotonic() < deadline:
            for _ in range(100):
                env.step(rng.integers(0, 2, num_envs))
            steps += 100 * num_envs
    env.close()
    return steps


def on_every_core(count_steps, arguments: tuple, seconds: float, start_method: str | None = None) -> float:
    """Env steps a second of `count_steps(*arguments, seconds)` run in one process per core at once, summed: an
    env's ceiling on these cores."""
    cores = os.cpu_count()
    with multiprocessing.get_context(start_method).Pool(cores) as pool:
        return sum(pool.starmap(count_steps, [(*arguments, seconds)] * cores)) / seconds


def env_ceiling(num_envs: int, seconds: float) -> float:
    """CartPole's env alone on these cores, a speed record's env_alone: total random-action steps/s of one process
    per core."""
    return on_every_core(random_steps, (num_envs,), seconds)


def make_command(target: str, variable: str, arguments: list[str]) -> str:
    """The make command that runs a benchmark again with `arguments`, each quoted for the shell as it was given:
    `make bench-x X_ARGS="--only 'a b'"`."""
    return f'make {target} {variable}="{shlex.join(arguments)}"' if arguments else f"make {target}"
