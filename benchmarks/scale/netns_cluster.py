"""A Ray cluster of separate network hosts on this one machine, made of Linux network namespaces (root only).

    netns_cluster.py run [--workers 2] [--delay-ms 1 --rate-mbit 1000] -- python main.py --ray-address {head} ...
    netns_cluster.py run --no-auth -- ...   # a cluster without authentication (the trainer then refuses it)
    netns_cluster.py down        # remove whatever a killed run left behind

`run` makes a head host and --workers worker hosts (netns_hosts.py: each a namespace of its own with one link to
a bridge in a further namespace, at 10.213.7.1, .2, ..., and a CPU group of its own where the kernel has the cpu
controller); with --delay-ms and --rate-mbit each host's link delays what the host sends and limits its rate
(`tc netem`, or link_shaper.py in user space on a kernel without netem): between two hosts a packet takes the
delay one way, twice it there and back. Ray starts on every host as the clusters guide tells a user (`ray start
--head --node-ip-address ...` on the head, `ray start --address HEAD:6379 --node-ip-address ...` on each worker
host), with token authentication: one token, generated for the cluster into a file that every host reads (the
hosts share this machine's file system, as a cluster's nodes share one), named by RAY_AUTH_TOKEN_PATH beside
RAY_AUTH_MODE=token in the environment of every command run while the cluster is up. Then COMMAND runs on the
head's host, `{head}` in its words replaced by the head's address and port, and its exit code is this script's.
On the way out, normal or not, every process in the hosts' namespaces is ended and the namespaces, with their
links, are deleted; `down` does the same for a run that was killed outright, and says what it found. The hosts
share this machine's cores, memory, disk and /dev/shm: only their network is their own.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

from scale.netns_hosts import (
    PREFIX,
    address,
    host_names,
    in_namespace,
    make_hosts,
    our_namespaces,
    outsider_names,
    processes_named,
    take_down,
)

RAY_PORT = 6379
RAY = str(Path(sys.executable).with_name("ray"))


def start_ray(hosts: list[str], cpus: int, head_cpus: int) -> None:
    """Ray on every host, as the clusters guide starts it: the head first, then each worker host joins it."""
    head = ["start", "--head", "--node-ip-address", address(0), "--port", str(RAY_PORT), "--include-dashboard", "false"]
    ray_on(hosts[0], [*head, "--num-cpus", str(head_cpus)])
    for index, host in enumerate(hosts[1:], start=1):
        join_ray(host, index, cpus)


def join_ray(host: str, index: int, cpus: int) -> None:
    """Worker host `index` joins the head's cluster: `ray start --address`, as the guide says."""
    ray_on(
        host,
        [
            "start",
            "--address",
            f"{address(0)}:{RAY_PORT}",
            "--node-ip-address",
            address(index),
            "--num-cpus",
            str(cpus),
        ],
    )


def raylet_running(host: str) -> bool:
    """Whether Ray's node manager still runs on the host (Ray ends it where it declared the node dead)."""
    return bool(processes_named(host, "raylet"))


def ray_on(host: str, words: list[str]) -> None:
    """A `ray` command on a host; its output in the error if it fails."""
    done = subprocess.run(in_namespace(host, [RAY, *words, "--disable-usage-stats"]), capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"ray {' '.join(words)} on {host} failed:\n{done.stdout}{done.stderr}")


@contextmanager
def cluster_credentials(auth: bool):
    """The environment of every command while a cluster is up: RAY_AUTH_MODE=token and the file of a token
    generated for the cluster (read only by its owner), or RAY_AUTH_MODE=disabled."""
    if not auth:
        with mock.patch.dict(os.environ, RAY_AUTH_MODE="disabled"):
            yield None
        return
    with tempfile.TemporaryDirectory(prefix=PREFIX) as folder:
        token = Path(folder) / "auth_token"
        token.write_text(secrets.token_hex(32))
        token.chmod(0o600)
        with mock.patch.dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token)):
            os.environ.pop("RAY_AUTH_TOKEN", None)  # it would come before the file
            yield token


@contextmanager
def cluster(
    workers: int,
    cpus: int,
    head_cpus: int,
    delay_ms: float = 0.0,
    rate_mbit: float = 0.0,
    auth: bool = True,
    outsiders: int = 0,
):
    """The hosts with Ray running on each, the head's node offering `head_cpus` (0: node groups go to the worker
    hosts only), with token authentication unless not `auth` (cluster_credentials), and `outsiders` hosts on the
    same network without Ray; yields the head's address and port. Taken down on the way out."""
    if our_namespaces():
        raise RuntimeError(f"namespaces of an earlier run are still here ({', '.join(our_namespaces())}): run `down`")
    hosts = host_names(workers)
    shaper = None
    try:
        with cluster_credentials(auth):
            shaper = make_hosts([*hosts, *outsider_names(outsiders)], delay_ms, rate_mbit)
            start_ray(hosts, cpus, head_cpus)
            yield f"{address(0)}:{RAY_PORT}"
    finally:
        if shaper is not None:  # ended and reaped here: take_down waits for every process of the namespaces to go
            shaper.terminate()
            shaper.wait()
        take_down()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    actions = parser.add_subparsers(dest="action", required=True)
    run = actions.add_parser("run", help="make the cluster, run COMMAND on the head's host, take it down")
    run.add_argument("--workers", type=int, default=2, help="worker hosts beside the head")
    run.add_argument("--cpus-per-host", type=int, default=os.cpu_count(), help="what each host's Ray node offers")
    run.add_argument("--head-cpus", type=int, help="what the head's node offers (default: --cpus-per-host)")
    run.add_argument("--delay-ms", type=float, default=0.0, help="each host's link: delay of what it sends")
    run.add_argument("--rate-mbit", type=float, default=0.0, help="each host's link: its rate limit (0: none)")
    run.add_argument("--no-auth", action="store_true", help="start Ray without token authentication")
    run.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command; {head} is the head's address")
    actions.add_parser("down", help="take down what a killed run left")
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error("network namespaces need root")
    if args.action == "down":
        ended, namespaces = take_down()
        print(f"took down {len(namespaces)} namespaces ({', '.join(namespaces) or 'none'}), ended {ended} processes")
        return
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("run needs a command after --")
    for signum in (signal.SIGTERM, signal.SIGHUP):  # the take-down runs on a signal's way out too
        signal.signal(signum, lambda signum, frame: sys.exit(128 + signum))
    head_cpus = args.cpus_per_host if args.head_cpus is None else args.head_cpus
    with cluster(
        args.workers, args.cpus_per_host, head_cpus, args.delay_ms, args.rate_mbit, auth=not args.no_auth
    ) as head:
        code = subprocess.run(
            in_namespace(PREFIX + "head", [word.replace("{head}", head) for word in command])
        ).returncode
    sys.exit(code)


if __name__ == "__main__":
    main()
