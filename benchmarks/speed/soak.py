"""Soak: a long CartPole run (the evaluator on, no target), sampled every minute for memory and throughput.

Each minute: the PSS of every process of the run (the trainer and its children: the workers, the
evaluator, multiprocessing's helpers) and the run's env steps/s over that minute (metrics.csv).
Goal: after the first --settle minutes, no process grows by more than 10% and every minute's throughput
stays within 10% of the median. Beside the throughput, the env alone (random actions, one process a core).
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

import matplotlib.pyplot as plt
import numpy as np
import psutil

from harness.launch import environment, finish, print_table, save_results, start, trainer_command
from speed.throughput import env_ceiling

ENV = "CartPole-v1"
MB = 2**20
LIMIT = 0.10  # the goal: growth and throughput spread within 10%


def last_row(run_dir: Path) -> tuple[int, float] | None:
    """(env steps, wall seconds) of the newest row of metrics.csv."""
    try:
        with open(run_dir / "metrics.csv", newline="") as file:
            rows = list(csv.DictReader(file))
    except FileNotFoundError:
        return None
    return (int(rows[-1]["env_steps"]), float(rows[-1]["wall_seconds"])) if rows else None


def evaluations_between(run_dir: Path, start: float, end: float) -> list[float]:
    """Mean returns of the evaluations logged in eval.csv between wall seconds `start` and `end`."""
    try:
        with open(run_dir / "eval.csv", newline="") as file:
            return [float(r["mean_return"]) for r in csv.DictReader(file) if start < float(r["wall_seconds"]) <= end]
    except FileNotFoundError:
        return []


def pss_by_pid(pid: int) -> dict[int, float]:
    """PSS in MB of the process `pid` and of all its descendants."""
    sizes = {}
    try:
        main = psutil.Process(pid)
        processes = [main] + main.children(recursive=True)
    except psutil.NoSuchProcess:
        return sizes
    for process in processes:
        try:
            sizes[process.pid] = process.memory_full_info().pss / MB
        except psutil.NoSuchProcess:
            pass
    return sizes


def growth_after(samples: list[dict], settle: int) -> dict[int, float]:
    """Each process's largest PSS after minute `settle`, over its PSS at that minute, minus 1."""
    base = samples[settle]["pss"]
    return {pid: max(s["pss"].get(pid, 0.0) for s in samples[settle:]) / size - 1 for pid, size in base.items()}


def plot(samples: list[dict], ceiling: float):
    figure, (rate_axes, memory_axes) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    minutes = [s["minute"] for s in samples]
    rate_axes.plot(minutes, [s["steps_per_second"] for s in samples], "o-", label="trainer")
    rate_axes.axhline(ceiling, color="grey", linestyle="--", label="env alone, one process a core")
    rate_axes.set_ylabel("env steps / s")
    rate_axes.legend(fontsize=8)
    for pid in samples[0]["pss"]:
        memory_axes.plot(minutes, [s["pss"].get(pid) for s in samples], label=str(pid))
    memory_axes.set_xlabel("minute")
    memory_axes.set_ylabel("PSS, MB (one line a process)")
    rate_axes.set_title(f"Soak: {ENV}, {os.cpu_count()} cores")
    for axes in (rate_axes, memory_axes):
        axes.grid(alpha=0.3)
    return figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=int, default=30)
    parser.add_argument("--settle", type=int, default=2, help="minutes of start-up left out of the goal")
    parser.add_argument("--processes", type=int, default=8)
    args = parser.parse_args()
    info = environment()
    ceiling = env_ceiling(1, 3.0)
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        process = start(
            trainer_command(
                run_dir,
                env=ENV,
                num_processes=args.processes,
                target_return="none",
                max_steps=10**12,
                print_interval=3600,
            )
        )
        started = time.monotonic()
        samples, previous = [], None
        for minute in range(1, args.minutes + 1):
            time.sleep(max(0.0, started + 60 * minute - time.monotonic()))
            row, pss = last_row(run_dir), pss_by_pid(process.pid)
            if process.poll() is not None:
                raise SystemExit(f"the run ended early:\n{finish(process, 1)[0][-2000:]}")
            rate = (row[0] - previous[0]) / (row[1] - previous[1]) if previous and row else float("nan")
            # the greedy policy's return: the better it plays, the longer the evaluator's episodes and the less
            # of the cores is left to the workers
            evals = evaluations_between(run_dir, previous[1] if previous else 0.0, row[1] if row else 0.0)
            eval_return = statistics.fmean(evals) if evals else float("nan")
            samples.append(
                {
                    "minute": minute,
                    "steps_per_second": rate,
                    "env_steps": row and row[0],
                    "pss": pss,
                    "eval_mean_return": eval_return,
                    "evaluations": len(evals),
                }
            )
            print(
                f"  minute {minute}: {rate:,.0f} steps/s, PSS {sum(pss.values()):,.0f} MB "
                f"over {len(pss)} processes, {len(evals)} evaluations, mean return {eval_return:.0f}",
                flush=True,
            )
            previous = row
        finish(process, timeout=1)  # SIGINT: the trainer stops cleanly

    settled = samples[args.settle :]
    rates = [s["steps_per_second"] for s in settled]
    median_rate = statistics.median(rates)
    spread = max(abs(rate / median_rate - 1) for rate in rates)
    growth = growth_after(samples, args.settle - 1)
    worst_pid = max(growth, key=growth.get)
    print(
        f"\n{ENV}, {args.processes} processes, {args.minutes} minutes; {info['cores']} cores; "
        f"env alone {ceiling:,.0f} steps/s"
    )
    print_table(
        ["minute", "steps/s", "PSS total MB", "PSS largest process MB", "processes", "evaluations", "eval mean return"],
        [
            [
                s["minute"],
                f"{s['steps_per_second']:,.0f}",
                f"{sum(s['pss'].values()):,.0f}",
                f"{max(s['pss'].values()):,.0f}",
                len(s["pss"]),
                s["evaluations"],
                f"{s['eval_mean_return']:.0f}",
            ]
            for s in samples
        ],
    )
    correlation = float(np.corrcoef(rates, [s["eval_mean_return"] for s in settled])[0, 1])
    print(
        f"\nafter minute {args.settle}: throughput median {median_rate:,.0f} steps/s, largest deviation "
        f"{spread:.1%} ({'within' if spread <= LIMIT else 'OUTSIDE'} 10%); largest PSS growth of a process "
        f"{growth[worst_pid]:.1%} (pid {worst_pid}; {'within' if growth[worst_pid] <= LIMIT else 'OUTSIDE'} 10%); "
        f"correlation of a minute's throughput with its evaluations' mean return {correlation:+.2f}"
    )
    save_results(
        "soak",
        {
            **info,
            "env": ENV,
            "processes": args.processes,
            "minutes": args.minutes,
            "settle_minutes": args.settle,
            "env_alone_steps_per_second": ceiling,
            "samples": samples,
            "median_steps_per_second": median_rate,
            "largest_deviation": spread,
            "growth_after_settle": growth,
            "throughput_eval_correlation": correlation,
        },
        plot(samples, ceiling),
    )


if __name__ == "__main__":
    main()
