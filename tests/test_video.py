"""Videos of greedy episodes: `evaluate --video` and the evaluator's `--video-interval` (the video extra)."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys

import numpy as np
import pytest

from a3c.config.settings import Config
from a3c.envs.make import env_spec
from a3c.learn.checkpoint import checkpoint_payload, save_checkpoint
from a3c.nets.factory import build_model
from a3c.tools.video import FRAMES_PER_SECOND, GifWriter, gif_durations

from .conftest import REPO_ROOT, run_cli
from .masked_env import EPISODE
from .test_cli import assert_one_line_usage_error

imageio = pytest.importorskip("imageio.v2", reason="videos need pip install -r requirements-video.txt")
# imageio alone (as gymnasium's MuJoCo extra brings it) writes no .mp4: the ffmpeg plugin is the video extra's
pytest.importorskip("imageio_ffmpeg", reason=".mp4 videos need pip install -r requirements-video.txt")
pytest.importorskip("pygame", reason="CartPole renders with pygame: pip install -r requirements-video.txt")
from PIL import Image, ImageSequence  # noqa: E402  (Pillow comes with imageio: after its skip)


def gif_delays(path) -> list[int]:
    with Image.open(path) as gif:
        return [frame.info["duration"] for frame in ImageSequence.Iterator(gif)]


def save_untrained(config: Config, path):
    """A checkpoint of `config`'s network as initialised."""
    save_checkpoint(path, checkpoint_payload(config, build_model(config, env_spec(config.env)), 0))
    return path


@pytest.fixture(scope="module")
def untrained_checkpoint(tmp_path_factory):
    """A CartPole network as initialised: its episodes are short (10-60 steps)."""
    return save_untrained(Config(), tmp_path_factory.mktemp("video") / "untrained.pt")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("suffix", [".mp4", ".gif"])
def test_evaluate_films_one_frame_per_step_played(untrained_checkpoint, tmp_path, suffix):
    video = tmp_path / f"episodes{suffix}"
    result = run_cli("evaluate", "--checkpoint", str(untrained_checkpoint), "--episodes", "2", "--video", str(video))
    assert result.returncode == 0, result.stderr
    mean_return = float(re.search(r"mean return (\d+\.\d+)", result.stdout).group(1))
    frames = int(re.search(r"\((\d+) frames\)", result.stdout).group(1))
    assert frames == round(2 * mean_return)  # CartPole pays 1 a step: the steps played
    if suffix == ".mp4":
        reader = imageio.get_reader(video)
        assert reader.count_frames() == frames
        assert reader.get_data(0).shape == (400, 600, 3)  # CartPole's own frame
    else:  # Pillow merges identical consecutive frames of a GIF, summing their delays
        delays = gif_delays(video)
        assert 1 <= len(delays) <= frames
        assert abs(sum(delays) - frames * 1000 / FRAMES_PER_SECOND) <= 10  # plays at the recorded speed


@pytest.mark.timeout(60)
def test_a_video_plays_by_the_envs_action_mask(tmp_path):
    """MaskedCue ends an episode at its first illegal action (-1): an untrained policy blind to the mask
    would end each of the 4 episodes within a step or two."""
    checkpoint = save_untrained(Config(env="tests.masked_env:MaskedCue-v0"), tmp_path / "untrained.pt")
    result = run_cli(
        "evaluate", "--checkpoint", str(checkpoint), "--episodes", "4", "--video", str(tmp_path / "masked.mp4")
    )
    assert result.returncode == 0, result.stderr
    assert (
        f"({4 * EPISODE} frames)" in result.stdout
        and float(re.search(r"mean return (-?\d+\.\d+)", result.stdout).group(1)) >= 0
    )
    assert imageio.get_reader(tmp_path / "masked.mp4").count_frames() == 4 * EPISODE


def test_gif_delays_are_whole_centiseconds_that_keep_the_recorded_time():
    delays = gif_durations(406, 30)
    assert len(delays) == 406 and sum(delays) == 13530  # not 406 x 30 ms = 12.18 s
    assert all(delay % 10 == 0 for delay in delays)
    assert all(abs(end - k * 1000 / 30) <= 5 for k, end in enumerate(itertools.accumulate(delays), 1))


def test_a_gif_keeps_time_across_the_identical_frames_pillow_merges(tmp_path):
    shades = [0, 0, 0, 90, 180, 180, 0]  # 7 frames, 4 after merging the identical neighbours
    writer = GifWriter(tmp_path / "merged.gif", FRAMES_PER_SECOND)
    for shade in shades:
        writer.append_data(np.full((16, 16, 3), shade, np.uint8))
    writer.close()
    delays = gif_delays(tmp_path / "merged.gif")
    assert len(delays) == len([shade for shade, _ in itertools.groupby(shades)])
    assert sum(delays) == round(len(shades) * 1000 / FRAMES_PER_SECOND, -1)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "name, words", [("out.avi", ["--video", ".mp4 or .gif"]), ("missing/out.mp4", ["--video", "does not exist"])]
)
def test_a_bad_video_path_is_a_one_line_usage_error(untrained_checkpoint, tmp_path, name, words):
    result = run_cli("evaluate", "--checkpoint", str(untrained_checkpoint), "--video", str(tmp_path / name))
    assert_one_line_usage_error(result, *words)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("hidden, words", [("imageio", "imageio with its ffmpeg plugin"), ("imageio_ffmpeg", "ffmpeg")])
def test_without_the_mp4_writer_video_options_are_a_one_line_usage_error(untrained_checkpoint, tmp_path, hidden, words):
    hide = (
        f"import runpy, sys; sys.modules[{hidden!r}] = None; "  # `import <hidden>` now fails, installed or not
        "sys.argv = ['main.py', *sys.argv[1:]]; runpy.run_path('main.py', run_name='__main__')"
    )
    for args in (
        ["evaluate", "--checkpoint", str(untrained_checkpoint), "--video", str(tmp_path / "a.mp4")],
        ["--video-interval", "10", "--max-steps", "100", "--run-dir", str(tmp_path / "run")],
    ):
        result = subprocess.run(
            [sys.executable, "-c", hide, *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=50
        )
        assert_one_line_usage_error(result, words, "pip install -r requirements-video.txt")
    assert not (tmp_path / "a.mp4").exists() and not (tmp_path / "run").exists()


@pytest.mark.timeout(60)
def test_without_the_ffmpeg_plugin_a_gif_is_still_written(untrained_checkpoint, tmp_path):
    hide = (
        "import runpy, sys; sys.modules['imageio_ffmpeg'] = None; "
        "sys.argv = ['main.py', *sys.argv[1:]]; runpy.run_path('main.py', run_name='__main__')"
    )
    args = [
        "evaluate",
        "--checkpoint",
        str(untrained_checkpoint),
        "--episodes",
        "1",
        "--video",
        str(tmp_path / "a.gif"),
    ]
    result = subprocess.run(
        [sys.executable, "-c", hide, *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=50
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "a.gif").stat().st_size > 0


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "args, words",
    [
        (["--eval-episodes", "0"], ["--video-interval", "--eval-episodes 0"]),
        (["--env", "tests.cue_env:Cue-v0"], ["Cue-v0"]),
    ],
)
def test_video_interval_refuses_what_cannot_be_filmed(tmp_path, args, words):
    result = run_cli("--video-interval", "5", "--max-steps", "100", *args, "--run-dir", str(tmp_path / "run"))
    assert_one_line_usage_error(result, *words)
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_the_evaluator_films_the_policy_during_training(tmp_path):
    run_dir = tmp_path / "run"
    result = run_cli(
        "--num-processes",
        "2",
        "--max-steps",
        "6000",
        "--target-return",
        "none",
        "--eval-interval",
        "0.2",
        "--video-interval",
        "0.5",
        "--no-tensorboard",
        "--run-dir",
        str(run_dir),
        timeout=80,
    )
    assert result.returncode == 0, result.stderr
    videos = sorted((run_dir / "videos").glob("*.mp4"))
    assert videos, list(run_dir.iterdir())
    assert all(imageio.get_reader(video).count_frames() >= 1 for video in videos)
    assert int(videos[0].stem) <= int(videos[-1].stem)  # named by the env steps at the evaluation
