"""The pixel path: ALE/Pong-v5 through the standard preprocessing, the convnet and one update."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

pytest.importorskip("ale_py", reason="Atari needs pip install -r requirements-atari.txt")

from a3c.config import Config
from a3c.envs import env_spec, make_env
from a3c.model import ActorCritic
from a3c.learner import ActorLearner
from a3c.seeding import worker_seeds

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
    model = ActorCritic((4, 84, 84), 6, hidden_sizes=(32,))
    frames = torch.randint(0, 256, (3, 4, 84, 84), dtype=torch.uint8)
    logits, value, (hx, cx) = model(frames, model.initial_state(3))
    assert logits.shape == (3, 6) and value.shape == (3,) and hx.shape == (3, 32)
    assert any(isinstance(m, torch.nn.Conv2d) for m in model.encoder.modules())


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
    result = run_cli("--env", PONG, "--num-processes", "2", "--max-steps", "400", "--hidden-sizes", "32",
                     "--eval-episodes", "0", "--run-dir", str(run_dir), timeout=170)
    assert result.returncode == 0, result.stderr
    config = json.loads((run_dir / "config.json").read_text())
    assert config["clip_rewards"] is True and config["envs_per_process"] == 4  # the Atari preset
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["env_steps"] >= 400 and summary["stop_reason"] == "max_steps"
    assert (run_dir / "checkpoints" / "last.pt").exists()
