"""Ray node groups on separate network hosts against the local backend on the same cores (root).

    cluster_bench.py                          # throughput over a LAN-like and a WAN-like link
    cluster_bench.py --auth --repeats 5       # two groups on the LAN-like link with Ray's token and without
    cluster_bench.py --learn --seeds 5        # Acrobot's and LunarLander's presets to a confirmed solve
    cluster_bench.py --learn --env Acrobot-v1 # one of them
    cluster_bench.py --learn --env Acrobot-v1 --intervals 10,50   # the cluster at each --sync-interval
    cluster_bench.py --learn --env Acrobot-v1 --group-options "--lr 1e-3"   # the cluster's runs with these

The hosts are netns_cluster.py's: a head, where the trainer and the global model run and whose Ray node
offers no CPUs, and two worker hosts, each link unshaped (the kernel's veth) or shaped as a LAN (1 ms,
1 Gbit/s) or a WAN (20 ms, 100 Mbit/s) one way (with netem, or on a kernel without it, as this project's
machine, with link_shaper.py in user space: its CPU seconds are reported with each run). They share this
machine's cores: a cluster here is the local backend's work spread over hosts, plus what the network and
Ray add, which is what is measured. So that the hosts share the cores as the local backend's workers do,
each group runs its share of them at once (`--active-workers`, cores / groups); on hosts of their own a
group would take turns on its host's cores.

Throughput: CartPole-v1's pipeline (8 processes x 32 envs, t-max 10, no replay, no evaluator), each run
stopped by SIGINT after --seconds: `--backend local` on this machine, then, for each link and each
--sync-interval of --intervals, `--backend ray --nodes 2 --num-processes 4` on the hosts, interleaved;
steady env steps/s from metrics.csv and its ratio to the local backend's, each group's env steps
(summary.json's group_figures), and the bytes the worker hosts' links sent and received over the run per
exchange with the global model (their interface counters). Beside them the env-alone rate.

Authentication (--auth): the throughput runs' two groups on the LAN-like hosts at the trainer's
--sync-interval, on a cluster started with token authentication and on one started without (the trainer
joins that with --ray-allow-unauthenticated), a new cluster for each run as the two cannot be up at once,
their order swapped every repeat; the local backend once a repeat, the machine's drift beside them.

Learning (--learn): each preset over --seeds, `--num-processes 8` locally against two groups of 4 on
the LAN-like hosts at each --sync-interval of --intervals (default: the trainer's), to a confirmed solve
or the env's timeout: runs solved, env steps and seconds.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

from a3c.config.settings import Config

from harness.launch import environment, print_table, read_summary, run_timed, save_json, trainer_command
from harness.records import write
from harness.spreads import solved_spread
from harness.trainer_runs import learning_record, make_command, speed_record
from scale.netns_cluster import cluster
from scale.netns_hosts import PREFIX, host_names, in_namespace, link_bytes, shaper_cpu_seconds
from speed.ray_runs import train_for
from speed.throughput import env_ceiling

HEAD = PREFIX + "head"
LAN = "LAN (1 ms, 1 Gbit/s)"
LINKS = {"unshaped": (0.0, 0.0), LAN: (1.0, 1000.0), "WAN (20 ms, 100 Mbit/s)": (20.0, 100.0)}
WORKERS, ENVS, GROUPS = 8, 32, 2
SHARE_ACTIVE = max(1, (os.cpu_count() or 1) // GROUPS)  # each host's share of the cores the hosts share
LEARN = {"Acrobot-v1": 600.0, "LunarLander-v3": 1800.0}  # the env, and the timeout of a run
# the contenders as the records name them
LOCAL, ON_GROUPS = "a3c, local backend (8 processes)", "a3c, 2 node groups x 4"
COMMAND = make_command("bench-cluster", "CLUSTER_ARGS", sys.argv[1:])


def groups_for(seconds: float, head: str, group_active: int, **options) -> dict:
    """Two node groups of the throughput's pipeline on the hosts of the cluster at `head`, for `seconds`."""
    return train_for(
        seconds,
        WORKERS // GROUPS,
        ENVS,
        in_namespace(HEAD, []),
        backend="ray",
        ray_address=head,
        nodes=GROUPS,
        active_workers=group_active,
        **options,
    )


def throughput(seconds: float, intervals: list[int], repeats: int, group_active: int) -> dict:
    """Env steps/s of the local backend and of the cluster at each link and sync interval, interleaved."""
    rates: dict[str, list[dict]] = {"local": []}
    for name, (delay_ms, rate_mbit) in LINKS.items():
        with cluster(GROUPS, WORKERS // GROUPS, 0, delay_ms, rate_mbit) as head:
            workers = host_names(GROUPS)[1:]
            for _ in range(repeats):
                rates["local"].append(train_for(seconds, WORKERS, ENVS))
                for interval in intervals:
                    before, shaper_before = [link_bytes(host) for host in workers], shaper_cpu_seconds()
                    run = groups_for(seconds, head, group_active, sync_interval=interval)
                    moved = sum(sum(after) - sum(start) for after, start in zip(map(link_bytes, workers), before))
                    syncs = sum(group["syncs"] for group in run["summary"].get("group_figures", []))
                    run["bytes_per_sync"] = moved / max(syncs, 1)
                    run["shaper_cpu_seconds"] = shaper_cpu_seconds() - shaper_before
                    rates.setdefault(f"{name}, --sync-interval {interval}", []).append(run)
    return rates


def authentication_cost(seconds: float, repeats: int, group_active: int) -> dict:
    """Env steps/s of two groups on the LAN-like hosts with Ray's token and without, alternated; the local
    backend once a repeat."""
    rates: dict[str, list[dict]] = {"local": []}
    delay_ms, rate_mbit = LINKS[LAN]
    for repeat in range(repeats):
        rates["local"].append(train_for(seconds, WORKERS, ENVS))
        for auth in (True, False) if repeat % 2 == 0 else (False, True):
            with cluster(GROUPS, WORKERS // GROUPS, 0, delay_ms, rate_mbit, auth=auth) as head:
                run = groups_for(seconds, head, group_active, **({} if auth else {"ray_allow_unauthenticated": True}))
            name = f"{LAN}, {'token authentication' if auth else 'no authentication'}"
            rates.setdefault(name, []).append(run)
    return rates


def solve_on(env: str, seed: int, host: list[str], contender: str, extra: Sequence[str] = (), **options) -> dict:
    """A run of `env`'s preset to a confirmed solve or the timeout, launched behind `host`; its record written."""
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        command = trainer_command(run_dir, env=env, seed=seed, **options) + ["--no-tensorboard", *extra]
        wall, _, _ = run_timed([*host, *command], LEARN[env])
        summary = read_summary(run_dir)
        budget = {"minutes": LEARN[env] / 60}
        write(
            learning_record(
                run_dir,
                launch_seconds=wall,
                suite="clusters",
                contender=contender,
                seed=seed,
                command=COMMAND,
                budget=budget,
                settings=options,
            )
        )
    return {"solved": summary["solved"], "wall_seconds": wall, "env_steps": summary["solved_env_steps"]}


def learning(envs: list[str], seeds: range, intervals: list[int], extra: list[str], group_active: int) -> dict:
    """Each preset of `envs`, locally and on the LAN-like hosts at each sync interval (with the trainer options
    `extra`), interleaved by seed."""
    runs: dict[str, dict[str, list]] = {}
    delay_ms, rate_mbit = LINKS[LAN]
    with cluster(GROUPS, WORKERS // GROUPS, 0, delay_ms, rate_mbit) as head:
        for env in envs:
            by = runs.setdefault(env, {"local, 8 processes": []})
            for seed in seeds:
                by["local, 8 processes"].append(solve_on(env, seed, [], LOCAL, num_processes=WORKERS))
                for interval in intervals:
                    words = [f", --sync-interval {interval}"] if interval != Config().sync_interval else []
                    cluster_run = solve_on(
                        env,
                        seed,
                        in_namespace(HEAD, []),
                        "".join([ON_GROUPS, f", {LAN}", *words, *(f", {word}" for word in extra)]),
                        backend="ray",
                        ray_address=head,
                        nodes=GROUPS,
                        num_processes=WORKERS // GROUPS,
                        sync_interval=interval,
                        active_workers=group_active,
                        extra=extra,
                    )
                    active = group_active or "a turn a core"
                    name = " ".join(
                        [f"2 groups x 4 ({active} active) on the LAN hosts, --sync-interval {interval}", *extra]
                    )
                    by.setdefault(name, []).append(cluster_run)
    return runs


def write_rates(rates: dict, env_alone: float, first_seed: int, seconds: float) -> None:
    """The records of runs timed once a repeat each (seeded by the repeat from `first_seed`), each against the
    local backend's run of its repeat."""
    for name, runs in rates.items():
        contender = LOCAL if name == "local" else f"{ON_GROUPS}, {name}"
        for repeat, (run, local) in enumerate(zip(runs, rates["local"])):
            rate = run["env_steps_per_second"]
            ratio = rate / local["env_steps_per_second"]
            fields = dict(suite="clusters", env="CartPole-v1", contender=contender, seed=first_seed + repeat)
            write(
                speed_record(
                    steps_per_second=rate,
                    env_alone=env_alone,
                    ratio=ratio,
                    command=COMMAND,
                    budget={"minutes": seconds / 60},
                    stop_reason=run["stop_reason"],
                    **fields,
                )
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="each throughput run, from launch")
    parser.add_argument(
        "--intervals", help="the --sync-interval values, comma-separated (default 10,50,200; --learn: the trainer's)"
    )
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--group-active",
        type=int,
        default=SHARE_ACTIVE,
        help="each group's --active-workers (default: cores / groups, the hosts' share; 0: a turn a core each)",
    )
    parser.add_argument("--learn", action="store_true", help="the presets' learning instead of the throughput")
    parser.add_argument("--auth", action="store_true", help="the throughput with Ray's token against without")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument(
        "--first-seed", type=int, default=0, help="the first seed (--learn), or the first repeat's number (--auth)"
    )
    parser.add_argument("--env", action="append", choices=list(LEARN), help="with --learn: one preset; repeat for more")
    parser.add_argument(
        "--group-options", default="", help='with --learn: trainer options of the cluster runs, e.g. "--lr 1e-3"'
    )
    parser.add_argument("--out", help="the results file's name under benchmarks/results/")
    args = parser.parse_args()
    info = environment()
    default_intervals = str(Config().sync_interval) if args.learn else "10,50,200"
    intervals = [int(n) for n in (args.intervals or default_intervals).split(",")]
    if args.learn:
        seeds = range(args.first_seed, args.first_seed + args.seeds)
        runs = learning(args.env or list(LEARN), seeds, intervals, shlex.split(args.group_options), args.group_active)
        rows = [
            [
                env,
                name,
                f"{sum(run['solved'] for run in found)}/{len(found)}",
                solved_spread(found, "env_steps", ",.0f"),
            ]
            for env, by in runs.items()
            for name, found in by.items()
        ]
        print_table(["env", "contender", "solved", "env steps to solve, median (range)"], rows)
        save_json(args.out or "cluster-learn", {**info, "runs": runs})
        return
    env_alone = env_ceiling(ENVS, 2.0)
    if args.auth:
        rates = authentication_cost(args.seconds, args.repeats, args.group_active)
        write_rates(rates, env_alone, args.first_seed, args.seconds)
    else:
        rates = throughput(args.seconds, intervals, args.repeats, args.group_active)
    local = statistics.median(run["env_steps_per_second"] for run in rates["local"])
    print(f"\nenv alone (random actions, {ENVS} envs a process, one per core): {env_alone:,.0f} steps/s")
    rows = []
    for name, runs in rates.items():
        rate = statistics.median(run["env_steps_per_second"] for run in runs)
        per_sync = [run["bytes_per_sync"] for run in runs if "bytes_per_sync" in run]
        groups = [group["env_steps"] for run in runs for group in run["summary"].get("group_figures", [])]
        shaper = [run["shaper_cpu_seconds"] / args.seconds for run in runs if run.get("shaper_cpu_seconds")]
        rows.append(
            [
                name,
                f"{rate:,.0f}",
                f"{rate / local:.2f}",
                f"{statistics.median(per_sync) / 1e3:,.1f} kB" if per_sync else "",
                f"{min(groups):,} - {max(groups):,}" if groups else "",
                f"{statistics.median(shaper):.2f}" if shaper else "",
            ]
        )
    headers = ["backend", "env steps/s", "x local", "link bytes per sync", "env steps a group", "shaper cores"]
    print_table(headers, rows)
    default_name = "cluster-auth" if args.auth else "cluster"
    save_json(args.out or default_name, {**info, "env_alone_steps_per_second": env_alone, "rates": rates})


if __name__ == "__main__":
    main()
