"""Dict and Tuple observations at the env's edge: each part encoded as fits it, all carried as one flat
float vector.

`FlatObservation` makes every part floats side by side: a Box (of any shape) its values, a Discrete or
MultiDiscrete part one-hot, a MultiBinary part its bits, a uint8 picture its pixels (0-255), channels first.
Everything behind that edge (env batches, rollouts, replay, evaluation, observation statistics)
handles one flat Box, as for any flat observation; the network splits the vector again
(a3c/nets/structured.py). A Tuple's parts are keyed "0", "1", ...
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from a3c.envs.pictures import channels_first, is_picture, layout, shape_first
from a3c.errors import EnvError


@dataclass(frozen=True)
class Part:
    """One part of a structured observation: where it sits in the flat vector, and how it got there."""

    key: str  # the Dict key, or the Tuple index as a string
    kind: str  # "frames" (uint8 [C, H, W], to the convnet), "box" (normalised with --normalize-obs), "one_hot", "bits"
    shape: tuple[int, ...]  # the part as a --model reads it: its own shape; a one-hot part's [sum of its choices]
    choices: tuple[int, ...] = ()  # one_hot: the choices of each sub-part (a Discrete has one)
    start: tuple[int, ...] = ()  # one_hot: each sub-part's start
    layout: str = "first"  # frames: the env's layout of the picture (a3c/envs/pictures.py), made [C, H, W] here

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def encode(self, values: np.ndarray) -> np.ndarray:
        """A batch of this part's values as floats [B, size]."""
        batch = len(values)
        if self.kind == "frames":
            values = channels_first(np.asarray(values), self.layout)
        if self.kind != "one_hot":
            return np.asarray(values, dtype=np.float32).reshape(batch, self.size)
        indices = np.asarray(values, dtype=np.int64).reshape(batch, -1) - np.array(self.start)
        hot = np.zeros((batch, self.size), dtype=np.float32)
        hot[np.arange(batch)[:, None], indices + np.cumsum((0, *self.choices))[:-1]] = 1.0
        return hot


def observation_parts(space: gym.Space) -> tuple[Part, ...] | None:
    """The parts of a Dict or Tuple observation space; None for any other space. A part this module
    cannot encode is refused in one line naming it."""
    if isinstance(space, gym.spaces.Dict):
        named = list(space.spaces.items())
    elif isinstance(space, gym.spaces.Tuple):
        named = [(str(k), part) for k, part in enumerate(space.spaces)]
    else:
        return None
    if not named:
        raise EnvError(f"unsupported observation space {space}: it has no parts")
    return tuple(part_of(key, part, space) for key, part in named)


def part_of(key: str, space: gym.Space, whole: gym.Space) -> Part:
    if is_picture(space):
        return Part(key, "frames", shape_first(space.shape), layout=layout(space.shape))
    if isinstance(space, gym.spaces.Box):
        return Part(key, "box", tuple(int(n) for n in space.shape))
    if isinstance(space, gym.spaces.Discrete):
        return Part(key, "one_hot", (int(space.n),), (int(space.n),), (int(space.start),))
    if isinstance(space, gym.spaces.MultiDiscrete) and space.nvec.ndim == 1:
        choices = tuple(int(n) for n in space.nvec)
        return Part(key, "one_hot", (sum(choices),), choices, tuple(int(s) for s in space.start))
    if isinstance(space, gym.spaces.MultiBinary):
        return Part(key, "bits", tuple(int(n) for n in np.atleast_1d(space.n)))
    raise EnvError(
        f"unsupported observation space {whole}: its part {key!r} is a {space}, where a Box, a uint8 "
        f"picture, a Discrete, a flat MultiDiscrete or a MultiBinary is needed"
    )


def parts_values(parts: tuple[Part, ...], obs: Any) -> list:
    """The values of each part of a Dict (by key) or Tuple (by position) observation."""
    if isinstance(obs, dict):
        return [obs[part.key] for part in parts]
    return list(obs)


def flatten_batch(parts: tuple[Part, ...], obs: Any) -> np.ndarray:
    """A batch of structured observations (a dict, or a tuple, of batches [B, ...]) as floats [B, D]."""
    return np.concatenate([part.encode(values) for part, values in zip(parts, parts_values(parts, obs))], axis=1)


def flatten_one(parts: tuple[Part, ...], obs: Any) -> np.ndarray:
    """One structured observation as floats [D]."""
    return flatten_batch(parts, [np.asarray(values)[None] for values in parts_values(parts, obs)])[0]


class FlatObservation(gym.ObservationWrapper):
    """A Dict or Tuple observation as one flat float32 vector of its encoded parts."""

    def __init__(self, env: gym.Env, parts: tuple[Part, ...]):
        super().__init__(env)
        self.parts, self.structured_space = parts, env.observation_space
        size = sum(part.size for part in parts)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)

    def observation(self, observation) -> np.ndarray:
        return flatten_one(self.parts, observation)


def with_flat_observation(env: gym.Env) -> gym.Env:
    """`env`, wrapped by FlatObservation where its observation is a Dict or a Tuple."""
    parts = observation_parts(env.observation_space)
    return env if parts is None else FlatObservation(env, parts)
