"""DeepSea (a3c/envs/deep_sea.py): the corner is reached by a run of rights only, random play finds it in 2 of
2^N episodes, and any size is made by its id with the target return."""

from __future__ import annotations

import numpy as np
import pytest

from a3c.envs.deep_sea import DeepSea, deep_sea_registration
from a3c.envs.make import env_spec, make_env


def play(env: DeepSea, choose) -> tuple[float, int]:
    """One episode; choose(env) -> True for "right". Returns (return, steps)."""
    env.reset(seed=0)
    total, steps, done = 0.0, 0, False
    while not done:
        right = choose(env)
        action = env.right_action[env.row, env.column] if right else 1 - env.right_action[env.row, env.column]
        _, reward, done, _, _ = env.step(action)
        total, steps = total + reward, steps + 1
    return total, steps


@pytest.mark.parametrize("size", [2, 5, 20])
def test_all_rights_reach_the_corner_and_any_left_after_the_first_step_misses_it(size):
    env = DeepSea(size)
    assert play(env, lambda env: True) == (pytest.approx(1 - 0.01), size)
    one_left = play(env, lambda env: env.row != size - 1)  # left on the last step
    assert one_left[0] == pytest.approx(-0.01 * (size - 1) / size)
    assert play(env, lambda env: env.row != 0)[0] == pytest.approx(1 - 0.01 * (size - 1) / size)  # the wall


def test_the_action_meaning_right_varies_by_cell_and_is_the_same_in_every_env():
    first, second = DeepSea(10), DeepSea(10)
    assert np.array_equal(first.right_action, second.right_action)
    assert 0.3 < first.right_action.mean() < 0.7  # neither action is "right" everywhere


def test_random_play_reaches_the_corner_in_two_of_two_to_the_n_episodes():
    env, rng = DeepSea(4), np.random.default_rng(0)
    episodes = 8000
    found = sum(play(env, lambda env: bool(rng.integers(2)))[0] > 0.5 for _ in range(episodes))
    assert found / episodes == pytest.approx(2 / 2**4, abs=0.015)  # 5 binomial standard errors


def test_a_deep_sea_id_makes_its_size_with_the_target_return():
    assert deep_sea_registration("a3c/DeepSea30-v0")["kwargs"] == {"size": 30, "pixels": False}
    assert deep_sea_registration("a3c/PixelDeepSea30-v0")["kwargs"] == {"size": 30, "pixels": True}
    assert deep_sea_registration("CartPole-v1") is None
    spec = env_spec("a3c/DeepSea12-v0")
    assert spec.reward_threshold == 0.9 and spec.obs_shape == (144,)
    env = make_env("a3c/DeepSea12-v0")
    observation, _ = env.reset(seed=1)
    assert observation.sum() == 1 and observation[0] == 1  # the top-left cell
