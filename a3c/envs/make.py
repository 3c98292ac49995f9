"""Making one env its family's way (Atari's preprocessing, MinAtar's frames, gymnasium's), and its spec
read from its spaces."""

from __future__ import annotations

import functools
import os
import warnings
from typing import Optional

import gymnasium as gym
import numpy as np

from a3c.envs.families import ATARI_FRAME_STACK, is_atari, is_minatar, is_mujoco
from a3c.envs.masks import ActionMaskInObservation, with_action_mask, with_action_mask_moved
from a3c.envs.own import register_own
from a3c.envs.parts import FlatObservation, with_flat_observation
from a3c.envs.pictures import with_channels_first
from a3c.envs.spec import EnvSpec
from a3c.errors import EnvError, first_line


def rendering(render_mode: Optional[str]) -> dict:
    """gym.make's render_mode only when asked for: an env without the argument must still be made. Without a
    display, MuJoCo's tasks draw with EGL unless MUJOCO_GL says otherwise: gymnasium would try GLFW first, which
    without a display fails only at the first frame (docs/guides/videos.md)."""
    if render_mode is None:
        return {}
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("MUJOCO_GL", "egl")
    return {"render_mode": render_mode}


def warn_in_python(env_id: str) -> None:
    """MuJoCo's warnings as Python warnings (shown once a process, silenced as any other), not lines appended to a
    MUJOCO_LOG.TXT in the user's working directory, where MuJoCo writes them by default (gymnasium's HalfCheetah
    model warns at every load)."""
    try:
        import mujoco
    except ImportError:
        return  # gym.make says what to install
    mujoco.set_mju_user_warning(lambda text: warnings.warn(f"MuJoCo ({env_id}): {text}", RuntimeWarning, stacklevel=2))


NOOP_MAX = 30  # random no-ops after a reset: different starts from a deterministic emulator


def make_atari(env_id: str, training: bool, render_mode: Optional[str] = None) -> gym.Env:
    """The standard preprocessing: noop reset, frame skip 4, 84x84 grayscale, 4 stacked frames;
    a lost life ends the episode in training only (evaluation plays whole games)."""
    try:
        import ale_py
    except ImportError:
        raise EnvError(f"{env_id} needs the Atari extras: pip install -r requirements-atari.txt") from None
    gym.register_envs(ale_py)
    env = gym.make(env_id, frameskip=1, disable_env_checker=True, **rendering(render_mode))
    env = gym.wrappers.AtariPreprocessing(
        env, noop_max=NOOP_MAX, frame_skip=4, screen_size=84, terminal_on_life_loss=training, grayscale_obs=True
    )
    return gym.wrappers.FrameStackObservation(env, ATARI_FRAME_STACK, padding_type="zero")  # as ALE's vector env pads


def make_atari_vector(env_id: str, size: int, training: bool):
    """`size` envs of `env_id` stepped in ALE's C++ with make_atari's preprocessing (the same frames;
    tests/test_atari.py compares them), in one thread: the worker processes already fill the cores.
    The game's version settings (sticky actions, action set, frame limit) come from its registration."""
    import ale_py
    from ale_py.vector_env import AtariVectorEnv

    gym.register_envs(ale_py)
    version = gym.spec(env_id).kwargs
    return AtariVectorEnv(
        version["game"],
        size,
        num_threads=1,
        repeat_action_probability=version.get("repeat_action_probability", 0.0),
        full_action_space=version.get("full_action_space", False),
        max_num_frames_per_episode=version.get("max_num_frames_per_episode", 108_000),
        noop_max=NOOP_MAX,
        stack_num=ATARI_FRAME_STACK,
        episodic_life=training,
        reward_clipping=False,
        use_fire_reset=False,
    )


class MinAtarFrames(gym.ObservationWrapper):
    """MinAtar's [10, 10, channels] booleans as [channels, 10, 10] uint8 frames of 0 and 255: the stock
    network's convnet reads channels first and scales frames by 1/255, as it does Atari's."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        height, width, channels = env.observation_space.shape
        self.observation_space = gym.spaces.Box(0, 255, (channels, height, width), np.uint8)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(np.moveaxis(observation, -1, 0)).astype(np.uint8) * np.uint8(255)


def make_minatar(env_id: str, render_mode: Optional[str] = None) -> gym.Env:
    try:
        import minatar.gym
    except ImportError:
        raise EnvError(f"{env_id} needs the MinAtar extra: pip install -r requirements-minatar.txt") from None
    if env_id not in gym.registry:
        minatar.gym.register_envs()  # gymnasium 1.x does not import it by itself
    return MinAtarFrames(gym.make(env_id, disable_env_checker=True, **rendering(render_mode)))


def make_env(env_id: str, training: bool = True, render_mode: Optional[str] = None) -> gym.Env:
    """gymnasium.make with one-line errors; accepts the 'module:EnvId' form and ALE/ ids.
    `render_mode="rgb_array"`: an env to film (a3c/tools/video.py)."""
    try:
        if is_atari(env_id):
            env = make_atari(env_id, training, render_mode)
        elif is_minatar(env_id):
            env = make_minatar(env_id, render_mode)
        else:
            register_own(env_id)  # a3c/DeepSeaN-v0, a3c/KeyDoorN-v0, ...: any N, made on demand
            if is_mujoco(env_id):
                warn_in_python(env_id)
            env = gym.make(env_id, disable_env_checker=True, **rendering(render_mode))
    except (gym.error.Error, ImportError, ValueError, TypeError, AttributeError) as error:
        raise EnvError(f"cannot make environment {env_id!r}: {first_line(error)}") from None
    try:
        env = with_flat_observation(with_channels_first(with_action_mask_moved(env)))
        describe(env)
    except EnvError:
        env.close()
        raise
    return env


def wrapped_by(env: gym.Env, kind: type) -> Optional[gym.Wrapper]:
    """The wrapper of type `kind` around `env`, if any."""
    while isinstance(env, gym.Wrapper):
        if isinstance(env, kind):
            return env
        env = env.env
    return None


def describe(env: gym.Env) -> EnvSpec:
    """Read the spaces; refuse the ones the model cannot handle, naming them."""
    threshold = env.spec.reward_threshold if env.spec is not None else None
    return EnvSpec(
        reward_threshold=None if threshold is None else float(threshold),
        **observation_fields(env),
        **action_fields(env.action_space),
    )


def observation_fields(env: gym.Env) -> dict:
    """The EnvSpec fields of the env's observation: a flat Box or uint8 frames (a picture arrives channels first
    by ChannelsFirst, a Dict or Tuple flattened by FlatObservation, which keeps its parts); and where its action
    mask comes from."""
    obs_space = env.observation_space
    flat = isinstance(obs_space, gym.spaces.Box) and len(obs_space.shape) == 1
    frames = isinstance(obs_space, gym.spaces.Box) and len(obs_space.shape) == 3 and obs_space.dtype == np.uint8
    if not (flat or frames):
        raise EnvError(
            f"unsupported observation space {obs_space}: a flat Box, a uint8 picture, or a Dict or "
            f"Tuple of such parts and Discrete, MultiDiscrete or MultiBinary ones is needed"
        )
    structured = wrapped_by(env, FlatObservation)
    return {
        "obs_shape": tuple(int(n) for n in obs_space.shape),
        "obs_dtype": np.uint8 if frames else np.float32,
        # a --model is built for the env's own space: a Dict or Tuple where the network reads its parts
        "observation_space": obs_space if structured is None else structured.structured_space,
        "obs_parts": None if structured is None else structured.parts,
        "action_mask": "observation" if wrapped_by(env, ActionMaskInObservation) else None,
    }


def action_fields(space: gym.Space) -> dict:
    """The EnvSpec fields of an action space: Discrete, a flat MultiDiscrete or MultiBinary (a categorical
    per part), or a bounded flat Box."""
    fields = {"action_space": space, "action_start": 0}
    if isinstance(space, gym.spaces.Discrete):
        return {**fields, "num_actions": int(space.n), "action_start": int(space.start)}
    if isinstance(space, gym.spaces.MultiDiscrete) and space.nvec.ndim == 1:
        parts = tuple(int(n) for n in space.nvec)
        start = np.asarray(space.start, dtype=np.int64)
        return {**fields, "num_actions": sum(parts), "action_start": start, "action_parts": parts}
    if isinstance(space, gym.spaces.MultiBinary) and len(space.shape) == 1:
        parts = (2,) * int(space.shape[0])  # a categorical of 2 per bit: a Bernoulli of logit l1 - l0
        return {**fields, "num_actions": sum(parts), "action_parts": parts, "action_dtype": np.int8}
    bounded = isinstance(space, gym.spaces.Box) and np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))
    if bounded and len(space.shape) == 1:
        low, high = space.low.astype(np.float32), space.high.astype(np.float32)
        return {
            **fields,
            "num_actions": int(space.shape[0]),
            "continuous": True,
            "action_low": low,
            "action_high": high,
        }
    raise EnvError(
        f"unsupported action space {space}: a Discrete, a flat MultiDiscrete or MultiBinary, "
        f"or a bounded flat Box is needed"
    )


@functools.cache
def env_spec(env_id: str) -> EnvSpec:
    """The spec of `env_id`'s envs, from one made, reset and closed; once per process (and a forked worker
    inherits its trainer's): making an Atari env loads its ROM, about 0.25 s."""
    env = make_env(env_id)
    try:
        return with_action_mask(describe(env), env, env_id)
    finally:
        env.close()
