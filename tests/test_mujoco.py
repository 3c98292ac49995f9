"""MuJoCo's tasks (the mujoco extra): trained through the CLI, and filmed offscreen without a display."""

from __future__ import annotations

import json
import os

import pytest

from a3c.envs.make import rendering

from .conftest import run_cli

pytest.importorskip("mujoco", reason="MuJoCo's tasks need pip install -r requirements-mujoco.txt")


def test_without_a_display_mujoco_draws_with_egl_unless_told_otherwise(monkeypatch):
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "MUJOCO_GL"):
        monkeypatch.delenv(name, raising=False)
    assert rendering(None) == {} and "MUJOCO_GL" not in os.environ  # nothing to draw: nothing set
    assert rendering("rgb_array") == {"render_mode": "rgb_array"} and os.environ["MUJOCO_GL"] == "egl"
    monkeypatch.setenv("MUJOCO_GL", "osmesa")
    rendering("rgb_array")
    assert os.environ["MUJOCO_GL"] == "osmesa"  # the user's choice stands
    monkeypatch.delenv("MUJOCO_GL")
    monkeypatch.setenv("DISPLAY", ":0")
    rendering("rgb_array")
    assert "MUJOCO_GL" not in os.environ  # a display: gymnasium's own choice


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_mujoco_task_trains_and_its_agent_is_filmed(tmp_path):
    pytest.importorskip("imageio_ffmpeg", reason=".mp4 videos need pip install -r requirements-video.txt")
    run_dir = tmp_path / "run"
    trained = run_cli("--env", "Hopper-v5", "--num-processes", "2", "--max-steps", "4000", "--run-dir", str(run_dir))
    assert trained.returncode == 0, trained.stderr
    environment = {name: value for name, value in os.environ.items() if name not in ("DISPLAY", "MUJOCO_GL")}
    video = tmp_path / "hopper.mp4"
    filmed = run_cli(
        "evaluate",
        "--checkpoint",
        str(run_dir / "checkpoints" / "last.pt"),
        "--episodes",
        "1",
        "--video",
        str(video),
        env=dict(environment, OMP_NUM_THREADS="1"),
    )
    assert filmed.returncode == 0, filmed.stderr
    assert f"wrote {video}" in filmed.stdout and video.stat().st_size > 10_000


def test_mujoco_warnings_are_python_warnings_not_a_log_file_in_the_working_directory(tmp_path, monkeypatch):
    from a3c.envs.make import make_env

    monkeypatch.chdir(tmp_path)
    with pytest.warns(RuntimeWarning, match=r"MuJoCo \(HalfCheetah-v5\): .*settotalmass"):
        make_env("HalfCheetah-v5").close()  # gymnasium's model uses an attribute MuJoCo 3.17 warns of
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_preset_solves_inverted_pendulum_confirmed_on_new_episodes(tmp_path):
    run_dir = tmp_path / "run"
    options = ["--num-processes", "2", "--eval-interval", "2", "--confirm-episodes", "10", "--max-steps", "300000"]
    trained = run_cli("--env", "InvertedPendulum-v5", *options, "--run-dir", str(run_dir), timeout=100)
    assert trained.returncode == 0, trained.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["solved"] and summary["solved_env_steps"] < 300_000, summary
    assert json.loads((run_dir / "config.json").read_text())["gae_lambda"] == 0.95  # the MuJoCo preset's
