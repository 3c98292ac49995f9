"""KeyDoor, a sparse grid world seen as a picture (the classic grid-world suites' door-and-key room): an N x N
floor split by a wall with one locked door; the key lies in the left room, the goal in the right room's far
corner. The agent starts in the top-left cell and moves up, right, down or left; stepping onto the key picks it
up, stepping into the door with the key opens it, and reaching the goal ends the episode with the only reward,
1 - 0.9 x steps / step limit (the suites' rule: a faster find earns more). The step limit, 2 N^2, is a fifth
of the suites' (10 N^2), so that the floor's size decides how seldom random play finds the goal: in about 6
episodes of 100 on 8 x 8 and 1 of 100 on 16 x 16 (tests/test_key_door.py counts it).

The observation is the room drawn from above, channels last as grid worlds draw it: [N + 2, N + 2, 3] uint8,
with the outer walls. Channel 0: walls 255, the locked door 128; channel 1: the key 255 (gone once carried),
the goal 128; channel 2: the agent 255. The layout is one per size (the wall's column, the door's row and
the key's cell drawn from LAYOUT_SEED), the same in every env and run. `a3c/KeyDoor16-v0` is made on demand
(a3c/envs/own.py) for any N of 4 or more, with its step limit and a target return: the return of an episode
twice as long as the shortest way.
"""

from __future__ import annotations

import re
from typing import Optional

import gymnasium as gym
import numpy as np

ID_PATTERN = re.compile(r"a3c/KeyDoor(\d+)-v0")
LAYOUT_SEED = 0
STEP_LIMIT_PER_CELL = 2  # the episode's step limit: 2 N^2
TARGET_STEPS = 2.0  # the target return's episode: this many times the shortest way's steps
MOVES = np.array([(-1, 0), (0, 1), (1, 0), (0, -1)])  # up, right, down, left: (row, column)
WALL, LOCKED_DOOR, KEY, GOAL, AGENT = 255, 128, 255, 128, 255


def key_door_registration(env_id: str) -> Optional[dict]:
    """gym.register's arguments for a KeyDoor id; None for any other id."""
    match = ID_PATTERN.fullmatch(env_id)
    if match is None:
        return None
    env = KeyDoor(int(match.group(1)))
    return {
        "entry_point": KeyDoor,
        "kwargs": {"size": env.size},
        "max_episode_steps": env.step_limit,
        "reward_threshold": env.goal_reward(TARGET_STEPS * env.shortest_steps()),
    }


class KeyDoor(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, size: int = 8):
        if size < 4:
            raise ValueError(f"KeyDoor needs a size of 4 or more, got {size}")
        self.size, self.step_limit = size, STEP_LIMIT_PER_CELL * size * size
        rng = np.random.default_rng(LAYOUT_SEED + size)
        self.wall_column = size // 2
        self.door = (int(rng.integers(0, size)), self.wall_column)
        key_cells = [
            (row, column) for row in range(size) for column in range(self.wall_column) if (row, column) != (0, 0)
        ]
        self.key = key_cells[int(rng.integers(len(key_cells)))]
        self.goal = (size - 1, size - 1)
        self.observation_space = gym.spaces.Box(0, 255, (size + 2, size + 2, 3), np.uint8)
        self.action_space = gym.spaces.Discrete(len(MOVES))
        self.reset_state()

    def shortest_steps(self) -> int:
        """The steps of the shortest way: to the key, to the door, to the goal; inside a room nothing stands
        between two cells, so each leg is their distance along the grid's axes."""
        legs = ((0, 0), self.key, self.door, self.goal)
        return sum(abs(a[0] - b[0]) + abs(a[1] - b[1]) for a, b in zip(legs, legs[1:]))

    def goal_reward(self, steps: float) -> float:
        """The reward of reaching the goal at the step `steps`."""
        return 1.0 - 0.9 * steps / self.step_limit

    def reset_state(self) -> None:
        self.agent, self.carrying, self.door_open, self.steps = (0, 0), False, False, 0

    def blocked(self, row: int, column: int) -> bool:
        """Whether the agent cannot enter the cell: outside the floor, the wall, or the door still locked."""
        if not (0 <= row < self.size and 0 <= column < self.size):
            return True
        if column != self.wall_column:
            return False
        return (row, column) != self.door or not (self.door_open or self.carrying)

    def observation(self) -> np.ndarray:
        picture = np.zeros(self.observation_space.shape, np.uint8)
        picture[[0, -1], :, 0] = picture[:, [0, -1], 0] = WALL
        picture[1:-1, 1 + self.wall_column, 0] = WALL
        picture[1 + self.door[0], 1 + self.door[1], 0] = 0 if self.door_open else LOCKED_DOOR
        if not self.carrying:
            picture[1 + self.key[0], 1 + self.key[1], 1] = KEY
        picture[1 + self.goal[0], 1 + self.goal[1], 1] = GOAL
        picture[1 + self.agent[0], 1 + self.agent[1], 2] = AGENT
        return picture

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        super().reset(seed=seed)
        self.reset_state()
        return self.observation(), {}

    def step(self, action):
        self.steps += 1
        row, column = np.array(self.agent) + MOVES[int(action)]
        if not self.blocked(row, column):
            self.agent = (int(row), int(column))
            self.door_open |= self.agent == self.door
            self.carrying |= self.agent == self.key
        reached = self.agent == self.goal
        reward = self.goal_reward(self.steps) if reached else 0.0
        return self.observation(), reward, reached, False, {}
