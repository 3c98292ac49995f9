"""The scaling model of ray_bench.py: from one node group's measured rate, the global model's capacity (one shard)
and the trainer's, the env steps a second of 1 to 64 nodes and what limits them; its table and the figure."""

from __future__ import annotations

import os

import matplotlib.pyplot as plt

from harness.launch import print_table
from speed.ray_runs import ENVS, WORKERS

NODES = [1, 2, 4, 8, 16, 32, 64]


def scaling(
    node_rate: float, updates_per_step: float, sync_interval: int, exchanges: float, messages: float, sync_bytes: int
) -> list[dict]:
    """Predicted cluster rate by node count: nodes x one node's rate until the global model (one shard) or
    the trainer's metrics writer saturates."""
    rows = []
    for nodes in NODES:
        wanted = nodes * node_rate
        syncs = wanted * updates_per_step / sync_interval  # exchanges/s the groups ask of the global model
        load = {"global model": syncs / exchanges, "trainer": wanted * updates_per_step / messages}
        limit = max(load.values())
        rows.append(
            {
                "nodes": nodes,
                "env_steps_per_second": wanted / max(1.0, limit),
                "global_model_load": load["global model"],
                "trainer_load": load["trainer"],
                "limited_by": max(load, key=load.get) if limit > 1 else "-",
                "megabytes_per_second_per_node": node_rate * updates_per_step / sync_interval * sync_bytes / 1e6,
            }
        )
    return rows


def print_scaling(results: dict) -> None:
    """The model's table: one node is ray_bench.py's ray row."""
    print(
        f"\nScaling model (--sync-interval {results['model_sync_interval']}, one shard, one node = the ray row above):"
    )
    print_table(
        ["nodes", "env steps/s", "global-model load", "trainer load", "limited by", "MB/s per node"],
        [
            [
                row["nodes"],
                f"{row['env_steps_per_second']:,.0f}",
                f"{row['global_model_load']:.2f}",
                f"{row['trainer_load']:.2f}",
                row["limited_by"],
                f"{row['megabytes_per_second_per_node']:.2f}",
            ]
            for row in results["scaling"]
        ],
    )


def plot(results: dict):
    figure, (rates, model) = plt.subplots(1, 2, figsize=(11, 4))
    rates.bar(
        ["env alone\n(random actions)", "--backend local", "--backend ray\n1 node group"],
        [
            results["env_alone_steps_per_second"],
            results["local_env_steps_per_second"],
            results["ray_env_steps_per_second"],
        ],
        color=["grey", "C2", "C1"],
    )
    rates.set_ylabel("env steps / s (median)")
    rates.set_title(f"{WORKERS} workers x {ENVS} envs, {os.cpu_count()} cores", fontsize=9)
    nodes = [row["nodes"] for row in results["scaling"]]
    model.loglog(nodes, [row["env_steps_per_second"] for row in results["scaling"]], "o-", label="predicted")
    model.loglog(
        nodes, [n * results["ray_env_steps_per_second"] for n in nodes], ":", color="grey", label="nodes x one node"
    )
    model.set_xlabel("nodes")
    model.set_ylabel("env steps / s")
    model.set_title(f"scaling model, --sync-interval {results['model_sync_interval']}", fontsize=9)
    model.legend(fontsize=8)
    figure.tight_layout()
    return figure
