"""The Ray backend's node groups against the local backend on CartPole-v1, and a model of a cluster from the figures.

One local Ray instance, started as the trainer starts its own, serves every measurement:
1. Throughput: whole runs through the CLI, --backend local against --backend ray with one node
   group, the same 2 workers x 8 envs (the throughput benchmark's settings), no evaluator,
   interleaved, each stopped by SIGINT after --seconds; steady env steps/s from metrics.csv and
   the global-model calls of summary.json. Beside them the env-alone rate (random actions, one
   process per core).
2. The global model's capacity: pusher actors call GlobalModel.exchange in a loop with deltas of
   CartPole's model and of a 1M-parameter model (1 and 2 pushers, one shard): calls/s one shard
   sustains, and from the two sizes its cost per call and per byte.
3. The trainer's capacity: Update messages/s its metrics writer handles (every update of every
   group passes through it).
4. Learning: CartPole's preset over --seeds, --backend local with 2 workers against 2 node
   groups of 1 worker for each --sync-interval: runs solved, env steps and seconds to solve, and
   calls to the global model per 1,000 env steps against updates per 1,000 env steps (the
   round trips per update of the parameter server this backend replaced).
Then the scaling model (ray_model.py): predicted env steps/s for 1 to 64 nodes and what limits it. The runs
through the CLI are ray_runs.py's, which scale/cluster_bench.py runs on its hosts too.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

import numpy as np
import ray

from harness.launch import REPO, environment, print_table, save_results
from harness.spreads import solved_spread
from speed.ray_model import plot, print_scaling, scaling
from speed.ray_runs import ENV, ENVS, WORKERS, median_of, solve, train_for
from speed.throughput import env_ceiling

sys.path.insert(0, str(REPO))  # the a3c package, for the measurements that drive its pieces directly
from a3c.backends.global_model import CALL_TIMEOUT_SECONDS, GlobalModel  # noqa: E402
from a3c.backends.ray import connect  # noqa: E402
from a3c.config.settings import Config  # noqa: E402
from a3c.envs.make import env_spec  # noqa: E402
from a3c.learn.learner import RolloutReport  # noqa: E402
from a3c.parallel.messages import Update  # noqa: E402
from a3c.parallel.processes import shared_model  # noqa: E402
from a3c.run.console import Console  # noqa: E402
from a3c.run.metrics import MetricsSettings, MetricsWriter  # noqa: E402

LARGE_MODEL = 1_000_000  # parameters: the size of a small Atari network


class Pusher:
    """Exchanges one fixed delta with the global model as fast as the answers come: no rollout work."""

    def __init__(self, global_model: GlobalModel, size: int):
        self.global_model = global_model
        self.delta = np.zeros(size, dtype=np.float32)

    def exchange_for(self, seconds: float) -> int:
        count, deadline = 0, time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.global_model.exchange([self.delta], 0)
            count += 1
        return count


def exchanges_per_second(size: int, pushers: int, seconds: float) -> float:
    global_model = GlobalModel.create(ray, [np.zeros(size, dtype=np.float32)], 0, shards=1)
    actors = [ray.remote(num_cpus=1)(Pusher).remote(global_model, size) for _ in range(pushers)]
    counts = ray.get([actor.exchange_for.remote(seconds) for actor in actors], timeout=seconds + CALL_TIMEOUT_SECONDS)
    for actor in actors:
        ray.kill(actor)
    global_model.kill()
    return sum(counts) / seconds


def messages_per_second(count: int = 50_000) -> float:
    """Update messages/s through the trainer's metrics writer, rows and all."""
    report = RolloutReport(80, [20.0], [20], 0.1, 0.2, 0.3, 1.0)
    with tempfile.TemporaryDirectory() as tmp:
        settings = MetricsSettings(Path(tmp), 20_000, 3600, lambda steps, seconds: 0.0, lambda steps, seconds: 1e-3)
        writer = MetricsWriter(settings, time.monotonic(), Console(print, live=False))
        began = time.perf_counter()
        for _ in range(count):
            writer.handle(Update(0, report))
        elapsed = time.perf_counter() - began
        writer.close()
    return count / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=15.0, help="length of one throughput run, start-up included")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument(
        "--sync-interval",
        type=int,
        action="append",
        help="for the learning runs (repeatable; default: the trainer's default)",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds a learning run may take")
    args = parser.parse_args()
    intervals = args.sync_interval or [Config().sync_interval]
    info = environment()
    env_alone = env_ceiling(ENVS, 2.0)
    config = Config(env=ENV, num_processes=WORKERS, envs_per_process=ENVS, backend="ray", nodes=2)
    size = len(shared_model(config, env_spec(ENV))[1].params[0])
    cluster = connect(config)
    address = dict(backend="ray", ray_address=cluster.address)
    try:
        capacity = {
            f"{params}x{pushers}": statistics.median(
                exchanges_per_second(params, pushers, 3.0) for _ in range(args.repeats)
            )
            for params in (size, LARGE_MODEL)
            for pushers in (1, 2)
        }
        local, ray_runs = [], []
        for _ in range(args.repeats):  # interleaved, so machine noise hits both alike
            local.append(train_for(args.seconds))
            ray_runs.append(train_for(args.seconds, nodes=1, **address))
        learning = {"local, 2 workers": [solve(seed, args.timeout, num_processes=2) for seed in range(args.seeds)]}
        for interval in intervals:
            learning[f"ray, 2 groups x 1 worker, --sync-interval {interval}"] = [
                solve(seed, args.timeout, num_processes=1, nodes=2, sync_interval=interval, **address)
                for seed in range(args.seeds)
            ]
    finally:
        cluster.disconnect()
    messages = messages_per_second()

    # a call's cost: a fixed part and a part per byte, from the two model sizes (one pusher)
    small, large = 1 / capacity[f"{size}x1"], 1 / capacity[f"{LARGE_MODEL}x1"]
    per_byte = (large - small) / (8 * (LARGE_MODEL - size))  # a delta in, the weights out: 8 bytes a parameter
    results = {
        "env_alone_steps_per_second": env_alone,
        "model_parameters": size,
        "capacity": capacity,
        "call_ms": 1000 * (small - per_byte * 8 * size),
        "ms_per_megabyte": 1000 * per_byte * 1e6,
        "trainer_messages_per_second": messages,
        "local_env_steps_per_second": median_of(local, "env_steps_per_second"),
        "ray_env_steps_per_second": median_of(ray_runs, "env_steps_per_second"),
        "ray_updates_per_1000_steps": median_of(ray_runs, "updates_per_1000_steps"),
        "ray_calls_per_1000_steps": median_of(ray_runs, "calls_per_1000_steps"),
        "learning": learning,
        "model_sync_interval": Config().sync_interval,
    }
    results["ray_over_local"] = results["ray_env_steps_per_second"] / results["local_env_steps_per_second"]
    results["scaling"] = scaling(
        results["ray_env_steps_per_second"],
        results["ray_updates_per_1000_steps"] / 1000,
        Config().sync_interval,
        capacity[f"{size}x1"],
        messages,
        8 * size,
    )

    print(
        f"\n{ENV}; {info['cores']} cores, load average at start {info['load_average_at_start'][0]:.2f}; "
        f"env alone (random actions, {ENVS} envs a process, one per core): {env_alone:,.0f} steps/s"
    )
    print(f"\nThroughput, {WORKERS} workers x {ENVS} envs, median of {args.repeats}:")
    print_table(
        ["backend", "env steps/s", "x local", "updates / 1000 steps", "global-model calls / 1000 steps"],
        [
            [
                "local",
                f"{results['local_env_steps_per_second']:,.0f}",
                "1.00",
                f"{median_of(local, 'updates_per_1000_steps'):.1f}",
                "",
            ],
            [
                "ray, 1 node group",
                f"{results['ray_env_steps_per_second']:,.0f}",
                f"{results['ray_over_local']:.2f}",
                f"{results['ray_updates_per_1000_steps']:.1f}",
                f"{results['ray_calls_per_1000_steps']:.2f}",
            ],
        ],
    )
    print(f"\nGlobal model, one shard, exchanges/s (median of {args.repeats}):")
    print_table(
        ["parameters", "1 pusher", "2 pushers"],
        [
            [f"{params:,}", f"{capacity[f'{params}x1']:,.0f}", f"{capacity[f'{params}x2']:,.0f}"]
            for params in (size, LARGE_MODEL)
        ],
    )
    print(
        f"a call costs {results['call_ms']:.2f} ms plus {results['ms_per_megabyte']:.2f} ms per MB moved; "
        f"the trainer's metrics writer handles {messages:,.0f} update messages/s"
    )
    print(f"\nLearning, CartPole-v1 preset, seeds 0-{args.seeds - 1} (median (range)):")
    rows = []
    for name, runs in learning.items():
        calls = median_of(runs, "calls_per_1000_steps")
        updates = median_of(runs, "updates_per_1000_steps")
        rows.append(
            [
                name,
                f"{sum(run['solved'] for run in runs)}/{len(runs)}",
                solved_spread(runs, "env_steps", ",.0f"),
                solved_spread(runs, "wall_seconds", ".1f"),
                f"{updates:.1f}",
                f"{calls:.2f}" if calls else "",
                f"{updates / calls:.0f}x" if calls else "",
            ]
        )
    print_table(
        [
            "contender",
            "solved",
            "env steps to solve",
            "seconds",
            "updates / 1000 steps",
            "global calls / 1000 steps",
            "fewer calls",
        ],
        rows,
    )
    print_scaling(results)
    data = {
        **info,
        "env": ENV,
        "workers": WORKERS,
        "envs_per_process": ENVS,
        "repeats": args.repeats,
        "seconds": args.seconds,
        "seeds": args.seeds,
        "ray_version": ray.__version__,
        **results,
        "runs": {"local": local, "ray": ray_runs},
    }
    save_results("ray", data, plot(results))


if __name__ == "__main__":
    main()
