"""The RL Zoo suite: our presets against SB3 A2C and PPO with the Zoo's hyperparameters, env by env.

    zoo.py                                  # all four envs, 10 seeds (5 for LunarLander)
    zoo.py --env CartPole-v1 --seeds 3      # one env, fewer seeds
    zoo.py --env CartPole-v1 --only "ours (preset)" --only "SB3 A2C (Zoo)"   # two contenders
    zoo.py --env HalfCheetah-v5 --seeds 5    # MuJoCo at 1M env steps (make bench-mujoco: every task)

Per env, the contenders run interleaved by seed, one process at a time, each timed from launch to
exit and capped by the env's timeout: ours with the env's preset and `--num-processes 8` (and,
where the preset replays, once more with `--replay-ratio 0`), and sb3_solve.py's A2C and PPO. All
of them play the same greedy evaluation (10 episodes) at the preset's cadence in seconds and stop
at the target once 100 new episodes of the same weights confirm it. Reported per env and contender:
runs solved, median and range of env steps and of whole-process seconds to solve (unsolved runs count
as infinitely slow), and the median final greedy return; the learning curves go to zoo.png, against
env steps and against seconds.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

import matplotlib.pyplot as plt

from a3c.config.presets import preset_for
from a3c.run.metrics import EXPLORATION_COLUMNS

from harness.launch import (
    environment,
    print_table,
    read_summary,
    run_rows,
    run_sb3,
    run_timed,
    save_results,
    trainer_command,
)
from harness.records import write
from harness.spreads import show, show_spread, spread
from harness.trainer_runs import learning_record, make_command, sb3_record


@dataclass(frozen=True)
class Suite:
    target: float | None  # the greedy mean return that counts as solved; None: the runs go to the budget
    seeds: int
    timeout: float  # seconds per run
    family: str = "classic-control"  # the results' suite (harness/records.py)
    max_steps: int = 0  # the trainer's budget (0: its preset's); SB3's is the Zoo's n_timesteps
    every: float = 0.0  # seconds between greedy evaluations, both trainers (0: the preset's)


SUITES = {
    "CartPole-v1": Suite(475.0, 10, 120.0),
    "Acrobot-v1": Suite(-100.0, 10, 600.0),
    "LunarLander-v3": Suite(200.0, 5, 1800.0, "box2d"),
    "Pendulum-v1": Suite(-200.0, 10, 900.0),
}
CLASSIC = tuple(SUITES)  # the suite without --env
# MuJoCo at the field's budget, 1M env steps: the locomotion tasks' thresholds are far beyond it, so their runs
# report the return; an evaluation of 10 episodes of 1,000 steps every 30 s (SB3's training waits for its own)
for task, threshold in {
    "HalfCheetah-v5": None,
    "Hopper-v5": None,
    "Ant-v5": None,
    "InvertedPendulum-v5": 950.0,
    "InvertedDoublePendulum-v5": 9100.0,
    "Reacher-v5": -3.75,
    "Swimmer-v5": 360.0,
}.items():
    SUITES[task] = Suite(threshold, 5, 3600.0, "mujoco", 1_000_000, 30.0)
MUJOCO_SUITE = [f"--env={task}" for task, suite in SUITES.items() if suite.family == "mujoco"] + ["--out=mujoco"]


def command_of(arguments: list[str]) -> str:
    """The make command that runs these arguments again: make bench-mujoco's own (its tasks and results name
    given by the Makefile), else make bench-zoo's."""
    spelt = [f"{name}={value}" for name, value in zip(arguments[::2], arguments[1::2])]
    if set(MUJOCO_SUITE) <= set(spelt):
        rest = [part for pair in spelt if pair not in MUJOCO_SUITE for part in pair.split("=", 1)]
        return make_command("bench-mujoco", "MUJOCO_ARGS", rest)
    return make_command("bench-zoo", "ZOO_ARGS", arguments)


COMMAND = command_of(sys.argv[1:])
EVAL_EPISODES = 10  # both trainers' greedy evaluations


def recorded(suite: Suite, contender: str, seed: int) -> dict:
    """A run's fields of its record (harness/records.py) beside what it measured."""
    return dict(
        suite=suite.family, contender=contender, seed=seed, command=COMMAND, budget={"minutes": suite.timeout / 60}
    )


def eval_interval(env: str) -> float:
    return (SUITES[env].every if env in SUITES else 0.0) or preset_for(env).get("eval_interval", 0.5)


def ours(env: str, seed: int, suite: Suite, contender: str = "a3c", **options) -> dict:
    """One run of our trainer on 8 processes (options win), as its greedy evaluation and summary tell it; with
    the medians over metrics.csv's rows of the policy's entropy and of what the noise did to it."""
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        options = {"num_processes": 8, **options}
        budget = {"max_steps": suite.max_steps, "eval_interval": eval_interval(env)} if suite.max_steps else {}
        target = "none" if suite.target is None else suite.target
        command = trainer_command(run_dir, env=env, seed=seed, target_return=target, **budget, **options)
        wall, _, _ = run_timed(command, suite.timeout)
        summary = read_summary(run_dir)
        write(learning_record(run_dir, launch_seconds=wall, settings=options, **recorded(suite, contender, seed)))
        curve = [
            (int(row["env_steps"]), float(row["wall_seconds"]), float(row["mean_return"]))
            for row in run_rows(run_dir, "eval.csv")
        ]
        rows = run_rows(run_dir)
    return {
        "solved": summary["solved"],
        "wall_seconds": wall,
        "env_steps": summary["solved_env_steps"],
        "final_eval": summary["last_eval_return"],
        "curve": curve,
        **{name: median_of(rows, name) for name in ("entropy", *EXPLORATION_COLUMNS)},
    }


def median_of(rows: list[dict], column: str) -> float:
    """The median of a metrics.csv column over the rows that have a number there (NaN if none has)."""
    values = [float(row[column]) for row in rows if row.get(column) not in (None, "", "nan")]
    return statistics.median(values) if values else math.nan


def sb3(algo: str, env: str, seed: int, suite: Suite) -> dict:
    target = math.inf if suite.target is None else suite.target
    wall, result = run_sb3(env, algo, seed, suite.timeout, target, eval_interval(env))
    contender = f"SB3 {algo.upper()} (RL Zoo settings)"
    told = result if suite.target is not None else {**result, "solved": None}  # a run to the budget: its return
    write(sb3_record(told, launch_seconds=wall, episodes=EVAL_EPISODES, env=env, **recorded(suite, contender, seed)))
    return {
        "solved": result["solved"],
        "wall_seconds": wall,
        "env_steps": result["env_steps"] if result["solved"] else None,
        "final_eval": result["final_eval"],
        "curve": result["curve"],
    }


def contenders(env: str, only: list[str] | None = None) -> dict:
    """The contenders for `env`, all of them or those named in `only`."""
    found = {"ours (preset)": lambda seed, suite: ours(env, seed, suite)}
    if preset_for(env).get("replay_ratio"):
        found["ours, no replay"] = lambda seed, suite: ours(env, seed, suite, "a3c, no replay", replay_ratio=0)
    found["SB3 A2C (Zoo)"] = lambda seed, suite: sb3("a2c", env, seed, suite)
    found["SB3 PPO (Zoo)"] = lambda seed, suite: sb3("ppo", env, seed, suite)
    return {name: run for name, run in found.items() if not only or name in only}


def run_env(env: str, suite: Suite, only: list[str] | None = None, first_seed: int = 0) -> dict:
    results = {name: [] for name in contenders(env, only)}
    for seed in range(first_seed, first_seed + suite.seeds):
        for name, contender in contenders(env, only).items():
            run = {"seed": seed, **contender(seed, suite)}
            results[name].append(run)
            print(
                f"  {env} seed {seed} {name}: {'solved' if run['solved'] else 'NOT solved'} in "
                f"{run['wall_seconds']:.1f} s, {show(run['env_steps'], ',')} env steps, "
                f"final eval {run['final_eval']:.1f}",
                flush=True,
            )
    return results


def summarize(runs: list[dict]) -> dict:
    finals = [run["final_eval"] for run in runs]
    return {
        "solved": sum(run["solved"] for run in runs),
        "seeds": len(runs),
        "env_steps": spread(runs, "env_steps"),
        "wall_seconds": spread(runs, "wall_seconds"),
        "final_eval": {"median": statistics.median(finals), "min": min(finals), "max": max(finals)},
    }


def plot(results: dict, suites: dict):
    figure, axes = plt.subplots(2, len(results), figsize=(4.5 * len(results), 7), squeeze=False)
    for column, (env, by_contender) in enumerate(results.items()):
        for color, (name, runs) in enumerate(by_contender.items()):
            for n, run in enumerate(runs):
                steps, seconds, returns = zip(*run["curve"]) if run["curve"] else ((), (), ())
                label = name if n == 0 else None
                axes[0][column].plot(steps, returns, color=f"C{color}", alpha=0.5, linewidth=0.8, label=label)
                axes[1][column].plot(seconds, returns, color=f"C{color}", alpha=0.5, linewidth=0.8)
        for row, xlabel in enumerate(("env steps", "seconds")):
            if suites[env].target is not None:
                axes[row][column].axhline(suites[env].target, color="grey", linestyle=":")
            axes[row][column].set_xlabel(xlabel)
            axes[row][column].grid(alpha=0.3)
        axes[0][column].set_title(env)
        axes[0][column].legend(fontsize=7)
    axes[0][0].set_ylabel("greedy mean return (10 episodes)")
    axes[1][0].set_ylabel("greedy mean return (10 episodes)")
    figure.tight_layout()
    return figure


def median_over_seeds(runs: list[dict], figure: str) -> float:
    """A figure's median over the runs that have it (NaN if none has: an SB3 run, a network without noise)."""
    values = [run[figure] for run in runs if not math.isnan(run.get(figure, math.nan))]
    return statistics.median(values) if values else math.nan


def report(info: dict, suites: dict, results: dict, out: str, figures: tuple[str, ...] = ()) -> None:
    """The table and the results file; `figures`: more of each run's figures, as medians over seeds."""
    summary = {
        env: {
            name: {**summarize(runs), **{figure: median_over_seeds(runs, figure) for figure in figures}}
            for name, runs in by_contender.items()
        }
        for env, by_contender in results.items()
    }
    print(f"\n{info['cores']} cores, load average at start {info['load_average_at_start'][0]:.2f}")
    print_table(
        [
            "env",
            "contender",
            "solved",
            "env steps to solve, median (range)",
            "seconds to solve",
            "final greedy return",
            *figures,
        ],
        [
            [
                env,
                name,
                f"{s['solved']}/{s['seeds']}",
                show_spread(s["env_steps"], ",.0f"),
                show_spread(s["wall_seconds"], ".1f"),
                f"{s['final_eval']['median']:.2f}",
                *(f"{s[figure]:.3g}" for figure in figures),
            ]
            for env, by_contender in summary.items()
            for name, s in by_contender.items()
        ],
    )
    data = {**info, "suites": {env: vars(suites[env]) for env in results}, "summary": summary, "runs": results}
    save_results(out, data, plot(results, suites))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", action="append", choices=list(SUITES), help="one env of the suite; repeat for more")
    parser.add_argument("--seeds", type=int, help="seeds per env (default: 10, 5 for LunarLander)")
    parser.add_argument("--first-seed", type=int, default=0, help="the first seed: a suite's seeds over sittings")
    parser.add_argument("--out", default="zoo", help="results name")
    parser.add_argument(
        "--only",
        action="append",
        metavar="CONTENDER",
        help='run only this contender, e.g. "ours (preset)" or "SB3 A2C (Zoo)"; repeat for more',
    )
    args = parser.parse_args()
    info = environment()
    suites = {
        env: replace(suite, seeds=args.seeds or suite.seeds)
        for env, suite in SUITES.items()
        if env in (args.env or CLASSIC)
    }

    results = {}
    for env, suite in suites.items():  # saved after each env: a long suite cut short keeps what it finished
        results[env] = run_env(env, suite, args.only, args.first_seed)
        report(info, suites, results, args.out)


if __name__ == "__main__":
    main()
