""" "Solved" that a second look confirms: an evaluation reaching the target is replayed on new episodes.

CoinFlip-v0 (tests/cue_env.py) pays a fair coin whatever the policy does: 17% of 10-episode means
reach its target of 0.7 by luck, a 100-episode mean almost never (4e-5).
"""

from __future__ import annotations

import csv

import pytest

from a3c.config.settings import Config
from a3c.learn.checkpoint import load_checkpoint
from a3c.parallel.evaluation import Standing, confirms
from a3c.run.trainer import train

pytestmark = pytest.mark.slow  # trains with a forked worker and the evaluator

COIN = "tests.cue_env:CoinFlip-v0"
TARGET = 0.7


def coin_run(tmp_path, quiet, **options) -> tuple[dict, list[dict]]:
    """A short run on the coin: one worker, an evaluation of 10 episodes every 20 ms."""
    config = Config(
        env=COIN,
        num_processes=1,
        envs_per_process=4,
        t_max=5,
        max_steps=30_000,
        seed=3,
        eval_episodes=10,
        eval_interval=0.02,
        run_dir=str(tmp_path / "run"),
        print_interval=60.0,
        tensorboard=False,
        **options,
    )
    summary = train(config, print_fn=quiet).summary
    with open(tmp_path / "run" / "eval.csv", newline="") as file:
        return summary, list(csv.DictReader(file))


@pytest.mark.timeout(120)
def test_a_lucky_evaluation_is_not_confirmed_and_the_run_trains_on(tmp_path, quiet):
    summary, rows = coin_run(tmp_path, quiet)

    confirmations = [row for row in rows if row["confirmation"] == "1"]
    evaluations = [row for row in rows if row["confirmation"] == "0"]
    assert confirmations, "no 10-episode mean reached 0.7 by luck: the test saw no confirmation"
    for confirmation in confirmations:  # each follows the lucky evaluation it confirms, of the same weights
        lucky = rows[rows.index(confirmation) - 1]
        assert lucky["confirmation"] == "0" and lucky["env_steps"] == confirmation["env_steps"]
        assert float(lucky["mean_return"]) >= TARGET and lucky["episodes"] == "10"
        assert confirmation["episodes"] == "100" and float(confirmation["mean_return"]) < TARGET
    assert summary["solved"] is False and summary["stop_reason"] == "max_steps"
    best_confirmed = max(float(row["mean_return"]) for row in confirmations)
    assert summary["confirmed_episodes"] == 100
    assert summary["confirmed_return"] == pytest.approx(best_confirmed, abs=1e-6)
    assert summary["best_eval_return"] == max(float(row["mean_return"]) for row in evaluations) >= TARGET

    # best.pt holds the best confirmed mean: the lucky 10-episode means above it never replaced it
    best = load_checkpoint(tmp_path / "run" / "checkpoints" / "best.pt")
    assert best["eval_confirmed"] is True and best["eval_episodes"] == 100
    assert best["eval_return"] == pytest.approx(best_confirmed, abs=1e-6)
    assert any(float(row["mean_return"]) > best["eval_return"] for row in evaluations)
    assert best["model"]["value_stats.count"] > 0  # the shared statistics, not the evaluator's start-up copy


@pytest.mark.timeout(120)
def test_without_confirmation_a_lucky_evaluation_solves(tmp_path, quiet):
    summary, rows = coin_run(tmp_path, quiet, confirm_episodes=0)

    assert summary["solved"] is True and summary["stop_reason"] == "solved"
    assert summary["confirmed_return"] is None
    assert float(rows[-1]["mean_return"]) >= TARGET and all(row["confirmation"] == "0" for row in rows)


def test_a_confirmation_needs_its_mean_at_the_target_with_90_percent_confidence():
    assert confirms([500.0] * 100, 475.0)
    spread = [-50.0, -350.0] * 50  # mean -200, standard error 15
    assert not confirms(spread, -200.0) and not confirms(spread, -219.0)
    assert confirms(spread, -220.0)  # the mean less 1.28 standard errors: -219.3
    assert not confirms([500.0] * 100, None)


def test_a_confirmed_mean_outranks_any_mean_of_one_evaluation():
    assert Standing(True, 0.5) > Standing(False, 0.9) > Standing(False, 0.8)
    assert Standing(True, 0.6) > Standing(True, 0.5)
