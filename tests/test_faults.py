"""Faults a long run meets, tried against real runs through the CLI: a second trainer on the same run
directory, hung and hostile environments, a full disk."""

from __future__ import annotations

import os
import signal
import time

import pytest

from a3c.checkpoint import load_checkpoint

from .conftest import assert_one_line_usage_error, metrics_rows, run_cli, start_cli, wait_for_children, wait_for_metrics_rows

LONG_RUN = ["--env", "CartPole-v1", "--num-processes", "2", "--target-return", "none", "--max-steps", "50000000",
            "--print-interval", "0.5", "--no-tensorboard", "--log-interval", "2000", "--checkpoint-interval", "1"]


def wait_for_file(path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} was not written"
        time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_second_trainer_on_a_running_run_is_refused_and_a_killed_trainer_leaves_no_lock(tmp_path):
    run_dir = tmp_path / "run"
    process = start_cli(*LONG_RUN, "--run-dir", str(run_dir))
    wait_for_children(process, 3)
    wait_for_metrics_rows(run_dir, 3)
    wait_for_file(run_dir / "checkpoints" / "last.pt")
    rows = metrics_rows(run_dir)
    second = run_cli("--resume", str(run_dir), timeout=60)
    assert_one_line_usage_error(second, f"another trainer (pid {process.pid}) is running in {run_dir}")
    assert metrics_rows(run_dir)[:len(rows)] == rows  # the refused resume dropped no row of the running run

    os.kill(process.pid, signal.SIGKILL)  # no clean exit: the kernel drops the lock
    process.communicate(timeout=30)
    steps = load_checkpoint(run_dir / "checkpoints" / "last.pt")["env_steps"]
    resumed = run_cli("--resume", str(run_dir), "--max-steps", str(steps + 2000), timeout=60)
    assert resumed.returncode == 0, resumed.stderr
    assert load_checkpoint(run_dir / "checkpoints" / "last.pt")["env_steps"] >= steps + 2000
