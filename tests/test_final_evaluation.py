"""The weights a run's budget ended with are evaluated once more: the evaluator's last round is up to an
interval older, and last.pt's weights are what a user takes away."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from a3c.agent import load_agent
from a3c.config.settings import Config
from a3c.learn.seeding import final_evaluation_seed
from a3c.parallel.evaluation import evaluate_agent
from a3c.run.trainer import train

pytestmark = pytest.mark.slow  # trains with a forked worker and the evaluator


@pytest.mark.timeout(120)
def test_a_run_that_spends_its_budget_ends_with_an_evaluation_of_last_pt_on_new_episodes(tmp_path, quiet):
    config = Config(
        env="CartPole-v1",
        num_processes=1,
        envs_per_process=4,
        max_steps=3_000,
        seed=2,
        eval_interval=3600.0,  # one periodic evaluation at most: the one at the start
        run_dir=str(tmp_path / "run"),
        print_interval=60.0,
        tensorboard=False,
    )
    summary = train(config, print_fn=quiet).summary
    with open(tmp_path / "run" / "eval.csv", newline="") as file:
        last = list(csv.DictReader(file))[-1]

    assert summary["stop_reason"] == "max_steps" and int(last["env_steps"]) == summary["env_steps"]
    assert float(last["mean_return"]) == pytest.approx(summary["last_eval_return"])
    agent = load_agent(tmp_path / "run" / "checkpoints" / "last.pt")
    replayed = evaluate_agent(agent, config.eval_episodes, final_evaluation_seed(config))
    assert float(last["mean_return"]) == pytest.approx(np.mean(replayed))
