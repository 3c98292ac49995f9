"""Pictures at the env's edge (a3c/envs/pictures.py): channels-last and channel-less uint8 images reach the
network channels first, alone or as a Dict's part; frames already channels first pass as they are."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from a3c.envs.make import describe
from a3c.envs.parts import observation_parts, with_flat_observation
from a3c.envs.pictures import layout, with_channels_first


class StillPicture(gym.Env):
    """One fixed picture, episodes of one step."""

    action_space = gym.spaces.Discrete(2)

    def __init__(self, space: gym.Space, picture):
        self.observation_space, self.picture = space, picture

    def reset(self, *, seed=None, options=None):
        return self.picture, {}

    def step(self, action):
        return self.picture, 0.0, True, False, {}


def numbered(shape: tuple[int, ...]) -> np.ndarray:
    return (np.arange(np.prod(shape)) % 256).astype(np.uint8).reshape(shape)


@pytest.mark.parametrize(
    "shape, expected",
    [((4, 84, 84), "first"), ((10, 10, 10), "first"), ((7, 7, 3), "last"), ((96, 96, 3), "last"), ((20, 20), "plain")],
)
def test_the_channels_are_the_smallest_axis_first_where_it_ties(shape, expected):
    assert layout(shape) == expected


def test_a_channels_last_picture_reaches_the_network_channels_first():
    picture = numbered((7, 5, 3))
    env = with_channels_first(StillPicture(gym.spaces.Box(0, 255, (7, 5, 3), np.uint8), picture))
    seen, _ = env.reset()
    assert env.observation_space.shape == (3, 7, 5) and np.array_equal(seen, picture.transpose(2, 0, 1))
    assert describe(env).obs_shape == (3, 7, 5)


def test_a_grey_picture_gets_one_channel_and_frames_pass_as_they_are():
    grey = numbered((6, 9))
    env = with_channels_first(StillPicture(gym.spaces.Box(0, 255, (6, 9), np.uint8), grey))
    assert np.array_equal(env.reset()[0], grey[None])
    frames = StillPicture(gym.spaces.Box(0, 255, (4, 8, 8), np.uint8), numbered((4, 8, 8)))
    assert with_channels_first(frames) is frames


def test_a_dict_part_that_is_a_channels_last_picture_is_flattened_channels_first():
    space = gym.spaces.Dict({"image": gym.spaces.Box(0, 255, (5, 5, 3), np.uint8), "direction": gym.spaces.Discrete(4)})
    direction, image = observation_parts(space)  # a Dict's keys in order
    assert image.kind == "frames" and image.shape == (3, 5, 5) and direction.kind == "one_hot"
    picture = numbered((5, 5, 3))
    env = with_flat_observation(StillPicture(space, {"image": picture, "direction": 2}))
    flat, _ = env.reset()
    assert flat[:4].tolist() == [0, 0, 1, 0]
    assert np.array_equal(flat[4:], picture.transpose(2, 0, 1).ravel().astype(np.float32))
