"""TensorBoard's event files: TensorBoard reads back what a run writes, and a full disk fails a TensorBoard
write in the trainer's own thread, as a WriteError, like every other write of a run."""

from __future__ import annotations

import json
import math
import shutil
import threading
import time

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from a3c.errors import WriteError
from a3c.learn.checkpoint import load_checkpoint
from a3c.learn.learner import RolloutReport
from a3c.parallel.messages import Evaluation, Update
from a3c.run.console import Console
from a3c.run.metrics import MetricsSettings, MetricsWriter
from a3c.run.tensorboard_events import EventFile

from .conftest import fill, metrics_rows, run_cli

SHORT_RUN = [
    "--env",
    "CartPole-v1",
    "--num-processes",
    "2",
    "--target-return",
    "none",
    "--log-interval",
    "1000",
    "--eval-interval",
    "0.5",
    "--eval-episodes",
    "2",
]


def read_scalars(tb_dir) -> dict[str, list[tuple[int, float]]]:
    """Every scalar TensorBoard finds in `tb_dir`, as (step, value) pairs by tag."""
    events = EventAccumulator(str(tb_dir))
    events.Reload()
    return {tag: [(event.step, event.value) for event in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def metrics_writer(run_dir) -> MetricsWriter:
    settings = MetricsSettings(
        run_dir,
        log_interval=100,
        print_interval=1e9,
        budget_used=lambda steps, seconds: 0.0,
        lr_at=lambda steps, seconds: 1e-3,
        tensorboard=True,
    )
    return MetricsWriter(settings, start_time=time.monotonic(), console=Console(lambda *args, **kwargs: None))


def update(env_steps: int, returns: list) -> Update:
    return Update(
        0,
        RolloutReport(
            env_steps=env_steps,
            finished_returns=returns,
            finished_lengths=[10] * len(returns),
            policy_loss=0.5,
            value_loss=2.0,
            entropy=0.7,
            grad_norm=1.5,
        ),
    )


def test_tensorboard_reads_back_the_rows_a_metrics_writer_writes(tmp_path):
    writer = metrics_writer(tmp_path)
    writer.handle(update(100, [20.0, 30.0]))
    writer.handle(update(100, []))  # no episode finished: no mean_return at step 200
    writer.handle(Evaluation(env_steps=200, wall_seconds=1.0, returns=[40.0, 60.0], solved=False))
    writer.handle(Evaluation(env_steps=200, wall_seconds=2.0, returns=[70.0], solved=False, confirmation=True))
    writer.handle(update(50, [80.0]))  # a partial interval: its row is written by close()
    writer.close()

    scalars = read_scalars(tmp_path / "tb")
    assert scalars["train/mean_return"] == [(100, 25.0), (250, 80.0)]
    assert scalars["train/policy_loss"] == [(100, 0.5), (200, 0.5), (250, 0.5)]
    assert scalars["train/updates"] == [(100, 1.0), (200, 2.0), (250, 3.0)]
    assert scalars["eval/mean_return"] == [(200, 50.0)]
    assert scalars["confirmation/mean_return"] == [(200, 70.0)]
    assert not any(tag.endswith("/env_steps") for tag in scalars)  # the step, not a scalar
    assert {tag.split("/")[0] for tag in scalars} == {"train", "eval", "confirmation"}


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_tensorboard_reads_back_the_rows_of_a_run(tmp_path):
    run_dir = tmp_path / "run"
    # long enough for the evaluator to finish evaluations on a loaded 2-core machine: it waits an interval first
    result = run_cli(
        *SHORT_RUN, "--max-steps", "20000", "--eval-interval", "0.1", "--run-dir", str(run_dir), timeout=100
    )
    assert result.returncode == 0, result.stderr
    scalars = read_scalars(run_dir / "tb")
    rows = metrics_rows(run_dir)
    assert [step for step, _ in scalars["train/entropy"]] == [int(row["env_steps"]) for row in rows]
    for (_, value), row in zip(scalars["train/entropy"], rows):
        # the CSV rounds to 6 decimals (an error up to 5e-7), TensorBoard keeps float32 (up to 6e-8 more here)
        assert math.isclose(value, float(row["entropy"]), rel_tol=0, abs_tol=1e-6)
    evaluations = [row for row in metrics_rows(run_dir, "eval.csv") if row["confirmation"] == "0"]
    assert evaluations
    assert [step for step, _ in scalars["eval/mean_return"]] == [int(row["env_steps"]) for row in evaluations]


def test_a_tensorboard_write_on_a_full_disk_raises_a_write_error_naming_its_file_in_the_caller_s_thread(
    small_disk, monkeypatch
):
    thread_errors = []
    monkeypatch.setattr(threading, "excepthook", thread_errors.append)
    threads = threading.active_count()
    events = EventFile(small_disk / "tb")
    events.write_scalars(1, {"train/mean_return": 1.0})
    fill(small_disk)
    with pytest.raises(WriteError, match=f"cannot write {events.path}: No space left on device"):
        for step in range(2, 1000):  # the file's last page has room for a few events
            events.write_scalars(step, {f"train/value_{n}": float(n) for n in range(20)})
    with pytest.raises(WriteError, match=str(events.path)):  # the flush of the event that did not fit, again
        events.close()
    assert threading.active_count() == threads and thread_errors == []
    assert read_scalars(small_disk / "tb")["train/mean_return"] == [(1, 1.0)]  # what was written stays readable


def test_a_metrics_writer_whose_tensorboard_file_cannot_be_written_still_closes_its_csvs(tmp_path, small_disk):
    """The CSVs on a disk with room, tb/ on a full one (a link): only TensorBoard's writes fail."""
    (tmp_path / "tb").symlink_to(small_disk)
    writer = metrics_writer(tmp_path)
    writer.handle(update(100, [20.0]))  # opens the event file
    fill(small_disk)
    with pytest.raises(WriteError, match=f"cannot write {tmp_path / 'tb'}/events.out.tfevents.*No space left"):
        for _ in range(1000):  # the file's last page has room for a few rows
            writer.handle(update(100, [20.0]))
    with pytest.raises(WriteError, match="tfevents"):  # the event that did not fit, flushed again
        writer.close()  # as the trainer does after a failed write: no more messages, then close
    assert writer.train_log.file.closed and writer.eval_log.file.closed
    steps = [int(row["env_steps"]) for row in metrics_rows(tmp_path)]
    assert steps == list(range(100, steps[-1] + 1, 100))  # each row once, the one TensorBoard missed included


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_run_whose_tensorboard_disk_is_full_stops_with_one_line_and_resumes_when_there_is_room(tmp_path, small_disk):
    run_dir = tmp_path / "run"
    first = run_cli(*SHORT_RUN, "--max-steps", "2000", "--run-dir", str(run_dir), timeout=100)
    assert first.returncode == 0, first.stderr
    shutil.move(run_dir / "tb", small_disk / "tb")
    (run_dir / "tb").symlink_to(small_disk / "tb")  # only TensorBoard's files on the small disk
    filler = fill(small_disk)

    full = run_cli("--resume", str(run_dir), "--max-steps", "30000", timeout=60)  # stops at its first TensorBoard write
    assert full.returncode == 1, full.stderr
    assert "Traceback" not in full.stderr and "Exception in thread" not in full.stderr, full.stderr
    lines = [line for line in full.stderr.splitlines() if "No space left on device" in line]
    assert len(lines) == 1 and lines[0].startswith(f"cannot write {run_dir / 'tb'}/events.out.tfevents"), full.stderr
    saved = load_checkpoint(run_dir / "checkpoints" / "last.pt")  # whole

    filler.unlink()
    resumed = run_cli("--resume", str(run_dir), "--max-steps", str(saved["env_steps"] + 2000), timeout=100)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "max_steps"
    assert read_scalars(run_dir / "tb")["train/entropy"][-1][0] >= saved["env_steps"] + 2000
