"""Faults against real runs through the CLI: signals, killed workers, NaN, crashes mid-write, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from a3c.learn.checkpoint import load_checkpoint, save_checkpoint
from a3c.learn.learner import RolloutReport
from a3c.learn.optim import SharedAdam
from a3c.parallel.worker import apply_gradient

from .conftest import (
    LONG_RUN,
    REPO_ROOT,
    all_ended_soon,
    children,
    metrics_rows,
    run_cli,
    start_cli,
    wait_for_children,
    wait_for_metrics_rows,
)


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_run_cleanly_and_resume_continues_it(tmp_path, signum):
    run_dir = tmp_path / "run"
    shm_before = set(os.listdir("/dev/shm"))
    process = start_cli(*LONG_RUN, "--log-interval", "2000", "--run-dir", str(run_dir))
    pids = wait_for_children(process, 3)  # two workers and the evaluator
    wait_for_metrics_rows(run_dir, 3)
    sent = time.monotonic()
    process.send_signal(signum)
    out, err = process.communicate(timeout=30)
    assert time.monotonic() - sent < 10
    assert process.returncode == 128 + signum, err
    assert all_ended_soon(pids)
    assert set(os.listdir("/dev/shm")) <= shm_before  # no shared-memory file outlives the run
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == ("interrupted" if signum == signal.SIGINT else "terminated")
    saved = load_checkpoint(run_dir / "checkpoints" / "last.pt")
    assert saved["env_steps"] == summary["env_steps"] > 0
    assert float(saved["optimizer"]["steps"]) > 0

    # resume: the step counter, the lr schedule and the metrics rows go on from the checkpoint
    rows_before = metrics_rows(run_dir)
    max_steps = saved["env_steps"] + 6000
    result = run_cli("--resume", str(run_dir), "--max-steps", str(max_steps), timeout=60)
    assert result.returncode == 0, result.stderr
    rows_after = metrics_rows(run_dir)
    assert rows_after[: len(rows_before)] == rows_before
    new_rows = rows_after[len(rows_before) :]
    steps = [int(row["env_steps"]) for row in rows_after]
    assert steps == sorted(set(steps))  # no row duplicated, none goes back
    assert new_rows and int(new_rows[0]["env_steps"]) > saved["env_steps"]
    lr = json.loads((run_dir / "config.json").read_text())["lr"]
    for row in new_rows:  # the lr decays to 0 at the new --max-steps from where the run was
        expected = max(0.0, lr * (1 - int(row["env_steps"]) / max_steps))
        assert float(row["lr"]) == pytest.approx(expected, abs=2e-6)
    resumed = load_checkpoint(run_dir / "checkpoints" / "last.pt")
    assert resumed["env_steps"] >= max_steps
    assert float(resumed["optimizer"]["steps"]) > float(saved["optimizer"]["steps"])
    assert resumed["counters"]["updates"] > saved["counters"]["updates"]


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_resume_refuses_another_env(tmp_path):
    run_dir = tmp_path / "run"
    first = run_cli(
        "--num-processes", "1", "--max-steps", "2000", "--eval-episodes", "0", "--run-dir", str(run_dir), timeout=60
    )
    assert first.returncode == 0, first.stderr
    before = (run_dir / "metrics.csv").read_text()
    result = run_cli("--resume", str(run_dir), "--env", "Acrobot-v1", "--max-steps", "9000", timeout=60)
    assert result.returncode == 2
    assert "contradicts the checkpoint" in result.stderr and "Traceback" not in result.stderr
    assert (run_dir / "metrics.csv").read_text() == before


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_killed_worker_is_restarted_and_training_goes_on(tmp_path):
    run_dir = tmp_path / "run"
    process = start_cli(*LONG_RUN, "--log-interval", "2000", "--run-dir", str(run_dir))
    first_pids = wait_for_children(process, 3)
    wait_for_metrics_rows(run_dir, 2)
    os.kill(first_pids[0], signal.SIGKILL)
    deadline = time.monotonic() + 20
    while set(first_pids) <= set(children(process.pid)) or len(children(process.pid)) < 3:
        assert time.monotonic() < deadline, "the killed worker was not replaced"
        time.sleep(0.1)
    rows = len(metrics_rows(run_dir))
    wait_for_metrics_rows(run_dir, rows + 3)  # training goes on after the restart
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert "worker 0 died (killed by signal 9); restarting" in err


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_worker_that_fails_on_every_start_ends_the_run_cleanly(tmp_path):
    run_dir = tmp_path / "run"
    result = run_cli(
        "--env",
        "tests.cue_env:CueCrash-v0",
        "--num-processes",
        "2",
        "--max-worker-restarts",
        "2",
        "--eval-episodes",
        "0",
        "--run-dir",
        str(run_dir),
        timeout=80,
    )
    assert result.returncode == 1
    assert "cue env exploded" in result.stderr
    assert "no restarts left (--max-worker-restarts 2)" in result.stderr
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "worker_failed"
    assert load_checkpoint(run_dir / "checkpoints" / "last.pt")["env_steps"] == 0


def test_a_nan_gradient_is_not_applied():
    weights = torch.tensor([1.0, 2.0, 3.0])
    optimizer = SharedAdam([weights], lr=0.1)
    for bad in (float("nan"), float("inf")):
        report = RolloutReport(10, [], [], 0.0, 0.0, 0.0, grad_norm=bad)
        apply_gradient(optimizer, torch.tensor([0.5, bad, 0.5]), 0.1, report, read_at=0)
        assert not report.applied
    assert torch.equal(weights, torch.tensor([1.0, 2.0, 3.0]))
    assert float(optimizer.steps) == 0 and not optimizer.state["exp_avg"][0].any()
    report = RolloutReport(10, [], [], 0.0, 0.0, 0.0, grad_norm=0.87)
    apply_gradient(optimizer, torch.tensor([0.5, 0.5, 0.5]), 0.1, report, read_at=0)
    assert report.applied and report.policy_lag == 0
    assert not torch.equal(weights, torch.tensor([1.0, 2.0, 3.0]))


def test_the_policy_lag_counts_the_updates_applied_since_the_weights_were_read():
    weights = torch.tensor([1.0, 2.0, 3.0])
    optimizer = SharedAdam([weights], lr=0.1)
    read_at = optimizer.step_count()
    for _ in range(3):  # other workers' updates, between this one's read and its own
        optimizer.step([torch.ones(3)])
    report = RolloutReport(10, [], [], 0.0, 0.0, 0.0, grad_norm=1.0)
    apply_gradient(optimizer, torch.ones(3), 0.1, report, read_at)
    assert report.policy_lag == 3 and optimizer.step_count() == 4


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_repeated_nan_losses_stop_the_run_with_the_weights_intact(tmp_path):
    run_dir = tmp_path / "run"
    result = run_cli(
        "--env",
        "tests.cue_env:CueNaN-v0",
        "--num-processes",
        "2",
        "--eval-episodes",
        "0",
        "--run-dir",
        str(run_dir),
        timeout=50,
    )
    assert result.returncode == 1
    assert "NaN or infinite" in result.stderr and "Traceback" not in result.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == "diverged" and summary["nonfinite_updates"] >= 20
    saved = load_checkpoint(run_dir / "checkpoints" / "last.pt")
    assert all(torch.isfinite(value).all() for value in saved["model"].values())
    assert float(saved["optimizer"]["steps"]) == 0  # not one NaN update reached the optimizer


WRITER = """
import sys, torch
from a3c.learn.checkpoint import save_checkpoint
path, marker = sys.argv[1], sys.argv[2]
big = torch.arange(4_000_000, dtype=torch.float32)
i = 0
open(marker, "w").close()
while True:
    i += 1
    save_checkpoint(path, {"config": {}, "model": {"w": big + i}, "env_steps": i})
"""


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_writer_killed_mid_checkpoint_leaves_a_loadable_checkpoint(tmp_path):
    path = tmp_path / "checkpoints" / "last.pt"
    save_checkpoint(path, {"config": {}, "model": {"w": torch.zeros(3)}, "env_steps": 0})
    for delay in (0.3, 0.45, 0.6, 0.75):
        marker = tmp_path / "started"
        marker.unlink(missing_ok=True)
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(marker)], cwd=REPO_ROOT)
        while not marker.exists():
            time.sleep(0.01)
        time.sleep(delay)
        writer.kill()
        writer.wait()
        loaded = load_checkpoint(path)  # the last complete write, never a torn one
        if loaded["env_steps"] > 0:
            assert torch.equal(loaded["model"]["w"], torch.arange(4_000_000, dtype=torch.float32) + loaded["env_steps"])
    # the next save sweeps away the temporary file the killed writer left
    save_checkpoint(path, {"config": {}, "model": {}, "env_steps": -1})
    assert [p.name for p in path.parent.iterdir()] == ["last.pt"]
