"""Seed sweeps of our trainer: settings side by side on one env, interleaved by seed.

    sweep.py --env Acrobot-v1 --seeds 10 --setting "R=0:" --setting "R=1:--replay-ratio 1"
    sweep.py --env CartPole-v1 --setting "preset:" --baseline /tmp/old   # and another checkout's, side by side

Each run is one process timed from launch to exit (the env's preset, then the setting's
options, then --num-processes 8 and the seed), stopping when the greedy evaluation reaches
the target or at the preset's budget. Reported per setting: runs solved, median and range
of env steps and whole-process seconds to solve, and the best greedy evaluation.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

from harness.launch import REPO, environment, print_table, read_summary, run_timed, save_json, trainer_command
from harness.spreads import median_range, solved_spread


def run(env: str, seed: int, options: list[str], timeout: float, repo: Path = REPO) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        command = trainer_command(run_dir, repo, env=env, num_processes=8, seed=seed) + options
        wall, _, _ = run_timed(command, timeout, repo)  # in its checkout: Ray's workers import from there
        summary = read_summary(run_dir)
    return {
        "seed": seed,
        "solved": summary["solved"],
        "wall_seconds": round(wall, 2),
        "env_steps": summary["solved_env_steps"],
        "best_eval": summary["best_eval_return"],
        "last_eval": summary["last_eval_return"],
        "total_env_steps": summary["env_steps"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument(
        "--setting",
        action="append",
        required=True,
        metavar="NAME:OPTIONS",
        help="a name, a colon and the trainer options of one setting; repeat for each",
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    parser.add_argument("--out", default=None, help="results name (default: sweep-<env>)")
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="CHECKOUT",
        help="also run every setting with another checkout (git worktree add /tmp/old <commit>)",
    )
    args = parser.parse_args()
    settings = {name: (REPO, shlex.split(options)) for name, options in (s.split(":", 1) for s in args.setting)}
    if args.baseline:
        settings |= {
            f"{name} ({args.baseline})": (args.baseline.resolve(), options) for name, (_, options) in settings.items()
        }
    info = environment()

    results = {name: [] for name in settings}
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        for name, (repo, options) in settings.items():
            result = run(args.env, seed, options, args.timeout, repo)
            results[name].append(result)
            print(
                f"  seed {seed} {name}: {'solved' if result['solved'] else 'NOT solved'}, "
                f"{result['env_steps'] or result['total_env_steps']:,} env steps, {result['wall_seconds']:.1f} s, "
                f"best eval {result['best_eval']:.1f}, last eval {result['last_eval']:.1f}",
                flush=True,
            )
    print(
        f"\n{args.env}, seeds {args.first_seed}-{args.first_seed + args.seeds - 1}; {info['cores']} cores, "
        f"load average at start {info['load_average_at_start'][0]:.2f}"
    )
    print_table(
        [
            "setting",
            "solved",
            "env steps to solve, median (range)",
            "whole-process s to solve",
            "best eval, median",
            "last eval, median (range)",
        ],
        [
            [
                name,
                f"{sum(r['solved'] for r in runs)}/{len(runs)}",
                solved_spread(runs, "env_steps", ",.0f"),
                solved_spread(runs, "wall_seconds", ",.1f"),
                f"{statistics.median(r['best_eval'] for r in runs):.1f}",
                median_range([r["last_eval"] for r in runs], ",.1f"),
            ]
            for name, runs in results.items()
        ],
    )
    save_json(
        args.out or f"sweep-{args.env.replace('/', '_')}",
        {
            **info,
            "env": args.env,
            "settings": {n: " ".join(o) for n, (_, o) in settings.items()},
            "baseline": str(args.baseline),
            "runs": results,
        },
    )


if __name__ == "__main__":
    main()
