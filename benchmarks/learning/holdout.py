"""Does best.pt hold on episodes it was not selected on? Each env's preset, trained to its target, then
best.pt replayed by `evaluate --episodes 100` on seeds no evaluation of the run used.

    holdout.py                                   # CartPole, Acrobot, Pendulum (10 seeds), LunarLander (5)
    holdout.py --env Pendulum-v1 --seeds 3       # a part

Per env, two contenders interleaved by seed: the trainer as it is (an evaluation reaching the target
is confirmed on 100 new episodes, whose mean must be at the target with 90% confidence, before the
run stops; best.pt ranks confirmed means first) and
`--confirm-episodes 0` (the first 10-episode mean at the target stops the run; best.pt is the best
such mean). Reported: runs that stopped as solved, the held-out mean of best.pt, median (range), and
the share of seeds whose held-out mean reaches the target. The trainer as it is writes a record of each run
(harness/records.py, the env's suite as zoo.py has it) as it ends, as "a3c", its return best.pt's held-out mean;
`--confirm-episodes 0` writes none: the results count a solve that new episodes confirmed, which it skips.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

from harness.launch import PYTHON, REPO, environment, print_table, read_summary, run_timed, save_json, trainer_command
from harness.records import write
from harness.trainer_runs import learning_record, make_command
from learning.zoo import SUITES, Suite

HOLDOUT_EPISODES = 100
HOLDOUT_SEED = 1_000_000  # + the run's seed: reset seeds of the held-out episodes

CONTENDERS = {"confirmed (100 episodes)": {}, "--confirm-episodes 0": {"confirm_episodes": 0}}
RECORDED = {"confirmed (100 episodes)": "a3c"}  # the contenders whose runs have records, as the tables name them
COMMAND = make_command("bench-holdout", "HOLDOUT_ARGS", sys.argv[1:])


def held_out_mean(checkpoint: Path, seed: int) -> float:
    output = subprocess.run(
        [
            PYTHON,
            str(REPO / "main.py"),
            "evaluate",
            "--checkpoint",
            str(checkpoint),
            "--episodes",
            str(HOLDOUT_EPISODES),
            "--seed",
            str(HOLDOUT_SEED + seed),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return float(re.search(r"mean return (\S+)", output).group(1))


def run(env: str, seed: int, suite: Suite, contender: str | None, **options) -> dict:
    """A run of the env's preset on 8 processes, best.pt's held-out mean after it; `contender`: the run's name in
    its record (None: no record)."""
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        options = {"num_processes": 8, **options}
        command = trainer_command(run_dir, env=env, seed=seed, target_return=suite.target, **options)
        wall, _, _ = run_timed(command + ["--no-tensorboard"], suite.timeout)
        summary = read_summary(run_dir)
        best = run_dir / "checkpoints" / "best.pt"
        held_out = held_out_mean(best, seed) if best.exists() else None
        if contender:
            fields = dict(suite=suite.family, contender=contender, seed=seed, command=COMMAND, settings=options)
            fields["budget"] = {"minutes": suite.timeout / 60}
            write(learning_record(run_dir, launch_seconds=wall, replayed=(held_out, HOLDOUT_EPISODES), **fields))
    return {
        "seed": seed,
        "solved": summary["solved"],
        "wall_seconds": round(wall, 2),
        "solved_env_steps": summary["solved_env_steps"],
        "confirmed_return": summary.get("confirmed_return"),
        "best_eval": summary["best_eval_return"],
        "held_out": held_out,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", action="append", choices=list(SUITES), help="repeat for several (default: all)")
    parser.add_argument("--seeds", type=int, default=None, help="default: the suite's (10, 5 for LunarLander)")
    parser.add_argument(
        "--contender", action="append", choices=list(CONTENDERS), help="repeat for several (default: both)"
    )
    parser.add_argument("--out", default="holdout", help="results name under benchmarks/results")
    args = parser.parse_args()
    info = environment()
    contenders = {name: CONTENDERS[name] for name in args.contender or CONTENDERS}
    results, rows = {}, []
    for env in args.env or list(SUITES):
        suite = SUITES[env]
        results[env] = {name: [] for name in contenders}
        for seed in range(args.seeds or suite.seeds):
            for name, options in contenders.items():
                result = run(env, seed, suite, RECORDED.get(name), **options)
                results[env][name].append(result)
                print(
                    f"  {env} seed {seed} {name}: {'solved' if result['solved'] else 'NOT solved'}, best eval "
                    f"{result['best_eval']}, best.pt on {HOLDOUT_EPISODES} new episodes {result['held_out']}",
                    flush=True,
                )
        for name, runs in results[env].items():
            held = [r["held_out"] for r in runs if r["held_out"] is not None]
            holds = sum(h >= suite.target for h in held)
            rows.append(
                [
                    env,
                    name,
                    f"{sum(r['solved'] for r in runs)}/{len(runs)}",
                    f"{statistics.median(held):.1f} ({min(held):.1f} to {max(held):.1f})" if held else "-",
                    f"{holds}/{len(runs)}",
                ]
            )
    print(f"\n{info['cores']} cores, load average at start {info['load_average_at_start'][0]:.2f}")
    print_table(
        [
            "env",
            "contender",
            "stopped solved",
            f"best.pt on {HOLDOUT_EPISODES} new episodes, median (range)",
            "held-out mean at the target",
        ],
        rows,
    )
    save_json(args.out, {**info, "episodes": HOLDOUT_EPISODES, "results": results})


if __name__ == "__main__":
    main()
