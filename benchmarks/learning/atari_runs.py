"""What an Atari run of atari_learn.py left, read back: its training curve (metrics.csv), its greedy evaluations
(eval.csv) and its verdict (summary.json), each within the run's budget; and the runs of an earlier sitting, from
their run directories (--from-runs) or their results files (--from-results)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from a3c.config.options import as_option

ROW_STEPS = 100_000  # the Atari preset's log interval
SB3_CONTENDER = "SB3 PPO (RL Zoo settings)"  # sb3_atari.py's runs, as the records name them
ZOO_STEPS = 10_000_000  # sb3_atari.py's total_timesteps, the horizon of the Zoo's schedules
# what --from-runs names a setting by, with the value of a key older configs lack
SHAPE = {"core": None, "envs_per_process": None, "t_max": None, "lr": None, "center_frames": False}


def curve(run_dir: Path, minutes: float) -> list[dict]:
    """metrics.csv's rows within the budget: env steps, seconds, return a life, policy entropy."""
    with open(run_dir / "metrics.csv", newline="") as file:
        rows = [
            {
                "env_steps": int(row["env_steps"]),
                "seconds": float(row["wall_seconds"]),
                "return": float(row["mean_return"]),
                "entropy": float(row["entropy"]),
            }
            for row in csv.DictReader(file)
        ]
    rows = [row for row in rows if row["seconds"] <= 60 * minutes]
    # the row the stop writes covers the few episodes since the last one: too few to compare
    return rows[:-1] if len(rows) > 1 and rows[-1]["env_steps"] - rows[-2]["env_steps"] < ROW_STEPS // 2 else rows


def greedy(run_dir: Path, minutes: float) -> list[dict]:
    """eval.csv's rows within the budget (none without an evaluator): minutes from the trainer's start, env
    steps, the mean greedy return, whether the row is a confirmation on new games."""
    path = run_dir / "eval.csv"
    if not path.exists():
        return []
    with open(path, newline="") as file:
        rows = [
            {
                "minutes": float(row["wall_seconds"]) / 60,
                "env_steps": int(row["env_steps"]),
                "return": float(row["mean_return"]),
                "episodes": int(row["episodes"]),
                "confirmation": row["confirmation"] == "1",
            }
            for row in csv.DictReader(file)
        ]
    return [row for row in rows if row["minutes"] <= minutes]


def outcome(run_dir: Path) -> dict:
    """summary.json's verdict: solved (a confirmed target), when, and the confirmation's mean."""
    summary = json.loads((run_dir / "summary.json").read_text()) if (run_dir / "summary.json").exists() else {}
    keys = ("solved", "solved_env_steps", "solved_wall_seconds", "confirmed_return", "confirmed_episodes")
    return {key: summary.get(key) for key in keys}


def at_steps(rows: list[dict], steps: int) -> dict | None:
    return next((row for row in rows if row["env_steps"] >= steps), None)


def measured(run_dir: Path, minutes: float) -> dict:
    """One seed's run: its training curve, its greedy evaluations and its verdict."""
    return {"train": curve(run_dir, minutes), "greedy": greedy(run_dir, minutes), "outcome": outcome(run_dir)}


def sb3_result(run: dict) -> tuple[dict, int]:
    """A run of sb3_atari.py, as measured() reads it, in sb3_solve.py's layout (harness/trainer_runs.py's
    sb3_record): its last evaluation's mean return, the env steps at its end, no solve (it confirms none), and
    its evaluations; with the games of an evaluation."""
    evaluations = [row for row in run["greedy"] if not row["confirmation"]]
    steps = max((row["env_steps"] for row in run["train"] + run["greedy"]), default=None)
    result = {
        "solved": None,
        "env_steps": steps,
        "final_eval": evaluations[-1]["return"] if evaluations else None,
        "curve": [[row["env_steps"], 60 * row["minutes"], row["return"]] for row in evaluations],
    }
    return result, evaluations[-1]["episodes"] if evaluations else 0


def runs_made(run_dirs: list[Path], minutes: float) -> tuple[dict[str, str], dict[str, dict[int, dict]]]:
    """The settings (named by the run dirs, NAME-seedS, described by their configs) and runs made."""
    settings, runs = {}, {}
    for run_dir in run_dirs:
        name, seed = run_dir.name.rsplit("-seed", 1)
        runs.setdefault(name, {})[int(seed)] = measured(run_dir, minutes)
        config = json.loads((run_dir / "config.json").read_text())
        settings[name] = " ".join(as_option(key, config.get(key, default)) for key, default in SHAPE.items())
    return settings, runs


def results_made(files: list[Path]) -> tuple[dict[str, str], dict[str, dict[int, dict]]]:
    """One setting's runs joined from its results files (written with the same options)."""
    results = [json.loads(file.read_text()) for file in files]
    if len({(result["setting"], result["options"], result["minutes"]) for result in results}) > 1:
        raise SystemExit("--from-results: the files differ in setting, options or minutes")
    name, options = results[0]["setting"], results[0]["options"]
    return {name: options}, {name: {int(seed): run for result in results for seed, run in result["runs"].items()}}
