"""Videos of an agent's greedy episodes: one frame per step played; .mp4 by imageio, .gif by Pillow.

imageio (with its ffmpeg plugin for .mp4) is an optional extra, requirements-video.txt: a well-kept
library whose imageio-ffmpeg wheel bundles an ffmpeg binary, so nothing else is installed.
Pillow, which imageio depends on, writes .gif directly, with delays that keep the recorded time
(imageio's GIF writer passes 33.3 ms a frame, which Pillow truncates to 30 ms).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import numpy as np

from a3c.agent import Agent
from a3c.envs.make import make_env
from a3c.envs.masks import ACTION_MASK
from a3c.envs.progress import EpisodeProgress
from a3c.errors import ConfigError, EnvError, check_output_file, first_line

VIDEO_SUFFIXES = (".mp4", ".gif")
FRAMES_PER_SECOND = 30
MIN_SIDE = 128  # pixels: smaller frames (MinAtar's 10 x 10) are enlarged by a whole factor
TRAINING_VIDEO_STEPS = 1_000  # a video of the evaluator's: about half a minute


def require_writer(option: str, suffix: str) -> None:
    """Refuse in one line a video whose format's writer is missing: .mp4 needs imageio and its ffmpeg plugin
    (imageio alone, as some env packages bring it, cannot write one), .gif Pillow. Checked before filming."""
    needed = ("PIL",) if suffix.lower() == ".gif" else ("imageio", "imageio_ffmpeg")
    for module in needed:
        try:
            __import__(module)
        except ImportError:
            what = "Pillow" if suffix.lower() == ".gif" else "imageio with its ffmpeg plugin"
            raise ConfigError(
                f"{option} needs {what} for {suffix} files: pip install -r requirements-video.txt"
            ) from None


def check_video_path(path: str | Path) -> Path:
    return check_output_file("--video", path, VIDEO_SUFFIXES)


def video_frame(frame) -> np.ndarray:
    """An env's rgb_array frame as uint8 [H, W, 3]; floats are taken as [0, 1]; a small frame enlarged."""
    frame = np.asarray(frame)
    if frame.dtype != np.uint8:
        frame = (np.clip(frame, 0.0, 1.0) * 255).round().astype(np.uint8)
    scale = math.ceil(MIN_SIDE / min(frame.shape[:2]))
    return frame.repeat(scale, 0).repeat(scale, 1) if scale > 1 else frame


def rendered_frame(env, env_id: str) -> np.ndarray:
    try:
        frame = env.render()
    except NotImplementedError:
        frame = None
    except Exception as error:  # a renderer that cannot draw here (MuJoCo's OpenGL without a display, say)
        raise EnvError(
            f"{env_id} could not render a frame ({first_line(error)}); MuJoCo's tasks draw offscreen with "
            "MUJOCO_GL=egl or osmesa (docs/guides/videos.md)"
        ) from None
    if not isinstance(frame, np.ndarray) or frame.ndim != 3:
        raise EnvError(f"{env_id} does not render rgb_array frames, so it cannot be filmed")
    return video_frame(frame)


def gif_durations(frames: int, fps: float) -> list[int]:
    """Each frame's delay in ms for a GIF of `frames` frames at `fps`. GIF stores delays in whole
    centiseconds (Pillow truncates the rest), so a uniform 1000 / fps ms is cut short (33.3 ms to 30 ms
    at 30 fps, 10% fast); instead frame k ends at k * 1000 / fps rounded to 10 ms, so the delays
    (30, 40, 30, ... at 30 fps) keep time, also summed over identical frames that Pillow merges."""
    ends = [10 * round(k * 100 / fps) for k in range(frames + 1)]
    return [end - start for start, end in zip(ends, ends[1:])]


class GifWriter:
    """imageio's append_data / close for a .gif, written by Pillow with gif_durations' delays."""

    def __init__(self, path: str | Path, fps: float):
        self.path, self.fps, self.frames = Path(path), fps, []

    def append_data(self, frame: np.ndarray) -> None:
        from PIL import Image  # a dependency of imageio

        # paletted now, as Pillow would on saving: a third of an RGB frame's memory
        self.frames.append(Image.fromarray(frame).convert("P", palette=Image.Palette.ADAPTIVE))

    def close(self) -> None:
        if not self.frames:  # nothing filmed (the first frame failed to render): Pillow cannot save none
            return
        first, *rest = self.frames
        first.save(self.path, save_all=True, append_images=rest, duration=gif_durations(len(self.frames), self.fps))


def video_writer(path: str | Path):
    suffix = Path(path).suffix
    require_writer("--video", suffix)
    if suffix.lower() == ".gif":
        return GifWriter(path, FRAMES_PER_SECOND)
    import imageio.v2 as imageio

    return imageio.get_writer(str(path), fps=FRAMES_PER_SECOND, macro_block_size=2)  # even sides, unscaled


def check_renders(env_id: str) -> None:
    """Refuse at once, before training, an env that cannot be filmed (and a missing imageio)."""
    require_writer("--video-interval", ".mp4")  # the evaluator's videos
    env = make_env(env_id, training=False, render_mode="rgb_array")
    try:
        env.reset(seed=0)
        rendered_frame(env, env_id)
    finally:
        env.close()


def record_episodes(
    agent: Agent, env_id: str, episodes: int, seed: int, path: str | Path, max_steps: Optional[int] = None
) -> tuple[list[float], int]:
    """Play greedy episodes one after another (episode k reset with seed + k) and film them into `path`:
    one frame per step, the frame the agent acted on. Stops after `max_steps` steps in all, if given.
    Returns the episodes' returns (of those finished) and the frames written."""
    writer = video_writer(path)
    env = make_env(env_id, training=False, render_mode="rgb_array")
    returns, frames = [], 0
    try:
        for episode in range(episodes):
            obs, info = env.reset(seed=seed + episode)
            state, done, total = None, False, 0.0
            progress = EpisodeProgress(info, 1)  # the evaluator's rules: a new life, a stalled game
            while not done:
                if max_steps is not None and frames >= max_steps:
                    return returns, frames
                writer.append_data(rendered_frame(env, env_id))
                frames += 1
                mask = info.get(ACTION_MASK)
                action, state = agent.act(
                    obs[None],
                    state,
                    episode_start=progress.new_life,
                    action_mask=None if mask is None else np.asarray(mask)[None],
                )
                obs, reward, terminated, truncated, info = env.step(action[0])
                total += float(reward)
                done = terminated or truncated or bool(progress.step(reward, info)[0])
            returns.append(total)
        return returns, frames
    finally:
        writer.close()
        env.close()
