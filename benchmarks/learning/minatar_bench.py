"""MinAtar at equal wall-clock: our trainer (its MinAtar preset, or --setting variants) against SB3 PPO.

    minatar_bench.py --game Breakout --game SpaceInvaders --seeds 3 --minutes 3

Each run has --minutes of wall-clock from launch. Ours: the CLI with 8 processes, stopped by
SIGINT at the budget (a clean stop that writes last.pt), its evaluator's greedy means on the way
(eval.csv); then, outside the budget, `evaluate` plays last.pt for 10 greedy episodes. SB3:
sb3_minatar.py (PPO, the same observations and network body), evaluating on the way and at the
end the same way. Runs are interleaved by seed. Reported per game and contender: the median and
range of the final greedy return over seeds, and the env steps played; the PNG draws the greedy
curves against seconds and env steps. Each run writes its record (harness/records.py, suite minatar) as it
ends: ours as "a3c" with the options that differ from the preset's (a baseline's at its checkout's version),
SB3's as "SB3 PPO (CleanRL Atari settings)".
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

import matplotlib.pyplot as plt

from a3c.config.presets import preset_for

from harness.launch import (
    PYTHON,
    REPO,
    environment,
    print_table,
    read_summary,
    run_timed,
    save_results,
    trainer_command,
)
from harness.records import Record, write
from harness.spreads import median_range
from harness.trainer_runs import budget, checkout_contender, learning_record, make_command, sb3_record, variant

FINAL_EPISODES = 10
FINAL_SEED = 20_000  # the final episodes' seeds: none of training's or the evaluator's
EVAL_INTERVAL = 30.0  # seconds between the greedy evaluations of a curve, for both
# sb3_minatar.py: CleanRL's ppo_atari settings scaled to 8 envs, on our MinAtar convnet (the Zoo has no entry)
SB3_CONTENDER = "SB3 PPO (CleanRL Atari settings)"
COMMAND = make_command("bench-minatar", "MINATAR_ARGS", sys.argv[1:])


def ours(game: str, seed: int, seconds: float, options: list[str], repo: Path = REPO) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        command = (
            trainer_command(
                run_dir,
                repo,
                env=f"MinAtar/{game}-v1",
                num_processes=8,
                seed=seed,
                eval_interval=EVAL_INTERVAL,
                eval_episodes=5,
            )
            + ["--no-tensorboard"]
            + options
        )
        wall, _, _ = run_timed(command, timeout=seconds)
        summary = read_summary(run_dir)
        with open(run_dir / "eval.csv") as file:
            curve = [
                (int(row["env_steps"]), float(row["wall_seconds"]), float(row["mean_return"]))
                for row in csv.DictReader(file)
            ]
        _, output, _ = run_timed(
            [
                PYTHON,
                str(repo / "main.py"),
                "evaluate",
                "--checkpoint",
                str(run_dir / "checkpoints" / "last.pt"),
                "--episodes",
                str(FINAL_EPISODES),
                "--seed",
                str(FINAL_SEED),
            ],
            timeout=600,
        )
        final = float(re.search(r"mean return (-?[\d.]+)", output).group(1))
        write(ours_record(run_dir, game, seed, seconds=seconds, wall=wall, final=final, options=options, repo=repo))
    return {"seed": seed, "final_return": final, "env_steps": summary["env_steps"], "curve": curve}


def ours_record(
    run_dir: Path, game: str, seed: int, *, seconds: float, wall: float, final: float, options: list[str], repo: Path
) -> Record:
    """The record of our run in `run_dir`, given `seconds` and ended `wall` seconds after its launch: its return
    last.pt's over the final episodes, its name the options that differ from the preset's."""
    contender, settings = variant(options, preset_for(f"MinAtar/{game}-v1"))
    return learning_record(
        run_dir,
        launch_seconds=wall,
        replayed=(final, FINAL_EPISODES),
        repo=repo,
        suite="minatar",
        contender=checkout_contender(repo, contender),
        seed=seed,
        command=COMMAND,
        budget=budget(run_dir, seconds / 60),
        settings={"num_processes": 8, **settings},
    )


def sb3(game: str, seed: int, seconds: float) -> dict:
    command = [
        PYTHON,
        str(REPO / "benchmarks" / "learning" / "sb3_minatar.py"),
        "--env",
        f"MinAtar/{game}-v1",
        "--seed",
        str(seed),
        "--seconds",
        str(seconds),
        "--eval-interval",
        str(EVAL_INTERVAL),
    ]
    wall, output, _ = run_timed(command, timeout=seconds + 600)
    result = json.loads(output.strip().splitlines()[-1])
    mean = statistics.fmean(result["final_returns"])
    figures = {"env_steps": result["env_steps"], "final_eval": mean, "curve": result["curve"]}  # no target: no solve
    fields = dict(suite="minatar", env=f"MinAtar/{game}-v1", contender=SB3_CONTENDER, seed=seed, command=COMMAND)
    write(sb3_record(figures, launch_seconds=wall, episodes=FINAL_EPISODES, budget={"minutes": seconds / 60}, **fields))
    return {
        "seed": seed,
        "final_return": mean,
        "env_steps": result["env_steps"],
        "curve": [tuple(point) for point in result["curve"]],
    }


def plot(results: dict):
    games = list(results)
    figure, axes = plt.subplots(2, len(games), figsize=(6 * len(games), 8), squeeze=False)
    for column, game in enumerate(games):
        for color, (name, runs) in enumerate(results[game].items()):
            for n, run in enumerate(runs):
                steps, seconds, returns = zip(*run["curve"]) if run["curve"] else ((), (), ())
                label = name if n == 0 else None
                axes[0][column].plot(seconds, returns, color=f"C{color}", alpha=0.7, label=label)
                axes[1][column].plot(steps, returns, color=f"C{color}", alpha=0.7, label=label)
        axes[0][column].set_title(f"MinAtar {game}: greedy mean of 5 episodes")
        axes[0][column].set_xlabel("seconds")
        axes[1][column].set_xlabel("env steps")
        axes[1][column].set_xscale("log")
        for row in axes:
            row[column].set_ylabel("return")
            row[column].legend(fontsize=7)
            row[column].grid(alpha=0.3)
    figure.tight_layout()
    return figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", action="append", help="Breakout, SpaceInvaders, ... (repeatable; default both)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--minutes", type=float, default=3.0, help="wall-clock budget of one run, from launch")
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        help='"name:options" for ours instead of the preset alone (repeatable)',
    )
    parser.add_argument("--no-sb3", action="store_true", help="ours only (a sweep of settings)")
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="CHECKOUT",
        help="also another checkout's preset (git worktree add /tmp/old <commit>), side by side",
    )
    parser.add_argument("--out", default="minatar", help="results file name under benchmarks/results")
    args = parser.parse_args()
    games = args.game or ["Breakout", "SpaceInvaders"]
    settings = {
        name: (shlex.split(options), REPO)
        for name, options in (dict(setting.split(":", 1) for setting in args.setting) or {"ours (preset)": ""}).items()
    }
    if args.baseline:
        settings |= {
            f"{name}, {args.baseline}": (options, args.baseline.resolve()) for name, (options, _) in settings.items()
        }
    seconds = 60 * args.minutes
    info = environment()
    results: dict = {}
    for game in games:
        results[game] = {name: [] for name in settings} | ({} if args.no_sb3 else {"SB3 PPO": []})
        for seed in range(args.seeds):
            for name, (options, repo) in settings.items():
                results[game][name].append(ours(game, seed, seconds, options, repo))
            if not args.no_sb3:
                results[game]["SB3 PPO"].append(sb3(game, seed, seconds))
    print(
        f"\nMinAtar, {args.minutes:g} minutes a run, seeds 0-{args.seeds - 1}; {info['cores']} cores, load average at "
        f"start {info['load_average_at_start'][0]:.2f}; final greedy return over {FINAL_EPISODES} episodes, "
        "median (range)"
    )
    print_table(
        ["game", "contender", "final return", "env steps"],
        [
            [
                game,
                name,
                median_range([run["final_return"] for run in runs], ".2f", " to "),
                median_range([run["env_steps"] for run in runs], ",.0f", " to "),
            ]
            for game, contenders in results.items()
            for name, runs in contenders.items()
        ],
    )
    recorded = {
        name: {"options": shlex.join(options), "checkout": str(repo)} for name, (options, repo) in settings.items()
    }
    save_results(
        args.out,
        {**info, "minutes": args.minutes, "seeds": args.seeds, "settings": recorded, "results": results},
        plot(results),
    )


if __name__ == "__main__":
    main()
