"""Faults across separate network hosts, each tried --tries times: what the run does, and what it keeps (root).

    cluster_faults.py                                  # every fault, 3 tries each
    cluster_faults.py --fault "raylet killed" --tries 1

On netns_cluster.py's hosts (a head offering no CPUs, where the trainer runs, and two worker hosts of one
CPU each), CartPole-v1 trains in two node groups of one worker with no target, a checkpoint every 5 s and
a --placement-timeout of 30 s. --fault-at seconds after its first metrics row one fault strikes:
- "link cut": worker host 1's link goes down, and comes back --restore-after seconds later;
- "raylet killed": Ray's node manager on worker host 1 is SIGKILLed;
- "head host lost": every process of the head's host, the trainer's included, is SIGKILLed.
From --restore-after seconds after a worker host's fault its operator brings it back: wherever Ray's node
manager no longer runs there (killed, or ended by Ray, which declared the node dead), the host's processes
are ended and `ray start --address` joins it to the cluster again, as the clusters guide tells a user.
The run is left --watch seconds to answer (a stop of its own, or SIGINT then), and then resumed on a
new cluster for --resume-for seconds. Reported per try: the first run's exit code and stop reason (none
where it was killed), the seconds from the fault to the console's line that a group was lost, to the
host's return to the cluster, to the line that a group runs (a replacement placed) and to a group's line
that it rejoined from the global weights, the console's lines about node groups, whether last.pt
loaded, and whether the resumed metrics.csv's env steps rise without a repeated or missing row.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

from a3c.learn.checkpoint import load_checkpoint

from harness.launch import PYTHON, REPO, environment, print_table, run_rows, save_json, trainer_command
from scale.netns_cluster import cluster, join_ray, raylet_running
from scale.netns_hosts import PREFIX, host_names, in_namespace, kill_processes, set_link

HEAD, WORKER = PREFIX + "head", host_names(1)[1]
LOG_INTERVAL = 2000
FAULTS = ("link cut", "raylet killed", "head host lost")


def start_trainer(head: str, run_dir: Path, resume: bool) -> subprocess.Popen:
    """The trainer on the head's host: a new run, or --resume of it on this cluster."""
    if resume:
        command = [PYTHON, str(REPO / "main.py"), "--resume", str(run_dir), "--ray-address", head]
    else:
        command = trainer_command(
            run_dir,
            env="CartPole-v1",
            backend="ray",
            ray_address=head,
            num_processes=1,
            nodes=2,
            target_return="none",
            max_steps=50_000_000,
            log_interval=LOG_INTERVAL,
            checkpoint_interval=5,
            placement_timeout=30,
            print_interval=1,
        )
    return subprocess.Popen(
        in_namespace(HEAD, [*command, "--no-tensorboard"]),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def wait_for_rows(run_dir: Path, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while len(run_rows(run_dir)) < count and time.monotonic() < deadline:
        time.sleep(0.5)


class TimedOutput:
    """A process's output lines as they come, each with the monotonic time it was read at."""

    def __init__(self, process: subprocess.Popen):
        self.lines: list[tuple[float, str]] = []
        self.reader = threading.Thread(target=self._read, args=(process.stdout,), daemon=True)
        self.reader.start()

    def _read(self, stream) -> None:
        for line in stream:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    def first_after(self, since: float, words: str) -> Optional[float]:
        """Seconds from `since` to the first line after it that says `words`; None if none did."""
        return next((at - since for at, line in self.lines if at >= since and words in line), None)


def run_until(process: subprocess.Popen, output: TimedOutput, seconds: float) -> int:
    """The process's exit code, SIGINT after `seconds` if it is still running; its output read to the end."""
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    output.reader.join(timeout=10)
    return process.returncode


def strike(fault: str, restore_after: float) -> None:
    if fault == "link cut":
        set_link(WORKER, up=False)
        time.sleep(restore_after)
        set_link(WORKER, up=True)
    elif fault == "raylet killed":
        kill_processes(WORKER, "raylet")
    else:
        kill_processes(HEAD)


class Operator:
    """Brings worker host 1 back from `since` on: where its node manager is gone, ends what is left of the
    host's processes and joins Ray there to the cluster again; `back_at` is when it did, the first time."""

    def __init__(self, since: float):
        self.since, self.back_at, self.done = since, None, threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while not self.done.wait(1.0):
            if time.monotonic() >= self.since and self.back_at is None and not raylet_running(WORKER):
                kill_processes(WORKER)
                join_ray(WORKER, 1, 1)
                self.back_at = time.monotonic()

    def stop(self) -> None:
        self.done.set()
        self.thread.join(timeout=60)


def metrics_continue(run_dir: Path) -> bool:
    """Env steps rise row by row, no row repeated, none missing (a row every LOG_INTERVAL env steps, the
    stop's own row aside)."""
    steps = [int(row["env_steps"]) for row in run_rows(run_dir)]
    rising = all(b > a for a, b in zip(steps, steps[1:]))
    return rising and all(b - a <= 2 * LOG_INTERVAL for a, b in zip(steps, steps[1:]))


def one_try(fault: str, args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        with cluster(2, 1, 0) as head:
            process = start_trainer(head, run_dir, resume=False)
            output = TimedOutput(process)
            wait_for_rows(run_dir, 1, 120)
            time.sleep(args.fault_at)
            struck = time.monotonic()
            operator = Operator(struck + args.restore_after) if fault != "head host lost" else None
            strike(fault, args.restore_after)
            code = run_until(process, output, max(args.watch - (time.monotonic() - struck), 1))
            if operator is not None:
                operator.stop()
        summary_path = run_dir / "summary.json"
        stop = json.loads(summary_path.read_text())["stop_reason"] if summary_path.exists() else None
        try:
            load_checkpoint(run_dir / "checkpoints" / "last.pt")
            loads = True
        except Exception:
            loads = False
        with cluster(2, 1, 0) as head:
            resumed = start_trainer(head, run_dir, resume=True)
            resumed_code = run_until(resumed, TimedOutput(resumed), args.resume_for)
        return {
            "exit_code": code,
            "stop_reason": stop,
            "groups_said": [line for _, line in output.lines if "node group" in line],
            # seconds from the fault to the trainer's line that a group was lost, and to a group placed after it
            "loss_said_after": output.first_after(struck, "was lost"),
            # and to the worker host's return to the cluster, where its operator had to bring it back
            "host_back_after": None if operator is None or operator.back_at is None else operator.back_at - struck,
            "replacement_runs_after": output.first_after(struck, "runs on"),
            # and to a group's line that it rejoined from the global weights on the CPUs it holds
            "rejoined_after": output.first_after(struck, "taking the global weights again"),
            "last_pt_loads": loads,
            "resumed_exit_code": resumed_code,
            "metrics_continue": metrics_continue(run_dir),
        }


def seconds(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fault", action="append", choices=FAULTS, help="one fault; repeat for more")
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--fault-at", type=float, default=10.0, help="seconds after the first metrics row")
    parser.add_argument(
        "--restore-after", type=float, default=60.0, help="seconds a cut link stays down, and a host before it is back"
    )
    parser.add_argument("--watch", type=float, default=120.0, help="seconds after the fault before SIGINT")
    parser.add_argument("--resume-for", type=float, default=30.0, help="seconds of the resumed run")
    parser.add_argument("--out", default="cluster-faults", help="the results file's name under benchmarks/results/")
    args = parser.parse_args()
    results = {fault: [one_try(fault, args) for _ in range(args.tries)] for fault in args.fault or FAULTS}
    print_table(
        [
            "fault",
            "try",
            "exit",
            "stop reason",
            "loss said (s)",
            "host back (s)",
            "a group placed (s)",
            "rejoined (s)",
            "last.pt loads",
            "resumed exit",
            "metrics continue",
            "said",
        ],  # fmt: skip
        [
            [
                fault,
                n,
                run["exit_code"],
                run["stop_reason"],
                seconds(run["loss_said_after"]),
                seconds(run.get("host_back_after")),
                seconds(run["replacement_runs_after"]),
                seconds(run.get("rejoined_after")),
                run["last_pt_loads"],
                run["resumed_exit_code"],
                run["metrics_continue"],
                " / ".join(run["groups_said"])[-120:],
            ]
            for fault, runs in results.items()
            for n, run in enumerate(runs)
        ],
    )
    save_json(args.out, {**environment(), "args": vars(args), "results": results})


if __name__ == "__main__":
    main()
