"""What --track mlflow and --track wandb add to a CartPole run's whole-process time, beside --track none.

    tracking.py                    # seeds 0-4: the preset to its confirmed solve, then a fixed budget
    tracking.py --seeds 3 --fixed-steps 0

Each run is `python main.py --env CartPole-v1 --num-processes 8 --seed S --track T`, timed from launch
to exit; the three trackers run interleaved by seed. Two kinds of run: the preset until its confirmed
solve (the time a user waits; its spread over seeds is wide) and a fixed budget of env steps with
--target-return none --eval-episodes 0 (no early stop, no evaluator: the spread is the machine's).
W&B runs offline (WANDB_MODE) and MLflow into a fresh SQLite store (MLFLOW_TRACKING_URI), both in a
temporary folder; the store's tables are made before the runs, once, and timed apart. Then the
tracking process alone, without training: told nothing (the library's import alone, which a launch
overlaps with torch's), told a run with no rows (the whole fixed cost), and fed 1,000 metrics rows
(the cost per row).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

from a3c.config.settings import Config
from a3c.run.tracking import CHILD_CODE, PACKAGE_ROOT

from harness.launch import PYTHON, environment, print_table, read_summary, run_timed, save_json, trainer_command
from harness.spreads import median_range

TRACKS = ("none", "mlflow", "wandb")
TIMEOUT = 120.0
ROWS = 1_000  # metrics rows fed to the tracking process alone, for its cost per row
ROW = {
    "env_steps": 0,
    "wall_seconds": 1.5,
    "updates": 100,
    "episodes": 20,
    "mean_return": 22.5,
    "mean_length": 22.5,
    "policy_loss": 0.01,
    "value_loss": 0.2,
    "entropy": 0.6,
    "grad_norm": 0.4,
    "lr": 0.004,
    "steps_per_second": 9e3,
    "replay_updates": 200,
    "updates_per_second": 60.0,
    "replay_updates_per_second": 120.0,
    "rollout_ms": 3.0,
    "update_ms": 5.0,
    "policy_lag": 0.7,
}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(run) -> tuple[float, float, object]:
    """Wall seconds, CPU seconds of the processes it waited for (the trainer, its workers, the tracker), result."""
    cpu, began = children_cpu(), time.monotonic()
    result = run()
    return time.monotonic() - began, children_cpu() - cpu, result


def training(seed: int, track: str, options: dict) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        command = trainer_command(run_dir, env="CartPole-v1", num_processes=8, seed=seed, track=track, **options)
        wall, cpu, _ = timed(lambda: run_timed(command, TIMEOUT))
        summary = read_summary(run_dir)
    return {
        "seed": seed,
        "wall_seconds": round(wall, 3),
        "cpu_seconds": round(cpu, 3),
        "solved": summary["solved"],
        "env_steps": summary["env_steps"],
        "train_seconds": summary["wall_seconds"],
    }


def tracking_alone(track: str, rows: int | None, folder: Path) -> dict:
    """The tracking process fed what a trainer feeds it: the run dir, `rows` metrics rows and the end; with
    rows None, nothing (a run refused at once: the library's import alone, what a launch overlaps with torch's)."""
    run_dir = Path(tempfile.mkdtemp(dir=folder))
    (run_dir / "config.json").write_text(json.dumps(Config.for_env("CartPole-v1").to_dict()))
    messages = (
        []
        if rows is None
        else [
            {"run_dir": str(run_dir)},
            *({"group": "train", "row": {**ROW, "env_steps": 20 * (n + 1)}} for n in range(rows)),
            {"summary": {}, "exit_code": 0},
        ]
    )
    lines = "".join(json.dumps(message) + "\n" for message in messages)
    command = [PYTHON, "-c", CHILD_CODE, PACKAGE_ROOT, track]
    wall, cpu, result = timed(
        lambda: subprocess.run(command, input=lines, capture_output=True, text=True, timeout=TIMEOUT)
    )
    if result.returncode != 0:
        raise RuntimeError(f"the {track} tracking process failed:\n{(run_dir / 'tracking.log').read_text()}")
    return {"wall_seconds": round(wall, 3), "cpu_seconds": round(cpu, 3)}


def compare(name: str, runs: dict) -> dict:
    """Per tracker: median whole-process seconds, its ratio to --track none's, the median paired difference."""
    off = statistics.median(run["wall_seconds"] for run in runs["none"])
    table, figures = [], {}
    for track, results in runs.items():
        walls = [run["wall_seconds"] for run in results]
        added = [run["wall_seconds"] - base["wall_seconds"] for run, base in zip(results, runs["none"])]
        figures[track] = {
            "median_wall_seconds": statistics.median(walls),
            "ratio_to_none": statistics.median(walls) / off,
            "median_paired_added_seconds": statistics.median(added),
            "median_cpu_seconds": statistics.median(run["cpu_seconds"] for run in results),
        }
        table.append(
            [
                track,
                f"{sum(run['solved'] for run in results)}/{len(results)}",
                median_range(walls),
                f"{figures[track]['ratio_to_none']:.3f}",
                f"{figures[track]['median_paired_added_seconds']:+.2f}",
                median_range([run["cpu_seconds"] for run in results]),
            ]
        )
    print(f"\n{name}: whole-process seconds, median (range)")
    print_table(["--track", "solved", "launch to exit", "ratio to none", "added (paired median)", "CPU s"], table)
    return figures


def trainings(seeds: int, kinds: dict) -> dict:
    """kind -> track -> one run's figures per seed; the trackers interleaved by seed."""
    runs = {kind: {track: [] for track in TRACKS} for kind in kinds}
    for seed in range(seeds):
        for kind, options in kinds.items():
            for track in TRACKS:
                run = training(seed, track, options)
                runs[kind][track].append(run)
                print(
                    f"  seed {seed}, {kind}, --track {track}: {run['wall_seconds']:.2f} s "
                    f"({run['cpu_seconds']:.1f} s CPU)",
                    flush=True,
                )
    return runs


def tracking_costs(track: str, folder: Path) -> dict:
    """The import alone, the whole fixed cost (a run without rows), and the cost of a row."""
    imports, fixed, full = (tracking_alone(track, rows, folder) for rows in (None, 0, ROWS))
    return {
        "import_wall_seconds": imports["wall_seconds"],
        "import_cpu_seconds": imports["cpu_seconds"],
        "fixed_wall_seconds": fixed["wall_seconds"],
        "fixed_cpu_seconds": fixed["cpu_seconds"],
        "per_row_ms": 1000 * (full["wall_seconds"] - fixed["wall_seconds"]) / ROWS,
        "per_row_cpu_ms": 1000 * (full["cpu_seconds"] - fixed["cpu_seconds"]) / ROWS,
    }


def print_costs(costs: dict, figures: dict, info: dict) -> None:
    print(
        f"\nthe tracking process alone, no training; {info['cores']} cores, "
        f"load average at start {info['load_average_at_start'][0]:.2f}"
    )
    keys = (
        "import_wall_seconds",
        "import_cpu_seconds",
        "fixed_wall_seconds",
        "fixed_cpu_seconds",
        "per_row_ms",
        "per_row_cpu_ms",
    )
    print_table(
        ["--track", "import s", "import CPU s", "fixed s", "fixed CPU s", "per row ms", "per row CPU ms"],
        [[track, *(f"{c[key]:.2f}" for key in keys)] for track, c in costs.items()],
    )
    for kind, by_track in figures.items():
        for track in TRACKS[1:]:
            added = by_track[track]["median_paired_added_seconds"]
            print(
                f"{kind}, --track {track}: {added:+.2f} s added; under 2% for runs longer than "
                f"{max(added, 0) / 0.02:.0f} s"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument(
        "--fixed-steps", type=int, default=40_000, help="env steps of the fixed-budget runs (0: none of them)"
    )
    args = parser.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # compiled modules are cached, as on a user's machine
    info = environment()
    kinds = {"preset, to a confirmed solve": {}}
    if args.fixed_steps:
        kinds[f"{args.fixed_steps:,} env steps, no evaluator"] = {
            "max_steps": args.fixed_steps,
            "target_return": "none",
            "eval_episodes": 0,
        }
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ.update(
            WANDB_MODE="offline",
            WANDB_DATA_DIR=str(folder / "wandb-data"),
            WANDB_CACHE_DIR=str(folder / "wandb-cache"),
            WANDB_CONFIG_DIR=str(folder / "wandb-config"),
            MLFLOW_TRACKING_URI=f"sqlite:///{folder}/mlflow.db",
        )
        store = create_mlflow_store(folder)
        print(
            f"MLflow store created (tables, the a3c experiment) in {store['wall_seconds']:.2f} s, "
            f"{store['cpu_seconds']:.2f} s CPU: once per store",
            flush=True,
        )
        runs = trainings(args.seeds, kinds)
        costs = {track: tracking_costs(track, folder) for track in TRACKS[1:]}
    figures = {kind: compare(kind, kind_runs) for kind, kind_runs in runs.items()}
    print_costs(costs, figures, info)
    save_json(
        "tracking",
        {
            **info,
            "seeds": args.seeds,
            "fixed_steps": args.fixed_steps,
            "store": store,
            "figures": figures,
            "tracking_alone": costs,
            "runs": runs,
        },
    )


def create_mlflow_store(folder: Path) -> dict:
    """The store's tables and the a3c experiment, its artifacts in `folder` (not ./mlruns of the checkout)."""
    code = (
        "import sys; from mlflow import MlflowClient; "
        "MlflowClient().create_experiment('a3c', artifact_location=sys.argv[1])"
    )
    wall, cpu, _ = timed(
        lambda: subprocess.run(
            [PYTHON, "-c", code, (folder / "mlruns").as_uri()], check=True, capture_output=True, timeout=TIMEOUT
        )
    )
    return {"wall_seconds": round(wall, 3), "cpu_seconds": round(cpu, 3)}


if __name__ == "__main__":
    main()
