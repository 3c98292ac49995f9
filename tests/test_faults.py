"""Faults a long run meets, tried against real runs through the CLI: a second trainer on the same run
directory, hung and hostile environments, a full disk."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from a3c.learn.checkpoint import load_checkpoint

from .conftest import (
    LONG_RUN,
    all_ended_soon,
    assert_one_line_usage_error,
    children,
    fill,
    interrupt,
    metrics_rows,
    run_cli,
    start_cli,
    wait_for_children,
    wait_for_metrics_rows,
)

CHECKPOINTED_RUN = [*LONG_RUN, "--log-interval", "2000", "--checkpoint-interval", "1"]


def wait_for_file(path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} was not written"
        time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_second_trainer_on_a_running_run_is_refused_and_a_killed_trainer_leaves_no_lock(tmp_path):
    run_dir = tmp_path / "run"
    process = start_cli(*CHECKPOINTED_RUN, "--run-dir", str(run_dir))
    wait_for_children(process, 3)
    wait_for_metrics_rows(run_dir, 3)
    wait_for_file(run_dir / "checkpoints" / "last.pt")
    rows = metrics_rows(run_dir)
    second = run_cli("--resume", str(run_dir), timeout=60)
    assert_one_line_usage_error(second, f"another trainer (pid {process.pid}) is running in {run_dir}")
    assert metrics_rows(run_dir)[: len(rows)] == rows  # the refused resume dropped no row of the running run

    os.kill(process.pid, signal.SIGKILL)  # no clean exit: the kernel drops the lock
    process.communicate(timeout=30)
    steps = load_checkpoint(run_dir / "checkpoints" / "last.pt")["env_steps"]
    resumed = run_cli("--resume", str(run_dir), "--max-steps", str(steps + 2000), timeout=60)
    assert resumed.returncode == 0, resumed.stderr
    assert load_checkpoint(run_dir / "checkpoints" / "last.pt")["env_steps"] >= steps + 2000


def start_hanging(process_name: str, tmp_path, *args: str):
    """A run on Hang-v0 whose env hangs once, at its first step in the process `process_name`; returns the
    trainer's process once the hang happened."""
    marker = tmp_path / "hung"
    env = dict(os.environ, OMP_NUM_THREADS="1", A3C_TEST_HANG_IN=process_name, A3C_TEST_HANG_MARKER=str(marker))
    process = start_cli(
        "--env",
        "tests.hostile_envs:Hang-v0",
        "--num-processes",
        "1",
        "--max-steps",
        "50000000",
        "--target-return",
        "none",
        "--worker-timeout",
        "3",
        "--print-interval",
        "0.5",
        "--no-tensorboard",
        *args,
        env=env,
    )
    wait_for_file(marker)
    return process


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_worker_hung_in_its_env_is_killed_and_restarted_and_training_goes_on(tmp_path):
    run_dir = tmp_path / "run"
    process = start_hanging(
        "a3c-worker-0", tmp_path, "--eval-episodes", "0", "--log-interval", "2000", "--run-dir", str(run_dir)
    )
    wait_for_metrics_rows(run_dir, 3)  # the only worker hung at its first step: rows come from its replacement
    err = interrupt(process)
    assert (
        "worker 0 showed no progress for 3 s (--worker-timeout) and was killed; "
        "restarting it from the shared weights (1/3)"
    ) in err


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_hung_evaluator_is_killed_and_restarted_and_evaluates_again(tmp_path):
    run_dir = tmp_path / "run"
    process = start_hanging(
        "a3c-evaluator", tmp_path, "--eval-interval", "0.2", "--eval-episodes", "2", "--run-dir", str(run_dir)
    )
    wait_for_metrics_rows(run_dir, 1, name="eval.csv")  # the first evaluation hung: rows come from the new evaluator
    err = interrupt(process)
    assert "the evaluator showed no progress for 3 s (--worker-timeout) and was killed; restarting it (1/3)" in err


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_second_ctrl_c_during_a_slow_stop_quits_at_once_and_still_writes_the_summary(tmp_path):
    run_dir = tmp_path / "run"
    process = start_hanging(
        "a3c-evaluator",
        tmp_path,
        *("--eval-interval", "0.2", "--eval-episodes", "2", "--worker-timeout", "0"),  # hung for good
        *("--checkpoint-interval", "0.5", "--log-interval", "500", "--run-dir", str(run_dir)),
    )
    pids = children(process.pid)
    wait_for_metrics_rows(run_dir, 2)
    wait_for_file(run_dir / "checkpoints" / "last.pt")
    process.send_signal(signal.SIGINT)  # the hung evaluator holds the clean stop for its grace seconds
    time.sleep(1.5)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert all_ended_soon(pids)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["quit_at_once"] and summary["stop_reason"] == "interrupted" and summary["env_steps"] > 0
    assert load_checkpoint(run_dir / "checkpoints" / "last.pt")["env_steps"] > 0


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "env_id, words",
    [
        (
            "WrongShape-v0",
            "at its step 50: an observation of shape (4,) and dtype float32, where its space declares (3,)",
        ),
        ("WrongDtype-v0", "at its step 50: an observation of shape (3,) and dtype <U1"),
        ("NaNObs-v0", "at its step 50: a NaN or infinite observation"),
        ("ShiftingActions-v0", "its action space became Discrete(5), from Discrete(3)"),
        ("ResetRaises-v0", "at its step 1: reset raised RuntimeError: the simulator lost its licence"),
    ],
)
def test_a_hostile_env_fails_its_worker_with_one_line_and_the_run_stops_cleanly(tmp_path, env_id, words):
    run_dir = tmp_path / "run"
    result = run_cli(
        "--env",
        f"tests.hostile_envs:{env_id}",
        "--num-processes",
        "1",
        "--max-steps",
        "100000",
        "--eval-episodes",
        "0",
        "--max-worker-restarts",
        "1",
        "--run-dir",
        str(run_dir),
        timeout=100,
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    failures = [line for line in result.stderr.splitlines() if line.startswith("worker 0 failed: ")]
    assert len(failures) == 2  # the first start and its one restart
    assert f"env tests.hostile_envs:{env_id} (number 0 of this worker's 8)" in failures[0]
    assert words in failures[0]
    assert "worker 0 died (exit code 1); restarting it from the shared weights (1/1)" in result.stderr
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "worker_failed"
    load_checkpoint(run_dir / "checkpoints" / "last.pt")  # whole and loadable


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_full_disk_stops_the_run_with_one_line_keeps_last_pt_and_resume_continues_after(small_disk):
    run_dir = small_disk / "run"
    process = start_cli(*CHECKPOINTED_RUN, "--run-dir", str(run_dir))
    wait_for_file(run_dir / "checkpoints" / "last.pt")
    wait_for_metrics_rows(run_dir, 3)
    filler = fill(small_disk)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 1, err
    assert "Traceback" not in err
    full = [line for line in err.splitlines() if "No space left on device" in line]
    assert len(full) == 1 and full[0].startswith(f"cannot write {run_dir}") and "--resume" in full[0], err
    saved = load_checkpoint(run_dir / "checkpoints" / "last.pt")  # the last one written whole
    filler.unlink()  # room again
    resumed = run_cli("--resume", str(run_dir), "--max-steps", str(saved["env_steps"] + 2000), timeout=60)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "max_steps"
    assert load_checkpoint(run_dir / "checkpoints" / "last.pt")["env_steps"] >= saved["env_steps"] + 2000


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_fault_of_the_trainer_itself_leaves_no_child_behind(tmp_path, monkeypatch, quiet):
    import multiprocessing

    from a3c.config.settings import Config
    from a3c.run.metrics import MetricsWriter
    from a3c.run.trainer import train

    def broken(self, message):
        raise RuntimeError("a bug in the trainer")

    monkeypatch.setattr(MetricsWriter, "handle", broken)
    config = Config(
        env="tests.cue_env:Cue-v0",
        num_processes=2,
        envs_per_process=4,
        max_steps=50_000_000,
        target_return=None,
        run_dir=str(tmp_path / "run"),
    )
    with pytest.raises(RuntimeError, match="a bug in the trainer"):
        train(config, print_fn=quiet)
    deadline = time.monotonic() + 10
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert multiprocessing.active_children() == []  # killed, not left to train on
