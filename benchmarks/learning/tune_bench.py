"""The tuner against the hand-made preset: `a3c tune` from the plain defaults, then new seeds of both.

    tune_bench.py --env Acrobot-v1 --minutes 30

The study (`a3c tune --no-preset`, --seeds-per-trial seeds 0 and up, --max-steps env steps a run,
8 processes) runs for --minutes of wall-clock, then a Ctrl-C ends it with its finished trials kept.
Its best.toml and the env's preset then train on --check-seeds new seeds (100 and up, none of the
search's), interleaved, each to a confirmed solve or its budget: runs solved, median and range of env
steps and whole-process seconds to solve.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

from harness.launch import PYTHON, REPO, RESULTS, environment, print_table, run_timed, save_json
from harness.spreads import solved_spread
from learning.sweep import run

CHECK_SEEDS_FROM = 100  # the search trains seeds 0, 1, ...: these are new to it


def run_study(
    env: str, minutes: float, seeds: int, max_steps: int, prune_startup: int, space: Path | None, out: Path
) -> dict:
    command = [
        PYTHON,
        str(REPO / "main.py"),
        "tune",
        "--env",
        env,
        "--no-preset",
        "--trials",
        "1000",
        "--seeds",
        str(seeds),
        "--max-steps",
        str(max_steps),
        "--num-processes",
        "8",
        "--prune-startup",
        str(prune_startup),
        "--out",
        str(out),
        *(["--space", str(space)] if space else []),
    ]
    wall, output, _ = run_timed(command, timeout=60 * minutes)
    print(output)
    with open(out / "trials.csv", newline="") as file:
        states = Counter(row["state"] for row in csv.DictReader(file))
    shutil.copy(out / "trials.csv", RESULTS / f"tune-{env}-trials.csv")
    return {"wall_seconds": round(wall, 1), "trials": dict(states), "best_toml": (out / "best.toml").read_text()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="Acrobot-v1")
    parser.add_argument("--minutes", type=float, default=30.0, help="wall-clock budget of the study")
    parser.add_argument("--seeds-per-trial", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=100_000, help="env steps of each run of a trial")
    parser.add_argument("--prune-startup", type=int, default=2, help="trials finished before the pruner prunes")
    parser.add_argument("--check-seeds", type=int, default=5)
    parser.add_argument("--space", type=Path, help="a search-space file for a3c tune --space")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per check run")
    args = parser.parse_args()
    info = environment()
    with tempfile.TemporaryDirectory() as tmp:
        study = run_study(
            args.env,
            args.minutes,
            args.seeds_per_trial,
            args.max_steps,
            args.prune_startup,
            args.space,
            Path(tmp) / "study",
        )
        best = Path(tmp) / "best.toml"
        best.write_text(study["best_toml"])
        settings = {"preset": [], "tuned (best.toml)": ["--config", str(best)]}
        results = {name: [] for name in settings}
        for seed in range(CHECK_SEEDS_FROM, CHECK_SEEDS_FROM + args.check_seeds):
            for name, options in settings.items():
                results[name].append(run(args.env, seed, options, args.timeout))
                print(f"  seed {seed} {name}: {results[name][-1]}")
    print(
        f"\n{args.env}: the study ran {study['wall_seconds']:.0f} s, trials {study['trials']}; best.toml:\n"
        f"{study['best_toml']}"
    )
    print_table(
        ["setting", "solved", "env steps to solve", "seconds to solve"],
        [
            [
                name,
                f"{sum(r['solved'] for r in runs)}/{len(runs)}",
                solved_spread(runs, "env_steps", ",.0f"),
                solved_spread(runs, "wall_seconds", ",.1f"),
            ]
            for name, runs in results.items()
        ],
    )
    save_json(
        f"tune-{args.env}",
        {**info, **vars(args), "space": args.space and args.space.read_text(), "study": study, "results": results},
    )


if __name__ == "__main__":
    main()
