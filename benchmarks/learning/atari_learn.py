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
interleaved by seed; an option given there wins over the preset's and the 4 processes: `--setting
"NAME:--eval-episodes 4"` keeps the preset's evaluator, and its greedy games (eval.csv: the mean of each
evaluation, against minutes from the trainer's start) are reported beside, with the target's confirmation
where the game has one (Pong's +18: the run stops once the preset's
confirmation games confirm it). The setting named
`sb3-ppo-zoo` is Stable-Baselines3 PPO with the RL Zoo's Atari settings instead (sb3_atari.py, its
evaluation at the preset's cadence and games), the anchor the preset is held against.
`--from-runs DIR ...` summarises runs already made (named NAME-seedS); `--from-results FILE ...` joins
results files of one setting (one seed a file: an hour each need not run in one sitting). Each run trained here
writes its record (harness/records.py, suite atari) as it ends: ours as "a3c" with the options that differ from the
preset's (the evaluator's off unless a setting keeps it: "a3c, --eval-episodes 0"), SB3's as "SB3 PPO (RL Zoo
settings)".
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

import matplotlib.pyplot as plt

from a3c.config.presets import ATARI_TARGETS, preset_for

from harness.launch import PYTHON, REPO, environment, print_table, run_timed, save_results, trainer_command
from harness.records import Record, write
from harness.spreads import median_range
from harness.trainer_runs import budget, learning_record, make_command, sb3_record, variant
from learning.atari_runs import SB3_CONTENDER, ZOO_STEPS, at_steps, measured, results_made, runs_made, sb3_result

RANDOM_PLAY = {"Breakout": "about 0.27 a life", "Pong": "about -20.7 a game"}
PROCESSES = 4  # two a core here: more env steps a second than one a core or four (docs/results)
MARKS = (100_000, 400_000)  # env steps at which every seed's return is compared
GREEDY_MINUTES = (15, 30, 45, 60)  # where every seed's greedy return is compared
SB3_SETTING = "sb3-ppo-zoo"
SB3_TITLE = "SB3 PPO, the RL Zoo's Atari settings"
COMMAND = make_command("bench-atari-learn", "ATARI_LEARN_ARGS", sys.argv[1:])
ROW_MINUTES_SLACK = 1.5  # the last row of metrics.csv comes up to a row's time (about a minute) before the end


def run_seed(game: str, seed: int, minutes: float, run_dir: Path, setting: tuple[str, str]) -> float:
    """One run; the seconds from its launch to its exit."""
    name, options = setting
    if name == SB3_SETTING:  # it stops itself at the budget; the grace lets an evaluation under way end
        command = [PYTHON, str(REPO / "benchmarks" / "learning" / "sb3_atari.py"), "--game", game, "--seed", str(seed)]
        return run_timed(command + ["--minutes", str(minutes), "--run-dir", str(run_dir)], 60 * minutes + 300)[0]
    command = trainer_command(
        run_dir, env=f"ALE/{game}-v5", num_processes=PROCESSES, eval_episodes=0, seed=seed, print_interval=60
    )
    return run_timed(command + shlex.split(options), timeout=60 * minutes)[0]


def run_record(
    run_dir: Path, wall: float, run: dict, game: str, seed: int, minutes: float, setting: tuple[str, str]
) -> Record:
    """The record of a run of `setting` (name, options) that lasted `wall` seconds; `run`: as measured() reads it."""
    name, options = setting
    fields = dict(suite="atari", seed=seed, command=COMMAND, launch_seconds=wall)
    if name == SB3_SETTING:
        budget_given = {"env_steps": ZOO_STEPS, "minutes": minutes}
        result, episodes = sb3_result(run)
        return sb3_record(
            result, env=f"ALE/{game}-v5", contender=SB3_CONTENDER, budget=budget_given, episodes=episodes, **fields
        )
    contender, settings = variant(["--eval-episodes", "0", *shlex.split(options)], preset_for(f"ALE/{game}-v5"))
    settings = {"num_processes": PROCESSES, **settings}
    return learning_record(run_dir, contender=contender, settings=settings, budget=budget(run_dir, minutes), **fields)


def plot(runs: dict[int, dict], env: str, title: str):
    with_greedy = any(run["greedy"] for run in runs.values())
    figure, axes = plt.subplots(1, 3 if with_greedy else 2, figsize=(18 if with_greedy else 12, 4))
    for seed, run in runs.items():
        steps = [row["env_steps"] for row in run["train"]]
        axes[0].plot(steps, [row["return"] for row in run["train"]], label=f"seed {seed}")
        axes[1].plot(steps, [row["entropy"] for row in run["train"]], label=f"seed {seed}")
        if with_greedy:
            evaluations = [row for row in run["greedy"] if not row["confirmation"]]
            axes[2].plot(
                [row["minutes"] for row in evaluations],
                [row["return"] for row in evaluations],
                marker="o",
                label=f"seed {seed}",
            )
    axes[0].axhline(
        statistics.median(at_steps(run["train"], MARKS[0])["return"] for run in runs.values()),
        color="grey",
        linestyle=":",
        label="median at 100k (random play)",
    )
    axes[0].set_ylabel("mean return of the training episodes of each 100k env steps")
    axes[1].set_ylabel("policy entropy (ln of the actions: uniform)")
    for axis in axes[:2]:
        axis.set_xlabel("env steps")
    if with_greedy:
        axes[2].set_xlabel("minutes from the trainer's start")
        axes[2].set_ylabel("greedy return, mean of each evaluation's games")
    for axis in axes:
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
    sources = parser.add_mutually_exclusive_group()
    sources.add_argument("--from-runs", type=Path, nargs="+", help="summarise these run dirs instead of training")
    sources.add_argument("--from-results", type=Path, nargs="+", help="join these results files of one setting")
    args = parser.parse_args()
    info = environment()
    if args.from_runs:
        settings, runs = runs_made(args.from_runs, args.minutes)
    elif args.from_results:
        settings, runs = results_made(args.from_results)
    else:
        settings = dict(setting.split(":", 1) for setting in args.setting or ["preset:"])
    if args.out and len(settings) > 1:
        parser.error("--out names one setting's results")
    if not (args.from_runs or args.from_results):
        runs = train(settings, args)
    for name, setting_runs in runs.items():
        report(setting_runs, args.game, name, settings[name], args.minutes, info, args.out)


def train(settings: dict[str, str], args: argparse.Namespace) -> dict[str, dict[int, dict]]:
    """Each setting's runs by seed, the settings interleaved by seed."""
    runs = {name: {} for name in settings}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            for name, options in settings.items():
                run_dir = (args.runs_dir or Path(tmp)) / f"{name}-seed{seed}"
                wall = run_seed(args.game, seed, args.minutes, run_dir, (name, options))
                runs[name][seed] = measured(run_dir, args.minutes)
                write(run_record(run_dir, wall, runs[name][seed], args.game, seed, args.minutes, (name, options)))
    return runs


def report_training(runs: dict[int, dict]) -> None:
    marks = {
        seed: [at_steps(run["train"], steps) for steps in MARKS] + [run["train"][-1]] for seed, run in runs.items()
    }
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
            f"{mark}: median (range) {median_range(values, '.2f', ' to ')} over {len(values)} seeds"
            if values
            else f"{mark}: no seed got this far"
        )


def first_minute(evaluations: list[dict], at_least: float) -> str:
    row = next((row for row in evaluations if row["return"] >= at_least), None)
    return "-" if row is None else f"{row['minutes']:.0f} ({row['env_steps'] / 1e6:.2f}M)"


def report_greedy(runs: dict[int, dict], target: float | None) -> None:
    """Each seed's greedy return at the marks (the last evaluation by then), its best, when it first passed 0
    and the target, and whether new games confirmed the target."""
    print("\ngreedy evaluations (mean of each evaluation's games; minutes from the trainer's start):")
    rows = []
    for seed, run in runs.items():
        evaluations = [row for row in run["greedy"] if not row["confirmation"]]
        lasted = run["train"][-1]["seconds"] / 60 + ROW_MINUTES_SLACK  # a mark past the run's end shows "-"
        by_mark = [
            [row for row in evaluations if row["minutes"] <= mark] if mark <= lasted else [] for mark in GREEDY_MINUTES
        ]
        verdict = run["outcome"]
        rows.append(
            [
                seed,
                *(f"{before[-1]['return']:.1f}" if before else "-" for before in by_mark),
                f"{max(row['return'] for row in evaluations):.1f}" if evaluations else "-",
                first_minute(evaluations, 0.0),
                first_minute(evaluations, target) if target is not None else "-",
                f"{verdict['confirmed_return']:.1f} over {verdict['confirmed_episodes']} at "
                f"{verdict['solved_wall_seconds'] / 60:.0f} min"
                if verdict["solved"]
                else f"no: {verdict['confirmed_return']:.1f} over {verdict['confirmed_episodes']}"
                if verdict["confirmed_return"] is not None
                else "no",
            ]
        )
    print_table(
        [
            "seed",
            *(f"at {mark} min" for mark in GREEDY_MINUTES),
            "best",
            "first >= 0: min (steps)",
            f"first >= {target}" if target is not None else "first >= target (none set)",
            "target confirmed",
        ],
        rows,
    )


def report(
    runs: dict[int, dict], game: str, name: str, options: str, minutes: float, info: dict, out: str | None
) -> None:
    env = f"ALE/{game}-v5"
    # options given win over the preset's
    title = SB3_TITLE if name == SB3_SETTING else f"the Atari preset ({PROCESSES} processes) {options}".rstrip()
    print(
        f"\n{env}, {name}: {title}, {minutes:g} minutes a run from launch; {info['cores']} cores; mean return "
        f"of the training episodes of each row (random play: {RANDOM_PLAY[game]})"
    )
    report_training(runs)
    if any(run["greedy"] for run in runs.values()):
        report_greedy(runs, ATARI_TARGETS.get(game))
    save_results(
        out or f"atari_learn-{name}" + ("" if game == "Breakout" else f"-{game.lower()}"),
        {**info, "env": env, "setting": name, "options": options, "minutes": minutes, "runs": runs},
        plot(runs, env, title),
    )


if __name__ == "__main__":
    main()
