"""--max-minutes: a wall-clock budget that stops the run and that the learning rate decays over."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest
import torch

from a3c.config.settings import Config
from a3c.learn.learner import RolloutReport
from a3c.parallel.worker import update
from tests.conftest import LONG_RUN, assert_one_line_usage_error, metrics_rows, run_cli


class RecordingOptimizer:
    """The shared optimizer's face to a worker, recording the lr of each step."""

    def __init__(self):
        self.params = [torch.zeros(3)]
        self.lrs = []

    def step_count(self) -> int:
        return len(self.lrs)

    def step(self, grads, lr: float) -> int:
        self.lrs.append(lr)
        return len(self.lrs)


class OneGradientLearner:
    def __init__(self, config: Config):
        self.config = config

    def load_weights(self, weights) -> None:
        pass

    def next_gradient(self):
        return torch.ones(3), RolloutReport(10, [], [], 0.0, 0.0, 0.0, grad_norm=1.0)


def worker_lr(config: Config, env_steps: int, seconds_ago: float) -> float:
    """The lr a worker steps the shared model with, `seconds_ago` into the run's clock."""
    optimizer = RecordingOptimizer()
    shared = SimpleNamespace(
        optimizer=optimizer,
        env_steps=SimpleNamespace(total=lambda: env_steps),
        started_at=time.monotonic() - seconds_ago,
    )
    update(OneGradientLearner(config), shared)
    return optimizer.lrs[0]


def test_a_worker_steps_with_the_lr_of_the_time_spent_when_that_is_further_than_the_steps():
    config = Config(lr=1e-3, max_steps=1000, max_minutes=1.0)
    assert worker_lr(config, 100, 45.0) == pytest.approx(2.5e-4, rel=1e-3)  # 75% of the minute, 10% of the steps
    assert worker_lr(config, 900, 6.0) == pytest.approx(1e-4, rel=1e-3)  # 10% of the minute, 90% of the steps
    assert worker_lr(config.replace(max_minutes=0.0), 100, 45.0) == pytest.approx(9e-4)  # no wall-clock budget


def test_the_run_stops_at_max_minutes_with_the_lr_decayed_over_them(tmp_path):
    run_dir = tmp_path / "run"
    result = run_cli(*LONG_RUN, "--max-minutes", "0.1", "--log-interval", "2000", "--run-dir", str(run_dir))
    assert result.returncode == 0, result.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == "max_minutes"
    assert 6.0 <= summary["wall_seconds"] < 10.0, summary["wall_seconds"]
    rows = metrics_rows(run_dir)
    assert len(rows) >= 3
    lr = json.loads((run_dir / "config.json").read_text())["lr"]
    for row in rows:  # 50M env steps are far off: the clock alone decays the lr (written to 6 decimals)
        assert float(row["lr"]) == pytest.approx(lr * max(0.0, 1 - float(row["wall_seconds"]) / 6), abs=1e-6)
    assert float(rows[-1]["lr"]) < 0.25 * lr


def test_a_resumed_run_already_past_max_minutes_is_a_usage_error_and_runs_on_with_more(tmp_path):
    run_dir = tmp_path / "run"
    first = run_cli(*LONG_RUN, "--max-minutes", "0.05", "--run-dir", str(run_dir))
    assert first.returncode == 0, first.stderr
    assert_one_line_usage_error(run_cli("--resume", str(run_dir)), "already at --max-minutes 0.05")
    assert (run_dir / "checkpoints" / "last.pt").exists()
    trained = json.loads((run_dir / "summary.json").read_text())["wall_seconds"]
    resumed = run_cli("--resume", str(run_dir), "--max-minutes", "0.1")
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == "max_minutes" and trained < 6.0 <= summary["wall_seconds"] < 10.0
