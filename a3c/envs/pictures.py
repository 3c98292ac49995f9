"""Pictures at the env's edge: a uint8 image the network reads channels first, [C, H, W].

Frames come stacked channels first (Atari's [4, 84, 84]); most images come channels last (a grid world's
[7, 7, 3] view, an RGB render [H, W, 3]) or without channels (a grey map [H, W]). `layout` tells them apart by
the rule of thumb the field uses: the channels are the smallest axis, first where the first axis is the
smallest (ties included), else last. `ChannelsFirst` hands the rest of the trainer every picture as [C, H, W].
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np


def is_picture(space: gym.Space) -> bool:
    """A uint8 Box of two or three axes: what the convolutions read."""
    return isinstance(space, gym.spaces.Box) and space.dtype == np.uint8 and len(space.shape) in (2, 3)


def layout(shape: tuple[int, ...]) -> str:
    """ "plain" ([H, W]: one channel), "first" ([C, H, W]) or "last" ([H, W, C])."""
    if len(shape) == 2:
        return "plain"
    return "first" if shape[0] <= min(shape[1:]) else "last"


def channels_first(pictures: np.ndarray, picture_layout: str) -> np.ndarray:
    """A batch of pictures [N, ...] in `picture_layout` as [N, C, H, W]."""
    if picture_layout == "plain":
        return pictures[:, None]
    if picture_layout == "last":
        return np.ascontiguousarray(np.moveaxis(pictures, -1, 1))
    return pictures


def shape_first(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """A picture's shape channels first."""
    return tuple(int(n) for n in channels_first(np.zeros((1, *shape), np.uint8), layout(shape)).shape[1:])


class ChannelsFirst(gym.ObservationWrapper):
    """A channels-last or channel-less picture as [C, H, W]."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.layout = layout(env.observation_space.shape)
        self.observation_space = gym.spaces.Box(0, 255, shape_first(env.observation_space.shape), np.uint8)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return channels_first(np.asarray(observation)[None], self.layout)[0]


def with_channels_first(env: gym.Env) -> gym.Env:
    """`env`, wrapped by ChannelsFirst where its observation is a picture not already channels first."""
    space = env.observation_space
    return ChannelsFirst(env) if is_picture(space) and layout(space.shape) != "first" else env
