"""MinAtar envs (the minatar extra): channels-first uint8 frames, the small convnet, a run through the CLI."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

from a3c.config.settings import Config
from a3c.envs.make import env_spec, make_env
from a3c.nets.factory import build_model

from .conftest import REPO_ROOT, run_cli
from .test_cli import assert_one_line_usage_error

pytest.importorskip("minatar", reason="MinAtar envs need pip install -r requirements-minatar.txt")
BREAKOUT = "MinAtar/Breakout-v1"


def test_frames_are_the_games_channels_first_as_0_or_255():
    env = make_env(BREAKOUT)
    obs, _ = env.reset(seed=0)
    state = env.unwrapped.game.state()  # [10, 10, channels] booleans
    env.close()
    assert obs.shape == (state.shape[2], 10, 10) and obs.dtype == np.uint8
    assert np.array_equal(obs, np.moveaxis(state, -1, 0) * 255)


def test_small_frames_get_the_minatar_papers_convnet():
    spec = env_spec(BREAKOUT)
    model = build_model(Config.for_env(BREAKOUT), spec)  # the preset: 128 units, no novelty bonus
    conv = model.encoder[1][0]
    assert (conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride) == (
        spec.obs_shape[0],
        16,
        (3, 3),
        (1, 1),
    )
    assert model.encoder[2].in_features == 16 * 8 * 8
    head, value, _ = model(torch.zeros(5, *spec.obs_shape, dtype=torch.uint8), model.initial_state(5))
    assert head.shape == (5, spec.num_actions) and value.shape == (5,)


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_short_breakout_run_through_the_cli_learns_from_frames(tmp_path):
    run_dir = tmp_path / "run"
    result = run_cli(
        "--env",
        BREAKOUT,
        "--num-processes",
        "2",
        "--max-steps",
        "20000",
        "--eval-interval",
        "1",
        "--no-tensorboard",
        "--run-dir",
        str(run_dir),
        timeout=80,
    )
    assert result.returncode == 0, result.stderr
    assert (run_dir / "checkpoints" / "best.pt").exists() and (run_dir / "summary.json").exists()


@pytest.mark.timeout(60)
def test_without_minatar_its_ids_are_a_one_line_usage_error(tmp_path):
    hide = (
        "import runpy, sys; sys.modules['minatar'] = None; "
        "sys.argv = ['main.py', *sys.argv[1:]]; runpy.run_path('main.py', run_name='__main__')"
    )
    result = subprocess.run(
        [sys.executable, "-c", hide, "--env", BREAKOUT, "--run-dir", str(tmp_path / "run")],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=50,
    )
    assert_one_line_usage_error(result, "pip install -r requirements-minatar.txt")
    assert not (tmp_path / "run").exists()


@pytest.mark.timeout(60)
def test_evaluate_films_minatar_enlarged(tmp_path):
    imageio = pytest.importorskip("imageio.v2", reason="videos need pip install -r requirements-video.txt")
    from a3c.learn.checkpoint import checkpoint_payload, save_checkpoint

    config = Config(env=BREAKOUT)
    checkpoint, video = tmp_path / "untrained.pt", tmp_path / "breakout.mp4"
    save_checkpoint(checkpoint, checkpoint_payload(config, build_model(config, env_spec(BREAKOUT)), 0))
    result = run_cli("evaluate", "--checkpoint", str(checkpoint), "--episodes", "1", "--video", str(video))
    assert result.returncode == 0, result.stderr
    assert imageio.get_reader(video).get_data(0).shape == (130, 130, 3)  # 10 x 10, enlarged 13 times
