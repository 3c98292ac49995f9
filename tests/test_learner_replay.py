"""Replay inside the learner: a stored rollout re-run under the current weights, corrected by V-trace."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from a3c.config.settings import Config
from a3c.learn.learner import ActorLearner
from a3c.learn.seeding import worker_seeds
from a3c.run.trainer import train


def learner_for(**options) -> ActorLearner:
    # no novelty bonus: a replay does not train its predictor (tests/test_novelty.py)
    defaults = {"envs_per_process": 8, "t_max": 12, "max_grad_norm": 1e9, "replay_ratio": 1.0, "gae_lambda": 0.9}
    config = Config(**{**defaults, "novelty_coef": 0.0, **options})
    torch.manual_seed(0)
    return ActorLearner(config, worker_seeds(config, rank=0))


def test_without_replay_the_learner_keeps_no_memory_and_replays_nothing():
    learner = learner_for(replay_ratio=0.0)
    learner.compute_gradient()
    assert learner.memory is None and learner.replays_due() == 0


@pytest.mark.parametrize(
    "options",
    [
        {},  # CartPole's vector env: steps that only reset an env, restarts inside the rollout
        {"learner": "torch"},
        {"core": "none", "hidden_sizes": (16, 16)},
        {"env": "Pendulum-v1", "envs_per_process": 3},  # a Gaussian, with its log std
        {"env": "tests.cue_env:CueTruncated-v0", "envs_per_process": 3},  # time limits: bootstraps from final_obs
        {"normalize_obs": True},
        {"env": "tests.masked_env:MaskedCue-v0"},  # action masks: the replay scores the masked policy that acted
        {"env": "tests.masked_env:MaskedMultiCue-v0", "learner": "torch"},  # a mask of each part of a MultiDiscrete
        {"env": "tests.structured_env:FrameAndVector-v0", "normalize_obs": True},  # a Dict observation, stored flat
    ],
)
def test_replaying_a_rollout_at_once_gives_exactly_the_on_policy_gradient(options, monkeypatch):
    """Same weights and noise: every ratio is 1, so V-trace is GAE and the update is the on-policy one."""
    learner = learner_for(replay_capacity=1, **options)  # holds the last rollout only
    learner.compute_gradient()  # the next rollout starts from a carried recurrent state
    monkeypatch.setattr(learner.model, "resample_noise", lambda: None)  # the behaviour policy's noise, kept
    for norm in (learner.model.obs_norm, learner.model.value_stats):  # statistics move after each rollout; hold them
        if norm is not None:
            monkeypatch.setattr(norm, "update", lambda batch: None)
    on_policy, report = learner.compute_gradient()
    on_policy = on_policy.clone()
    replayed, replay_report = learner.replay_gradient()
    assert replay_report.replayed and replay_report.env_steps == 0
    assert replay_report.value_loss == pytest.approx(report.value_loss, rel=1e-4)
    assert_close(replayed, on_policy, rtol=1e-4, atol=1e-6)


def test_new_noise_makes_the_replay_off_policy_and_the_ratios_correct_it():
    learner = learner_for()
    on_policy, _ = learner.compute_gradient()
    on_policy = on_policy.clone()
    replayed, report = learner.replay_gradient()  # a new noise draw: another policy than the one that acted
    assert torch.isfinite(replayed).all() and not torch.allclose(replayed, on_policy)
    assert len(learner.memory) == 1  # the replay stored nothing new


def test_the_priority_of_a_replayed_rollout_becomes_its_value_error():
    learner = learner_for(replay_priority=0.6)
    learner.compute_gradient()
    learner.replay_gradient()
    priority = learner.memory._priorities[0]
    assert priority != 1.0 and 0 < priority < 10


def test_replays_due_follow_a_poisson_law_of_the_replay_ratio():
    learner = learner_for(replay_ratio=2.5)
    learner.compute_gradient()
    draws = [learner.replays_due() for _ in range(4_000)]
    assert np.mean(draws) == pytest.approx(2.5, abs=0.1) and np.var(draws) == pytest.approx(2.5, abs=0.3)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_run_with_replay_reports_what_the_learner_does(tmp_path, quiet):
    config = Config(
        env="tests.cue_env:Cue-v0",
        num_processes=2,
        envs_per_process=4,
        t_max=5,
        max_steps=20_000,
        replay_ratio=2.0,
        replay_priority=0.5,
        log_interval=2_000,
        target_return=None,
        eval_episodes=0,
        run_dir=str(tmp_path / "run"),
    )
    summary = train(config, print_fn=quiet).summary
    with open(tmp_path / "run" / "metrics.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    last = rows[-1]
    assert summary["env_steps"] >= 20_000
    replays, updates = int(last["replay_updates"]), int(last["updates"])
    assert 0.5 < replays / (updates - replays) < 4  # about 2 replays per on-policy update
    for row in rows[1:-1]:
        assert float(row["replay_updates_per_second"]) > 0 and float(row["updates_per_second"]) > 0
        assert float(row["rollout_ms"]) > 0 and float(row["update_ms"]) > 0 and float(row["policy_lag"]) >= 0


@pytest.mark.parametrize(
    "env", ["CartPole-v1", "Pendulum-v1", "tests.masked_env:MaskedCue-v0", "tests.masked_env:MaskedMultiCue-v0"]
)
def test_the_off_policy_gradient_is_the_same_through_the_numpy_path_and_autograd(env):
    """Weights moved since the rollout was played, and new noise: ratios away from 1, clipped by V-trace."""
    gradients = []
    for learner_kind in ("numpy", "torch"):
        learner = learner_for(env=env, envs_per_process=4, learner=learner_kind, rho_bar=0.9, c_bar=0.8)
        learner.compute_gradient()
        with torch.no_grad():
            learner.flat_params.add_(
                torch.randn(learner.flat_params.shape, generator=torch.Generator().manual_seed(1)) * 0.05
            )
        grad, _ = learner.replay_gradient()
        gradients.append(grad.clone())
    assert torch.count_nonzero(gradients[0]) > gradients[0].numel() // 2
    assert_close(gradients[0], gradients[1], rtol=1e-4, atol=1e-6)


def test_next_gradient_plays_a_new_rollout_then_the_replays_due_after_it():
    learner = learner_for(replay_ratio=3.0, envs_per_process=2, t_max=4)
    replayed = 0
    for _ in range(10):
        assert not learner.next_gradient()[1].replayed  # a new rollout, then the replays drawn after it
        due = learner.replays_pending
        for _ in range(due):
            assert learner.next_gradient()[1].replayed
        assert learner.replays_pending == 0
        replayed += due
    assert 10 < replayed < 60  # Poisson(3) ten times: 30 on average
