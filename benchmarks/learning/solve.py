"""Time to solve CartPole-v1: our trainer (its preset, and the defaults without it) against SB3 A2C and PPO.

Solved: the greedy mean return over 10 episodes reaches 475, checked every 0.5 s of wall-clock, and
100 new episodes of the same weights confirm it (every contender alike).
Each run is one process, timed from launch to exit (imports and start-up included) and capped
by --timeout; the env steps are those at the solving evaluation. Contenders run interleaved by
seed. Medians and maxima count an unsolved run as infinitely slow. Each run writes its record
(harness/records.py, suite classic-control) as it ends: the preset as "a3c", our other contenders as "a3c, "
and what they change, SB3's as "SB3 A2C (RL Zoo settings)" and "SB3 PPO (RL Zoo settings)".
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

import matplotlib.pyplot as plt

from harness.launch import (
    DEFAULTS_WITHOUT_PRESET,
    REPO,
    environment,
    print_table,
    read_summary,
    run_sb3,
    run_timed,
    save_results,
    trainer_command,
)
from harness.records import write
from harness.spreads import show, spread
from harness.trainer_runs import checkout_contender, learning_record, make_command, sb3_record

ENV = "CartPole-v1"
SUITE = "classic-control"
COMMAND = make_command("bench-solve", "SOLVE_ARGS", sys.argv[1:])
EVAL_EPISODES = 10  # every contender's greedy evaluations


def recorded(contender: str, seed: int, timeout: float) -> dict:
    """A run's fields of its record beside what it measured."""
    return dict(suite=SUITE, contender=contender, seed=seed, command=COMMAND, budget={"minutes": timeout / 60})


def ours(seed: int, timeout: float, contender: str = "a3c", repo: Path = REPO, **options) -> dict:
    """A run of our trainer on 8 processes; its record, where it lived to write its summary."""
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        command = trainer_command(run_dir, repo, env=ENV, num_processes=8, seed=seed, **options)
        wall, _, _ = run_timed(command, timeout)
        ended = (run_dir / "summary.json").exists()  # not where the run was killed outright: no record then
        summary = read_summary(run_dir) if ended else {"solved": False}
        if ended:
            fields = recorded(checkout_contender(repo, contender), seed, timeout) | {"repo": repo}
            write(learning_record(run_dir, launch_seconds=wall, settings={"num_processes": 8, **options}, **fields))
    return {"solved": summary["solved"], "wall_seconds": wall, "env_steps": summary.get("solved_env_steps")}


def sb3(algo: str, seed: int, timeout: float) -> dict:
    wall, result = run_sb3(ENV, algo, seed, timeout, target=475.0, eval_interval=0.5)
    fields = recorded(f"SB3 {algo.upper()} (RL Zoo settings)", seed, timeout)
    write(sb3_record(result, launch_seconds=wall, episodes=EVAL_EPISODES, env=ENV, **fields))
    return {
        "solved": result["solved"],
        "wall_seconds": wall,
        "env_steps": result["env_steps"] if result["solved"] else None,
        "torch_threads": result.get("threads"),
    }


OURS = "ours (preset: 8 proc x 1 env, t-max 20, replay 2)"
# Our contenders' options, and their names in the results tables ("a3c, " and what they change)
OPTIONS = {
    OURS: ("a3c", {}),
    "ours, 8 proc x 8 envs, t-max 10, no replay (the defaults)": (
        "a3c, 8 envs a process, t-max 10, no replay (the defaults without the preset)",
        DEFAULTS_WITHOUT_PRESET,
    ),
}
# --networks: the stock network in other shapes, a user's own module, and the autograd learner
NETWORK_OPTIONS = {
    "ours, autograd learner": ("a3c, autograd learner", {"learner": "torch"}),
    "ours, feed-forward 128,128": ("a3c, feed-forward 128,128", {"core": "none", "hidden_sizes": "128,128"}),
    "ours, --model examples.custom_model:mlp": (
        "a3c, --model examples.custom_model:mlp",
        {"model": "examples.custom_model:mlp"},
    ),
}


def trained(options: dict) -> dict:
    """Our contenders of `options` as runs of a seed and a timeout."""
    return {
        name: lambda seed, timeout, contender=contender, given=given: ours(seed, timeout, contender, **given)
        for name, (contender, given) in options.items()
    }


CONTENDERS = {
    **trained(OPTIONS),
    "SB3 A2C (Zoo)": lambda seed, timeout: sb3("a2c", seed, timeout),
    "SB3 PPO (Zoo)": lambda seed, timeout: sb3("ppo", seed, timeout),
}
NETWORKS = trained(NETWORK_OPTIONS)


def plot(results: dict, timeout: float):
    figure, axes = plt.subplots(figsize=(11, 4.5))
    names = list(results)
    axes.boxplot([[run["wall_seconds"] for run in runs] for runs in results.values()], showfliers=False)
    for x, runs in enumerate(results.values(), start=1):
        for run in runs:
            axes.plot(x, run["wall_seconds"], "o" if run["solved"] else "x", color="C0" if run["solved"] else "red")
    axes.axhline(timeout, color="grey", linestyle=":", label=f"timeout ({timeout:.0f} s); x = not solved")
    axes.set_xticks(range(1, len(names) + 1), labels=names, fontsize=7, rotation=15)
    axes.set_ylabel("wall seconds, launch to exit")
    axes.set_title(f"Time to solve {ENV} (greedy mean >= 475 over 10 episodes, confirmed on 100)")
    axes.legend(fontsize=8)
    axes.grid(alpha=0.3, axis="y")
    return figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per run")
    parser.add_argument("--networks", action="store_true", help="also the other networks: " + ", ".join(NETWORKS))
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="CHECKOUT",
        help="also the defaults of another checkout of this project, side by side (e.g. "
        "`git worktree add /tmp/base <commit>`)",
    )
    args = parser.parse_args()
    info = environment()

    contenders = {**CONTENDERS, **(NETWORKS if args.networks else {})}
    if args.baseline:
        contenders[f"baseline ({args.baseline})"] = lambda seed, timeout: ours(
            seed, timeout, repo=args.baseline.resolve()
        )
    results = {name: [] for name in contenders}
    for seed in range(args.seeds):
        for name, contender in contenders.items():
            run = {"seed": seed, **contender(seed, args.timeout)}
            results[name].append(run)
            print(
                f"  seed {seed} {name}: {'solved' if run['solved'] else 'NOT solved'} in "
                f"{run['wall_seconds']:.1f} s, {show(run['env_steps'], ',')} env steps",
                flush=True,
            )

    summary = {
        name: {
            "solved": sum(run["solved"] for run in runs),
            "seeds": len(runs),
            "wall_seconds": spread(runs, "wall_seconds"),
            "env_steps": spread(runs, "env_steps"),
        }
        for name, runs in results.items()
    }
    print(
        f"\nTime to solve {ENV}, {args.seeds} seeds, timeout {args.timeout:.0f} s; {info['cores']} cores, "
        f"load average at start {info['load_average_at_start'][0]:.2f}"
    )
    print_table(
        ["contender", "solved", "wall s median", "min", "max", "env steps median", "min", "max"],
        [
            [
                name,
                f"{s['solved']}/{s['seeds']}",
                *(show(s["wall_seconds"][k], ".1f") for k in ("median", "min", "max")),
                *(show(s["env_steps"][k], ",.0f") for k in ("median", "min", "max")),
            ]
            for name, s in summary.items()
        ],
    )
    ours_median = summary[OURS]["wall_seconds"]["median"]
    ratios = {}
    for name in ("SB3 A2C (Zoo)", "SB3 PPO (Zoo)"):
        theirs = summary[name]["wall_seconds"]["median"]
        ratios[f"ours / {name}"] = None if None in (ours_median, theirs) else ours_median / theirs
        print(f"median wall seconds, ours / {name}: {show(ratios[f'ours / {name}'], '.2f')}")

    data = {
        **info,
        "env": ENV,
        "seeds": args.seeds,
        "timeout_seconds": args.timeout,
        "baseline": str(args.baseline),
        "summary": summary,
        "ratios_of_median_wall_seconds": ratios,
        "runs": results,
    }
    save_results("solve", data, plot(results, args.timeout))


if __name__ == "__main__":
    main()
