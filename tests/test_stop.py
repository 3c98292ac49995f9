"""How a run stops when schedulers signal it: the stop flag no dead process can hold, one request from a signal
sent twice at once, and the whole process group signalled as Slurm, systemd and GNU timeout do."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from a3c.learn.checkpoint import load_checkpoint
from a3c.parallel.processes import StopFlag

from .conftest import LONG_RUN, REPO_ROOT, all_ended_soon, start_cli, wait_for_children, wait_for_metrics_rows

CTX = multiprocessing.get_context("fork")


def wait_for_the_stop(stop, waiting) -> None:
    waiting.value = 1
    stop.wait(60)


def test_setting_the_stop_returns_at_once_though_a_waiter_was_killed_mid_wait():
    stop, waiting = StopFlag(CTX), CTX.RawValue("b", 0)
    waiter = CTX.Process(target=wait_for_the_stop, args=(stop, waiting))
    waiter.start()
    deadline = time.monotonic() + 10
    while not waiting.value and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)  # inside wait()
    os.kill(waiter.pid, signal.SIGTERM)  # as a scheduler's SIGTERM to the process group ends it
    waiter.join()
    setter = threading.Thread(target=stop.set, daemon=True)
    setter.start()
    setter.join(5)
    assert not setter.is_alive(), "set() waits on the dead waiter"
    assert stop.is_set()


def test_a_waiter_sees_the_stop_within_its_poll():
    stop = StopFlag(CTX)
    threading.Timer(0.2, stop.set).start()
    began = time.monotonic()
    assert stop.wait(10)
    assert 0.15 < time.monotonic() - began < 0.2 + 4 * StopFlag.POLL_SECONDS
    assert not StopFlag(CTX).wait(0.1)  # unset: wait() returns False at its timeout


# A child that enters Interrupts, is signalled as the test says, then reports what it recorded
INTERRUPTED = """
import os, signal, sys, time
from a3c.run.trainer import Interrupts
with Interrupts(lambda: print("killed", flush=True), lambda reason: print("quit", reason, flush=True)) as interrupts:
    for name, pause in zip(sys.argv[1::2], sys.argv[2::2]):
        os.kill(os.getpid(), getattr(signal, name))
        time.sleep(float(pause))
    print(interrupts.stop_reason, flush=True)
"""


@pytest.mark.parametrize(
    "signals, stop_reason, exit_code",
    [
        (["SIGINT", "0"], "interrupted", 0),
        (["SIGINT", "0", "SIGINT", "0.1"], "interrupted", 0),  # GNU timeout: the process, then its group
        (["SIGHUP", "0", "SIGHUP", "0"], "hangup", 0),
        (["SIGUSR1", "0"], "preempted", 0),
        # a second request quits at once, saying the first one's reason (summary.json's stop reason)
        (["SIGTERM", "1.2", "SIGTERM", "0"], "quit terminated", 128 + signal.SIGTERM),
        (["SIGTERM", "0", "SIGINT", "0"], "quit terminated", 128 + signal.SIGINT),  # another signal, another request
    ],
)
def test_the_same_signal_twice_within_a_second_is_one_request(signals, stop_reason, exit_code):
    result = subprocess.run(
        [sys.executable, "-c", INTERRUPTED, *signals], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == exit_code, result.stderr
    quit_at_once = stop_reason.startswith("quit")
    assert result.stdout.split() == (["killed", *stop_reason.split()] if quit_at_once else [stop_reason])


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "sends, stop_reason, exit_code",
    [
        ([("group", signal.SIGTERM)], "terminated", 143),  # kill -TERM -PGID, Slurm's scancel, systemd's KillMode
        ([("trainer", signal.SIGINT), ("group", signal.SIGINT)], "interrupted", 130),  # timeout -s INT
        ([("group", signal.SIGHUP)], "hangup", 129),  # the terminal closed
        ([("group", signal.SIGUSR1)], "preempted", 75),  # Slurm's --signal=USR1@60: requeue, then resume
    ],
)
def test_a_signal_to_the_whole_process_group_stops_the_run_cleanly(tmp_path, sends, stop_reason, exit_code):
    """The workers and the evaluator get the signal too (SIGTERM kills them where they are, waiting on the
    stop included); the trainer still stops within seconds with summary.json and a last.pt that loads."""
    run_dir = tmp_path / "run"
    process = start_cli(
        *LONG_RUN, "--log-interval", "2000", "--eval-interval", "0.5", "--run-dir", str(run_dir), new_session=True
    )
    pids = wait_for_children(process, 3)  # two workers and the evaluator
    wait_for_metrics_rows(run_dir, 3)
    wait_for_metrics_rows(run_dir, 0, name="eval.csv")  # the evaluator waits on the stop between rounds
    sent = time.monotonic()
    for target, signum in sends:
        if target == "trainer":
            process.send_signal(signum)
        else:
            os.killpg(process.pid, signum)
    out, err = process.communicate(timeout=30)
    assert time.monotonic() - sent < 10
    assert process.returncode == exit_code, err
    assert all_ended_soon(pids)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == stop_reason and not summary["quit_at_once"]
    assert load_checkpoint(run_dir / "checkpoints" / "last.pt")["env_steps"] == summary["env_steps"] > 0
