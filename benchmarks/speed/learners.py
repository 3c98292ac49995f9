"""Env steps per second of the numpy learner against the autograd learner, side by side, on CartPole-v1.

The same cells as throughput.py (real training through the CLI, no evaluator, budgets sized
from a one-process calibration run to last about --seconds), for the stock LSTM network and a
feed-forward one under each learner, and a user's own torch module (autograd only). Beside
them, the env-only ceiling measured in the same invocation.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

import matplotlib.pyplot as plt

from harness.launch import environment, print_table, save_results
from speed.throughput import CALIBRATION_STEPS, env_ceiling, measure_cell, train_once

NETWORKS = {
    "LSTM 64, numpy": {},
    "LSTM 64, autograd": {"learner": "torch"},
    "feed-forward 128,128, numpy": {"core": "none", "hidden_sizes": "128,128"},
    "feed-forward 128,128, autograd": {"core": "none", "hidden_sizes": "128,128", "learner": "torch"},
    "--model examples.custom_model:mlp (autograd)": {"model": "examples.custom_model:mlp"},
}
PROCESSES = 8


def plot(rows: list[dict], envs: list[int], ceiling: float):
    figure, axes = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / len(NETWORKS)
    for i, name in enumerate(NETWORKS):
        rates = [
            next(r["steady_median"] for r in rows if r["network"] == name and r["envs_per_process"] == e) for e in envs
        ]
        axes.bar([x + i * width for x in range(len(envs))], rates, width, label=name)
    axes.axhline(ceiling, color="grey", linestyle="--", label="env-only ceiling (vectorised)")
    axes.set_xticks(
        [x + width * (len(NETWORKS) - 1) / 2 for x in range(len(envs))],
        labels=[f"{PROCESSES} x {e} envs" for e in envs],
    )
    axes.set_yscale("log")
    axes.set_ylabel("env steps / s (steady state, median)")
    axes.set_title(f"numpy learner against autograd, CartPole-v1, {os.cpu_count()} cores")
    axes.legend(fontsize=7)
    axes.grid(alpha=0.3, axis="y")
    return figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0, help="target length of one training run")
    parser.add_argument("--envs", type=int, nargs="+", default=[8, 32], help="envs per process of each cell")
    args = parser.parse_args()
    info = environment()

    rows = []
    for envs in args.envs:
        for name, options in NETWORKS.items():
            single = train_once(1, envs, CALIBRATION_STEPS * envs, **options)["steady"]
            max_steps = int(args.seconds * single * min(PROCESSES, os.cpu_count()))
            rows.append({"network": name, **measure_cell(PROCESSES, envs, max_steps, args.repeats, **options)})
    ceiling = env_ceiling(max(args.envs), args.seconds / 2)

    print(
        f"\nCartPole-v1 env steps/s, {PROCESSES} processes, median of {args.repeats}; {info['cores']} cores, "
        f"load average at start {info['load_average_at_start'][0]:.2f}"
    )
    table = []
    for row in rows:
        numpy_rate = next(
            r["steady_median"]
            for r in rows
            if r["network"] == "LSTM 64, numpy" and r["envs_per_process"] == row["envs_per_process"]
        )
        table.append(
            [
                f"{PROCESSES} x {row['envs_per_process']}",
                row["network"],
                f"{row['steady_median']:,.0f}",
                f"{row['steady_median'] / numpy_rate:.2f}",
            ]
        )
    table.append(["", f"env-only ceiling, vectorised {max(args.envs)} envs/process", f"{ceiling:,.0f}", ""])
    print_table(["cell", "network, learner", "steady steps/s", "/ LSTM numpy"], table)
    save_results(
        "learners",
        {**info, "repeats": args.repeats, "target_seconds": args.seconds, "cells": rows, "ceiling_vectorised": ceiling},
        plot(rows, args.envs, ceiling),
    )


if __name__ == "__main__":
    main()
