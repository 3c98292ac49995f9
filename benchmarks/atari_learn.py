"""Atari learns on a CPU: a game (Breakout, Pong) with the Atari preset, a fixed wall-clock a seed, its return
against env steps.

Each seed runs `python main.py --env ALE/<GAME>-v5 --num-processes 4 --eval-episodes 0 --seed S` for
--minutes from launch, then a SIGINT (the trainer stops cleanly). No evaluator: its greedy whole games
cost the workers' cores (a greedy policy that never presses FIRE plays all 108,000 frames). The measure
is metrics.csv's mean return of the training episodes that ended since the row before, each one life
(a lost life ends a training episode; Pong has none: a whole game), in rows every 100k env steps:
random play scores about 0.27 a life of Breakout, about -20.7 a game of Pong. Reported per seed: that
return at the first row at or past 100k env steps (still random play), at 400k, and the last full row
within the budget; median and range over seeds. Each `--setting
NAME:OPTIONS` adds trainer options to the preset (none: the preset alone); several run side by side,
interleaved by seed; an option given there wins over the preset's and the 4 processes.
`--from-runs DIR ...` summarises runs already made (named NAME-seedS).
"""

from __future__ import annotations

import argparse
import csv
import json
import shlex
import statistics
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
from common import environment, print_table, run_timed, save_results, trainer_command

RANDOM_PLAY = {"Breakout": "about 0.27 a life", "Pong": "about -20.7 a game"}
PROCESSES = 4  # two a core here: more env steps a second than one a core or four (docs/results)
MARKS = (100_000, 400_000)  # env steps at which every seed's return is compared
ROW_STEPS = 100_000  # the Atari preset's log interval
SHAPE = ("core", "envs_per_process", "t_max", "lr")  # what --from-runs names a setting by


def run_seed(env: str, seed: int, minutes: float, run_dir: Path, options: list[str]) -> None:
    command = trainer_command(run_dir, env=env, num_processes=PROCESSES, eval_episodes=0, seed=seed, print_interval=60)
    run_timed(command + options, timeout=60 * minutes)


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


def at_steps(rows: list[dict], steps: int) -> dict | None:
    return next((row for row in rows if row["env_steps"] >= steps), None)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f} to {max(values):.2f})"


def plot(runs: dict[int, list[dict]], env: str, title: str):
    figure, axes = plt.subplots(1, 2, figsize=(12, 4))
    for seed, rows in runs.items():
        steps = [row["env_steps"] for row in rows]
        axes[0].plot(steps, [row["return"] for row in rows], label=f"seed {seed}")
        axes[1].plot(steps, [row["entropy"] for row in rows], label=f"seed {seed}")
    axes[0].axhline(
        statistics.median(at_steps(rows, MARKS[0])["return"] for rows in runs.values()),
        color="grey",
        linestyle=":",
        label="median at 100k (random play)",
    )
    axes[0].set_ylabel("mean return of the training episodes of each 100k env steps")
    axes[1].set_ylabel("policy entropy (ln of the actions: uniform)")
    for axis in axes:
        axis.set_xlabel("env steps")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    figure.suptitle(f"{env}, {title}, on 2 cores")
    figure.tight_layout()
    return figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="Breakout", choices=sorted(RANDOM_PLAY))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--minutes", type=float, default=10.0, help="wall-clock budget of one run, from launch")
    parser.add_argument(
        "--setting",
        action="append",
        metavar="NAME:OPTIONS",
        help='a name, a colon and trainer options on top of the preset, e.g. "lstm:--core lstm"; '
        "repeat for settings side by side (default: the preset alone, named preset)",
    )
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--out", help="the results file's name, with one setting (default: atari_learn-NAME)")
    parser.add_argument("--runs-dir", type=Path, help="keep the run dirs here (default: a temporary folder)")
    parser.add_argument("--from-runs", type=Path, nargs="+", help="summarise these run dirs instead of training")
    args = parser.parse_args()
    info = environment()
    if args.from_runs:
        settings, runs = runs_made(args.from_runs, args.minutes)
    else:
        settings = dict(setting.split(":", 1) for setting in args.setting or ["preset:"])
    if args.out and len(settings) > 1:
        parser.error("--out names one setting's results")
    if not args.from_runs:
        runs = train(settings, args)
    for name, setting_runs in runs.items():
        report(setting_runs, args.game, name, settings[name], args.minutes, info, args.out)


def runs_made(run_dirs: list[Path], minutes: float) -> tuple[dict[str, str], dict[str, dict[int, list[dict]]]]:
    """The settings (named by the run dirs, NAME-seedS, described by their configs) and curves of runs made."""
    settings, runs = {}, {}
    for run_dir in run_dirs:
        name, seed = run_dir.name.rsplit("-seed", 1)
        runs.setdefault(name, {})[int(seed)] = curve(run_dir, minutes)
        config = json.loads((run_dir / "config.json").read_text())
        settings[name] = " ".join(f"--{key.replace('_', '-')} {config[key]}" for key in SHAPE)
    return settings, runs


def train(settings: dict[str, str], args: argparse.Namespace) -> dict[str, dict[int, list[dict]]]:
    """Each setting's curve by seed, the settings interleaved by seed."""
    runs = {name: {} for name in settings}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            for name, options in settings.items():
                run_dir = (args.runs_dir or Path(tmp)) / f"{name}-seed{seed}"
                run_seed(f"ALE/{args.game}-v5", seed, args.minutes, run_dir, shlex.split(options))
                runs[name][seed] = curve(run_dir, args.minutes)
    return runs


def report(
    runs: dict[int, list[dict]], game: str, name: str, options: str, minutes: float, info: dict, out: str | None
) -> None:
    env = f"ALE/{game}-v5"
    marks = {seed: [at_steps(rows, steps) for steps in MARKS] + [rows[-1]] for seed, rows in runs.items()}
    title = f"the Atari preset ({PROCESSES} processes) {options}".rstrip()  # options given win over the preset
    print(
        f"\n{env}, {name}: {title}, {minutes:g} minutes a run from launch; {info['cores']} cores; mean return "
        f"of the training episodes of each row (random play: {RANDOM_PLAY[game]})"
    )
    print_table(
        ["seed", *(f"at {steps:,}" for steps in MARKS), "at the end", "env steps at the end"],
        [
            [seed, *(f"{row['return']:.2f}" if row else "-" for row in rows), f"{rows[-1]['env_steps']:,}"]
            for seed, rows in marks.items()
        ],
    )
    for n, mark in enumerate([*(f"at {steps:,}" for steps in MARKS), "at the end"]):
        values = [rows[n]["return"] for rows in marks.values() if rows[n]]
        print(
            f"{mark}: median (range) {spread(values)} over {len(values)} seeds"
            if values
            else f"{mark}: no seed got this far"
        )
    save_results(
        out or f"atari_learn-{name}" + ("" if game == "Breakout" else f"-{game.lower()}"),
        {**info, "env": env, "setting": name, "options": options, "minutes": minutes, "runs": runs},
        plot(runs, env, title),
    )


if __name__ == "__main__":
    main()
