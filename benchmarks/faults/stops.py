"""Stops as schedulers send them, tried --tries times each: the exit code, summary.json, last.pt and the time.

    stops.py                                   # every way, CartPole-v1 and MinAtar/Breakout-v1, 10 tries
    stops.py --way "group SIGTERM" --env ALE/Pong-v5 --tries 3 --train-for 60 --out stops-pong

The ways:
- "group SIGTERM": --train-for seconds after the first metrics row, SIGTERM to the trainer's whole process
  group at once, its workers' deaths included, as `kill -TERM -PGID`, Slurm's scancel and systemd's
  KillMode=control-group send it: exit code 143, stop reason terminated;
- "timeout -s INT": `timeout -s INT --preserve-status T python main.py ...` (T: --timeout, 40 s), GNU
  timeout signalling the trainer and then its process group: exit code 130, stop reason interrupted;
- "timeout -s TERM": the same with SIGTERM: 143, terminated.
A try passes when the exit code and summary.json's stop reason are those, quit_at_once is false and
last.pt loads. Reported per way and env: tries passed, and the seconds from the signal to the trainer's
exit (median and max) against the grace periods of docker stop (10 s) and Kubernetes (30 s).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

from a3c.learn.checkpoint import load_checkpoint

from harness.launch import PYTHON, REPO, environment, print_table, save_json

WAYS = {
    "group SIGTERM": (143, "terminated"),
    "timeout -s INT": (130, "interrupted"),
    "timeout -s TERM": (143, "terminated"),
}
STARTUP_SECONDS = 120.0  # at most, launch to the first metrics row


def trainer(env: str, run_dir: Path) -> list[str]:
    """The env's preset, run as a user runs it, with no target (it must be stopped) and a row every 2,000 steps."""
    return [
        PYTHON,
        str(REPO / "main.py"),
        "--env",
        env,
        "--run-dir",
        str(run_dir),
        "--target-return",
        "none",
        "--max-steps",
        "500000000",
        "--log-interval",
        "2000",
        "--no-tensorboard",
    ]


def first_row_after(run_dir: Path, launched: float) -> float:
    """Seconds from launch to the first metrics row (STARTUP_SECONDS if none came)."""
    while time.monotonic() - launched < STARTUP_SECONDS:
        path = run_dir / "metrics.csv"
        if path.exists() and len(path.read_text().splitlines()) > 1:
            break
        time.sleep(0.2)
    return time.monotonic() - launched


def signalled_group(env: str, run_dir: Path, train_for: float) -> tuple[subprocess.Popen, float]:
    """The trainer in a process group of its own, SIGTERMed as a whole --train-for seconds after its first
    metrics row; the process and when the signal went."""
    launched = time.monotonic()
    process = subprocess.Popen(
        trainer(env, run_dir), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    first_row_after(run_dir, launched)
    time.sleep(train_for)
    os.killpg(process.pid, signal.SIGTERM)
    return process, time.monotonic()


def under_timeout(env: str, run_dir: Path, signal_name: str, seconds: float) -> tuple[subprocess.Popen, float]:
    """The trainer under `timeout -s SIGNAL --preserve-status SECONDS`; the process and when timeout signals."""
    command = ["timeout", "-s", signal_name, "--preserve-status", f"{seconds:g}", *trainer(env, run_dir)]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return process, time.monotonic() + seconds


def one_try(way: str, env: str, args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        if way == "group SIGTERM":
            process, signalled = signalled_group(env, run_dir, args.train_for)
        else:
            process, signalled = under_timeout(env, run_dir, way.split()[-1], args.timeout)
        code = process.wait(timeout=STARTUP_SECONDS + args.timeout + 120)
        stop_seconds = time.monotonic() - signalled
        summary_path = run_dir / "summary.json"
        summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
        try:
            load_checkpoint(run_dir / "checkpoints" / "last.pt")
            loads = True
        except Exception:
            loads = False
    expected_code, expected_reason = WAYS[way]
    passed = code == expected_code and summary.get("stop_reason") == expected_reason
    return {
        "exit_code": code,
        "stop_reason": summary.get("stop_reason"),
        "last_pt_loads": loads,
        "stop_seconds": stop_seconds,
        "passed": passed and summary.get("quit_at_once") is False and loads,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--way", action="append", choices=list(WAYS), help="one way; repeat for more")
    parser.add_argument("--env", action="append", help="default: CartPole-v1 and MinAtar/Breakout-v1")
    parser.add_argument("--tries", type=int, default=10)
    parser.add_argument("--train-for", type=float, default=5.0, help="group SIGTERM: seconds after the first row")
    parser.add_argument("--timeout", type=float, default=40.0, help="timeout's seconds, from launch")
    parser.add_argument("--out", default="stops", help="the results file's name under benchmarks/results/")
    args = parser.parse_args()
    results = {
        f"{way}, {env}": [one_try(way, env, args) for _ in range(args.tries)]
        for way in args.way or WAYS
        for env in args.env or ["CartPole-v1", "MinAtar/Breakout-v1"]
    }
    rows = []
    for name, tries in results.items():
        seconds = [run["stop_seconds"] for run in tries]
        rows.append(
            [
                name,
                f"{sum(run['passed'] for run in tries)}/{len(tries)}",
                f"{statistics.median(seconds):.1f}",
                f"{max(seconds):.1f}",
            ]
        )
    print_table(["way, env", "passed", "signal to exit, median s", "max s"], rows)
    save_json(args.out, {**environment(), "args": vars(args), "results": results})


if __name__ == "__main__":
    main()
