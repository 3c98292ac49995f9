"""KeyDoor (a3c/envs/key_door.py): the goal is reached only through the door, the door opens only with the key,
the reward pays a faster find more, random play seldom finds it, and any size is made by its id."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from a3c.envs.key_door import KeyDoor
from a3c.envs.make import env_spec, make_env


def shortest_episode(env: KeyDoor) -> list[int]:
    """The actions of a shortest episode, by breadth-first search over (cell, key carried, door open)."""
    start = ((0, 0), False, False)
    paths, frontier = {start: []}, deque([start])
    while frontier:
        state = frontier.popleft()
        for action in range(4):
            env.agent, env.carrying, env.door_open = state
            _, _, reached, _, _ = env.step(action)
            after = (env.agent, env.carrying, env.door_open)
            if reached:
                return paths[state] + [action]
            if after not in paths:
                paths[after] = paths[state] + [action]
                frontier.append(after)
    raise AssertionError("the goal cannot be reached")


def play(env: KeyDoor, actions) -> tuple[float, bool]:
    env.reset(seed=0)
    total, reached = 0.0, False
    for action in actions:
        _, reward, reached, _, _ = env.step(action)
        total += reward
        if reached:
            break
    return total, reached


@pytest.mark.parametrize("size", [4, 8, 16])
def test_the_shortest_way_takes_the_key_then_the_door_and_earns_the_most(size):
    env = KeyDoor(size)
    path = shortest_episode(env)
    total, reached = play(env, path)
    assert reached and total == pytest.approx(1 - 0.9 * len(path) / env.step_limit)
    assert len(path) == env.shortest_steps()
    env.reset(seed=0)
    cells = [env.agent]
    for action in path:
        env.step(action)
        cells.append(env.agent)
    assert cells.index(env.key) < cells.index(env.door) < cells.index(env.goal)


def test_the_door_holds_without_the_key_and_the_wall_everywhere_else():
    env = KeyDoor(8)
    env.reset(seed=0)
    row, column = env.door
    env.agent = (row, column - 1)  # beside the door, no key
    env.step(1)  # right
    assert env.agent == (row, column - 1) and not env.door_open
    env.carrying = True
    env.step(1)
    assert env.agent == env.door and env.door_open
    wall_rows = [r for r in range(8) if r != row]
    env.agent = (wall_rows[0], column - 1)
    env.step(1)
    assert env.agent == (wall_rows[0], column - 1)  # the wall holds even with the key


def test_the_picture_shows_the_walls_the_door_the_key_the_goal_and_the_agent_channels_last():
    env = KeyDoor(6)
    picture, _ = env.reset(seed=0)
    assert picture.shape == (8, 8, 3) and picture.dtype == np.uint8
    assert picture[1 + env.door[0], 1 + env.door[1], 0] == 128 and picture[0, :, 0].min() == 255
    assert picture[1 + env.key[0], 1 + env.key[1], 1] == 255 and picture[7 - 1, 7 - 1, 1] == 128
    assert np.argwhere(picture[:, :, 2] == 255).tolist() == [[1, 1]]
    env.agent, env.carrying = env.key, True
    assert env.observation()[1 + env.key[0], 1 + env.key[1], 1] == 0  # carried: gone from the floor


def test_random_play_seldom_finds_the_goal_and_less_often_on_a_larger_floor():
    rng = np.random.default_rng(0)

    def found(size: int, episodes: int) -> float:
        env = KeyDoor(size)
        return sum(play(env, rng.integers(4, size=env.step_limit))[1] for _ in range(episodes)) / episodes

    small, large = found(8, 300), found(16, 300)
    assert 0.02 < small < 0.15 and large < 0.03 and large < small


def test_a_key_door_id_makes_its_size_channels_first_with_the_step_limit_and_target():
    spec = env_spec("a3c/KeyDoor12-v0")
    assert spec.obs_shape == (3, 14, 14) and spec.obs_dtype == np.uint8
    twice = KeyDoor(12).shortest_steps() * 2
    assert spec.reward_threshold == pytest.approx(1 - 0.9 * twice / (2 * 12 * 12))
    env = make_env("a3c/KeyDoor12-v0")
    picture, _ = env.reset(seed=0)
    assert picture.shape == (3, 14, 14) and picture[2, 1, 1] == 255  # the agent's channel, first
    assert env.spec.max_episode_steps == 2 * 12 * 12
