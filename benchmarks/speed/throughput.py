"""Env steps per second of the trainer on CartPole-v1, by --num-processes x --envs-per-process.

Each cell trains for real through the CLI (no evaluator, no early stop) with a step budget sized
from a short calibration run so that it lasts about --seconds. Reported per cell, as the median
of --repeats runs: the steady-state rate from metrics.csv (rows after the first 20% of the
budget, the row written at shutdown left out) and the whole-run rate of summary.json. Beside
them: the env-only ceiling (random actions, one process per core) and the memory of the process
tree of an 8-process run. Each run writes its record (harness/records.py, suite throughput) as it ends, its rate
beside the env alone: "a3c, P processes x E envs" (--quick writes none: a smoke run's figures are no results).
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

import matplotlib.pyplot as plt
import psutil

from harness.launch import (
    CLASSIC_A3C,
    DEFAULTS_WITHOUT_PRESET,
    environment,
    finish,
    print_table,
    read_summary,
    run_timed,
    save_results,
    start,
    steady_rate,
    trainer_command,
)
from harness.records import write
from harness.trainer_runs import env_ceiling, speed_record

ENV = "CartPole-v1"
CALIBRATION_STEPS = 2_000  # per env of the single calibration process
WARMUP_FRACTION = 0.2  # of the budget: rows before it are start-up
ROWS_PER_RUN = 40
MEMORY_SAMPLE_SECONDS = 0.5
MB = 2**20
# The Makefile's target passes no arguments: a run with some is the script's
COMMAND = (
    shlex.join(["python", "benchmarks/speed/throughput.py", *sys.argv[1:]]) if sys.argv[1:] else "make bench-throughput"
)


def trainer_options(processes: int, envs: int, max_steps: int, **extra) -> dict:
    """The defaults' t-max and no replay, not CartPole's preset: the pipeline's env-step rate, comparable
    across versions."""
    return (
        dict(
            DEFAULTS_WITHOUT_PRESET,
            env=ENV,
            num_processes=processes,
            envs_per_process=envs,
            max_steps=max_steps,
            target_return="none",
            eval_episodes=0,
            log_interval=max(max_steps // ROWS_PER_RUN, 1),
            print_interval=3600,
        )
        | extra
    )


def train_once(processes: int, envs: int, max_steps: int, **extra) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        wall, _, _ = run_timed(
            trainer_command(run_dir, **trainer_options(processes, envs, max_steps, **extra)), timeout=120
        )
        summary = read_summary(run_dir)
        return {
            "steady": steady_rate(run_dir, WARMUP_FRACTION * max_steps),
            "whole": summary["steps_per_second"],
            "train_seconds": summary["wall_seconds"],
            "process_seconds": round(wall, 3),
            "stop_reason": summary["stop_reason"],
        }


def memory_of(process: psutil.Process) -> dict:
    info = process.memory_full_info()
    return {"rss_mb": info.rss / MB, "uss_mb": info.uss / MB, "pss_mb": info.pss / MB}


def sample_tree(pid: int) -> dict | None:
    """PSS/USS of the trainer and all its children; workers are the children forked from it."""
    try:
        main = psutil.Process(pid)
        children = main.children(recursive=True)
        command = main.cmdline()
        workers = [memory_of(c) for c in children if c.cmdline() == command]
        everyone = [memory_of(main)] + [memory_of(c) for c in children]
    except psutil.NoSuchProcess:
        return None
    if not workers:
        return None
    return {
        "processes": len(everyone),
        "workers": len(workers),
        "total_pss_mb": sum(m["pss_mb"] for m in everyone),
        "total_uss_mb": sum(m["uss_mb"] for m in everyone),
        "main": memory_of(main),
        "worker_median": {k: statistics.median(w[k] for w in workers) for k in workers[0]},
    }


def memory_probe(processes: int, envs: int, max_steps: int) -> dict:
    """Peak PSS of the whole process tree during a run, sampled every MEMORY_SAMPLE_SECONDS."""
    with tempfile.TemporaryDirectory() as tmp:
        process = start(trainer_command(Path(tmp) / "run", **trainer_options(processes, envs, max_steps)))
        samples = []
        while process.poll() is None:
            time.sleep(MEMORY_SAMPLE_SECONDS)
            sample = sample_tree(process.pid)
            if sample is not None:
                samples.append(sample)
        finish(process, timeout=10)
    peak = max(samples, key=lambda s: s["total_pss_mb"])
    return {"num_processes": processes, "envs_per_process": envs, "samples": len(samples), "peak": peak}


def plot(cells: list[dict], ceilings: dict):
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for envs in sorted({c["envs_per_process"] for c in cells}):
        line = [c for c in cells if c["envs_per_process"] == envs]
        axes.plot(
            [c["num_processes"] for c in line],
            [c["steady_median"] for c in line],
            "o-",
            label=f"--envs-per-process {envs}",
        )
    for (label, rate), style in zip(ceilings.items(), ("--", ":")):
        axes.axhline(rate, color="grey", linestyle=style, label=f"env-only ceiling, {label}")
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xticks(sorted({c["num_processes"] for c in cells}), labels=sorted({c["num_processes"] for c in cells}))
    axes.set_xlabel("--num-processes")
    axes.set_ylabel("env steps / s (steady state, median)")
    axes.set_title(f"A3C trainer throughput, {ENV}, {os.cpu_count()} cores")
    axes.legend(fontsize=8)
    axes.grid(alpha=0.3)
    return figure


def cell_contender(processes: int, envs: int, extra: dict) -> str:
    """A cell's name in the results tables."""
    if "t_max" in extra:
        return f"a3c, classic A3C: {envs} env{'s' * (envs != 1)} x t-max {extra['t_max']}"
    return f"a3c, {processes} process{'es' * (processes != 1)} x {envs} env{'s' * (envs != 1)}"


def measure_cell(
    processes: int, envs: int, max_steps: int, repeats: int, *, alone: float | None = None, **extra
) -> dict:
    """A cell's runs, each one's record written as it ends (seeded by its repeat) beside `alone`, the env alone's
    rate (None: no records)."""
    runs = []
    settings = {"num_processes": processes, "envs_per_process": envs, **extra}
    for repeat in range(repeats):
        runs.append(run := train_once(processes, envs, max_steps, **extra))
        if alone is not None:
            fields = dict(suite="throughput", env=ENV, contender=cell_contender(processes, envs, extra), seed=repeat)
            fields |= dict(command=COMMAND, budget={"env_steps": max_steps}, settings=settings)
            write(
                speed_record(steps_per_second=run["steady"], env_alone=alone, stop_reason=run["stop_reason"], **fields)
            )
    cell = {
        "num_processes": processes,
        "envs_per_process": envs,
        **extra,
        "max_steps": max_steps,
        "runs": runs,
        "steady_median": statistics.median(r["steady"] for r in runs),
        "whole_median": statistics.median(r["whole"] for r in runs),
        "train_seconds_median": statistics.median(r["train_seconds"] for r in runs),
        "load_average_1min_after": os.getloadavg()[0],
    }
    print(f"  {processes} x {envs} {extra or ''}: {cell['steady_median']:,.0f} steps/s", flush=True)
    return cell


def cell_label(cell: dict) -> str:
    label = f"{cell['num_processes']} x {cell['envs_per_process']}"
    return label + (f", t-max {cell['t_max']}" if "t_max" in cell else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0, help="target length of one training run")
    parser.add_argument("--quick", action="store_true", help="smoke run: 4 cells, 1 repeat, 2 s runs")
    args = parser.parse_args()
    processes, env_counts, repeats, seconds = [1, 2, 4, 8], [1, 8, 32, 64, 128], args.repeats, args.seconds
    if args.quick:
        processes, env_counts, repeats, seconds = [1, 8], [1, 32], 1, 2.0
    info = environment()

    ceilings = {  # first: each run's record has the env alone beside it
        "plain loop, 1 env/process": env_ceiling(1, seconds / 2),
        f"vectorised, {max(env_counts)} envs/process": env_ceiling(max(env_counts), seconds / 2),
    }
    plain, vectorised = (None, None) if args.quick else ceilings.values()

    single_rates = {}  # envs -> steady steps/s of one process, to size the budgets
    for envs in env_counts:
        single_rates[envs] = train_once(1, envs, CALIBRATION_STEPS * envs)["steady"]
    cells = []
    for num in processes:
        for envs in env_counts:
            max_steps = int(seconds * single_rates[envs] * min(num, os.cpu_count()))
            cells.append(measure_cell(num, envs, max_steps, repeats, alone=plain if envs == 1 else vectorised))
    widest = max(processes)
    classic_rate = train_once(1, 1, CALIBRATION_STEPS, t_max=CLASSIC_A3C["t_max"])["steady"]
    classic_steps = int(seconds * classic_rate * min(widest, os.cpu_count()))
    classic = measure_cell(widest, 1, classic_steps, repeats, alone=plain, t_max=CLASSIC_A3C["t_max"])
    best = max((c for c in cells if c["num_processes"] == widest), key=lambda c: c["steady_median"])
    memory = memory_probe(widest, best["envs_per_process"], best["max_steps"])

    print(
        f"\n{ENV} env steps/s, median of {repeats}; {info['cores']} cores, "
        f"load average at start {info['load_average_at_start'][0]:.2f}"
    )
    print_table(
        ["processes x envs", "max steps", "steady steps/s", "whole-run steps/s", "train s", "load"],
        [
            [
                cell_label(c),
                f"{c['max_steps']:,}",
                f"{c['steady_median']:,.0f}",
                f"{c['whole_median']:,.0f}",
                f"{c['train_seconds_median']:.1f}",
                f"{c['load_average_1min_after']:.1f}",
            ]
            for c in [*cells, classic]
        ]
        + [[f"ceiling: {label}", "", f"{rate:,.0f}", "", "", ""] for label, rate in ceilings.items()],
    )
    peak = memory["peak"]
    print(
        f"\nmemory, {widest} x {best['envs_per_process']} run, peak of {memory['samples']} samples: "
        f"PSS {peak['total_pss_mb']:.0f} MB over {peak['processes']} processes "
        f"(USS sum {peak['total_uss_mb']:.0f} MB)"
    )
    print_table(
        ["process", "RSS MB", "USS MB", "PSS MB"],
        [
            [name, *(f"{m[k]:.0f}" for k in ("rss_mb", "uss_mb", "pss_mb"))]
            for name, m in (("main", peak["main"]), ("worker (median)", peak["worker_median"]))
        ],
    )

    data = {
        **info,
        "env": ENV,
        "repeats": repeats,
        "target_seconds": seconds,
        "single_process_calibration": single_rates,
        "cells": cells,
        "classic": classic,
        "ceilings": ceilings,
        "ceiling_processes": os.cpu_count(),
        "memory": memory,
    }
    save_results("throughput_quick" if args.quick else "throughput", data, plot(cells, ceilings))


if __name__ == "__main__":
    main()
