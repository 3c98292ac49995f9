"""The pixel path: ALE/Pong-v5 through the standard preprocessing (ALE's vector env in training,
gymnasium's wrappers in evaluation), the convnet and one update."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import torch

pytest.importorskip("ale_py", reason="Atari needs pip install -r requirements-atari.txt")

from a3c.config.settings import Config
from a3c.envs import make as envs
from a3c.envs.batch import VectorEnvBatch, make_env_batch
from a3c.envs.make import env_spec, make_env
from a3c.learn.learner import ActorLearner
from a3c.learn.seeding import worker_seeds
from a3c.nets.actor_critic import ActorCritic, StockOptions

from .conftest import run_cli

PONG = "ALE/Pong-v5"


def test_atari_observations_are_four_stacked_84x84_grayscale_frames():
    spec = env_spec(PONG)
    assert spec.obs_shape == (4, 84, 84) and spec.obs_dtype == np.uint8 and spec.num_actions == 6
    env = make_env(PONG, training=False)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
    env.close()


def test_frames_go_through_a_convnet_to_the_lstm():
    model = ActorCritic((4, 84, 84), 6, StockOptions(hidden_sizes=(32,)))
    frames = torch.randint(0, 256, (3, 4, 84, 84), dtype=torch.uint8)
    logits, value, (hx, cx) = model(frames, model.initial_state(3))
    assert logits.shape == (3, 6) and value.shape == (3,) and hx.shape == (3, 32)
    assert any(isinstance(m, torch.nn.Conv2d) for m in model.encoder.modules())


def test_training_frames_from_ales_vector_env_equal_the_evaluators_frames(monkeypatch):
    """With the randomness off (no no-ops, no sticky actions), the workers' batch (ALE's C++ vector env)
    and the evaluator's env (gymnasium's wrappers) show the same frames after the same actions."""
    monkeypatch.setattr(envs, "NOOP_MAX", 0)
    monkeypatch.setitem(gym.spec(PONG).kwargs, "repeat_action_probability", 0.0)
    batch = make_env_batch(PONG, seeds=[1], vector_seed=0)
    single = make_env(PONG, training=False)
    assert isinstance(batch, VectorEnvBatch)
    obs, _ = single.reset(seed=1)
    np.testing.assert_array_equal(batch.obs[0], obs)
    rng = np.random.default_rng(0)
    for _ in range(150):
        action = int(rng.integers(6))
        result = batch.step(np.array([action]))
        obs, *_ = single.step(action)
        np.testing.assert_array_equal(result.obs[0], obs)
    batch.close()
    single.close()


def test_a_truncated_atari_episode_keeps_its_last_frames_and_the_next_step_only_resets(monkeypatch):
    monkeypatch.setitem(gym.spec(PONG).kwargs, "max_num_frames_per_episode", 240)  # about 60 agent steps
    batch = make_env_batch(PONG, seeds=[0, 1, 2], vector_seed=0)
    for _ in range(100):
        result = batch.step(np.zeros(3, dtype=np.int64))
        if result.truncated.any():
            break
    assert result.truncated.any() and not result.terminated.any()
    assert result.final_obs.dtype == np.uint8 and result.final_obs.shape == (3, 4, 84, 84)
    np.testing.assert_array_equal(result.final_obs[result.truncated], result.obs[result.truncated])
    assert not result.final_obs[~result.truncated].any()
    assert len(result.finished_returns) == result.truncated.sum()
    after = batch.step(np.zeros(3, dtype=np.int64))
    np.testing.assert_array_equal(after.valid, ~result.truncated)  # the reset step yields no transition
    batch.close()


@pytest.mark.timeout(120)
def test_one_rollout_and_one_update_on_pong():
    torch.manual_seed(0)
    config = Config(env=PONG, envs_per_process=2, t_max=5, hidden_sizes=(32,), clip_rewards=True)
    learner = ActorLearner(config, worker_seeds(config, rank=0))
    before = learner.flat_params.clone()
    grad, report = learner.compute_gradient()
    assert report.env_steps == 10 and torch.isfinite(grad).all() and grad.abs().sum() > 0
    learner.load_weights(before - 0.01 * grad)
    assert not torch.equal(learner.flat_params, before)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_short_pong_run_through_the_cli_writes_its_run_dir(tmp_path):
    run_dir = tmp_path / "run"
    result = run_cli(
        "--env",
        PONG,
        "--num-processes",
        "2",
        "--max-steps",
        "400",
        "--hidden-sizes",
        "32",
        "--eval-episodes",
        "0",
        "--run-dir",
        str(run_dir),
        timeout=170,
    )
    assert result.returncode == 0, result.stderr
    config = json.loads((run_dir / "config.json").read_text())
    assert (
        config["clip_rewards"] is True
        and config["envs_per_process"] == 16
        and config["center_frames"] is True
        and config["frames"] == 1
    )  # the preset
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["env_steps"] >= 400 and summary["stop_reason"] == "max_steps"
    assert (run_dir / "checkpoints" / "last.pt").exists()


def test_the_evaluators_games_report_their_lives_for_the_state_to_restart_at_a_lost_one():
    from a3c.envs.batch import make_vector_env
    from a3c.envs.progress import EpisodeProgress

    games, _ = make_vector_env("ALE/Breakout-v5", 2)
    try:
        _, info = games.reset(seed=0)
        progress = EpisodeProgress(info, 2)
        lost = np.zeros(2, dtype=bool)
        for _ in range(400):  # never serving (NOOP), no life is lost; FIRE serves, and a still paddle misses
            _, _, _, _, info = games.step(np.array([0, 1]))
            progress.step(np.zeros(2), info)
            lost |= progress.new_life
        assert info["lives"][0] == 5 and lost.tolist() == [False, True]
    finally:
        games.close()
