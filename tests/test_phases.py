"""The phase timings: counted from the process's launch, each milestone the first of its kind."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from a3c.config.settings import Config
from a3c.learn.learner import RolloutReport
from a3c.parallel.messages import Evaluation, Update
from a3c.run.phases import Phases, process_start_time
from a3c.run.trainer import train

from .conftest import REPO_ROOT


def report(rollout_seconds: float, update_seconds: float, replayed: bool = False) -> RolloutReport:
    return RolloutReport(
        0 if replayed else 20, [], [], 0.0, 0.0, 0.0, 1.0, rollout_seconds, update_seconds, replayed=replayed
    )


def test_the_launch_is_the_process_start_not_the_call():
    code = (
        "import time; time.sleep(0.5); from a3c.run.phases import process_start_time; "
        "print(time.monotonic() - process_start_time())"
    )
    age = float(
        subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout
    )
    assert 0.5 <= age < 5.0  # the sleep and the interpreter's start, not the moment of the call
    assert process_start_time() < time.monotonic()


def test_milestones_are_the_first_of_their_kind_and_counted_from_launch():
    launched = time.monotonic() - 2.0
    phases = Phases(launched)
    phases.mark("processes_started", launched + 1.0)
    phases.observe(Update(0, report(0.25, 0.05, replayed=True)))  # a replay is no env step
    phases.observe(Evaluation(0, 0.0, [1.0], False, confirmation=True))  # nor is a confirmation an evaluation
    assert "first_env_step" not in phases.times and "first_evaluation" not in phases.times
    phases.observe(Update(0, report(0.25, 0.05)))
    phases.observe(Update(1, report(0.0, 0.0)))  # later: the first update stays the first
    phases.observe(Evaluation(0, 0.0, [1.0], False))
    result = phases.report()
    assert result["processes_started"] == pytest.approx(1.0)
    assert result["first_update"] == pytest.approx(2.0, abs=0.05)
    assert result["first_env_step"] == pytest.approx(result["first_update"] - 0.3, abs=0.01)  # its rollout began
    assert result["first_update"] <= result["first_evaluation"] < 2.1
    assert result["stop_to_exit"] is None  # never stopped
    phases.mark("stopped")
    time.sleep(0.05)
    assert 0.05 <= phases.report()["stop_to_exit"] < 1.0


@pytest.mark.timeout(60)
def test_workers_start_in_waves_of_one_a_core_each_once_the_one_before_has_updated(tmp_path, monkeypatch, quiet):
    log = tmp_path / "starts"
    monkeypatch.setenv("A3C_TEST_STARTS", str(log))
    launched = time.monotonic()
    config = Config(
        env="tests.hostile_envs:SlowStart-v0",
        num_processes=4,
        active_workers=2,
        envs_per_process=1,
        eval_episodes=0,
        max_steps=3000,
        target_return=None,
        run_dir=str(tmp_path / "run"),
    )
    first_update = launched + train(config, print_fn=quiet, launched_at=launched).summary["phases"]["first_update"]
    starts = {name: float(at) for name, at in (line.split() for line in log.read_text().splitlines())}
    assert starts["a3c-worker-0"] < first_update and starts["a3c-worker-1"] < first_update
    assert starts["a3c-worker-2"] > first_update and starts["a3c-worker-3"] > first_update  # they waited
