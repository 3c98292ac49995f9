"""--normalize-returns: rewards divided by the running spread of each env's discounted return."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from a3c.config.settings import Config
from a3c.learn.learner import ActorLearner
from a3c.learn.return_scale import ReturnScale
from a3c.learn.seeding import worker_seeds
from a3c.nets.actor_critic import RunningNorm


def test_each_env_keeps_its_discounted_return_until_its_episode_ends_and_the_rollout_feeds_the_statistics():
    stats = RunningNorm(())
    scale = ReturnScale(2, gamma=0.5, stats=stats)
    first = scale(np.array([1.0, 2.0], dtype=np.float32), np.array([False, True]))
    assert np.allclose(first, [1.0, 2.0], atol=1e-6)  # the statistics' start: a variance of 1
    scale(np.array([1.0, 4.0], dtype=np.float32), np.array([False, False]))
    assert stats.count.item() == 0  # read, not updated, while the rollout is played
    scale.end_rollout()
    # env 0: 1, then 0.5 * 1 + 1; env 1: 2 (its episode ended), then 4 from a new start
    seen = np.array([1.0, 2.0, 1.5, 4.0])
    assert stats.count.item() == 4
    assert stats.mean.item() == pytest.approx(seen.mean()) and stats.var.item() == pytest.approx(seen.var())
    later = scale(np.array([3.0, 3.0], dtype=np.float32), np.array([False, False]))
    assert np.allclose(later, 3.0 / np.sqrt(seen.var()), rtol=1e-5)


def test_a_nan_reward_leaves_the_statistics_alone_and_its_env_starts_its_return_again():
    stats = RunningNorm(())
    scale = ReturnScale(2, gamma=0.9, stats=stats)
    scale(np.array([np.nan, 1.0], dtype=np.float32), np.array([False, False]))
    scale(np.array([2.0, 1.0], dtype=np.float32), np.array([False, False]))
    scale.end_rollout()
    assert stats.count.item() == 3 and np.isfinite(stats.var.item())
    assert scale.returns[0] == pytest.approx(2.0)


def test_the_learner_scales_rewards_by_the_shared_return_statistics():
    config = Config(env="Pendulum-v1", envs_per_process=3, t_max=8, normalize_returns=True, reward_scale=1.0)
    shared = RunningNorm(())
    shared.var.fill_(100.0)
    torch.manual_seed(0)
    learner = ActorLearner(config, worker_seeds(config, rank=0), {"return_stats": shared})
    played = learner.play_rollout()
    assert shared.count.item() == 24  # the rollout's 8 x 3 returns
    # Pendulum's rewards lie in [-16.3, 0]: divided by the variance's root of 10 as the rollout was played
    assert played.steps.rewards.min() >= -1.64 and played.steps.rewards.max() <= 0
    torch.manual_seed(0)  # the same weights, so the same actions and rewards
    unscaled = ActorLearner(config.replace(normalize_returns=False), worker_seeds(config, rank=0)).play_rollout()
    assert np.allclose(played.steps.rewards, unscaled.steps.rewards / 10.0, rtol=1e-4)
