"""DeepSea, the standard probe of deep exploration (bsuite's design): an N x N grid that the agent falls
through one row a step, choosing left or right. "Right" costs 0.01 / N; the only reward, +1, waits in
the bottom-right cell, which only a run of rights reaches (or a left against the first wall, then
rights): random play finds it in 2 of 2^N episodes, and a policy that dithers step by step no more
often. `a3c/DeepSea20-v0` is the 20 x 20 grid: any size is made on demand (a3c/envs/own.py), with a
target return of 0.9 (the corner on nearly every episode; all rights return 0.99). `a3c/PixelDeepSea20-v0`
is the same chain seen as a picture: a grey N x N image with the agent's cell lit, as a grid world draws it.
"""

from __future__ import annotations

import re
from typing import Optional

import gymnasium as gym
import numpy as np

ID_PATTERN = re.compile(r"a3c/(Pixel)?DeepSea(\d+)-v0")
MOVE_COST = 0.01  # of all rights over an episode: each costs MOVE_COST / N
TARGET_RETURN = 0.9
MAPPING_SEED = 0  # the cells' action mapping: one per size, the same in every env and run


def deep_sea_registration(env_id: str) -> Optional[dict]:
    """gym.register's arguments for a DeepSea id (sizes below 2 are refused by the env itself); None for any
    other id."""
    match = ID_PATTERN.fullmatch(env_id)
    if match is None:
        return None
    size = int(match.group(2))
    return {
        "entry_point": DeepSea,
        "kwargs": {"size": size, "pixels": match.group(1) is not None},
        "max_episode_steps": max(size, 1),
        "reward_threshold": TARGET_RETURN,
    }


class DeepSea(gym.Env):
    """The observation is the one-hot of the agent's cell (N x N, flattened), or with `pixels` the grid as a
    uint8 picture [N, N], the agent's cell 255 and the rest 0; action 0 or 1. Which of the two
    means "right" differs from cell to cell (drawn once per size from MAPPING_SEED, as bsuite randomises it),
    so no fixed action repeated solves it. Walls hold the agent at the first and last column."""

    metadata = {"render_modes": []}

    def __init__(self, size: int = 10, pixels: bool = False):
        if size < 2:
            raise ValueError(f"DeepSea needs a size of 2 or more, got {size}")
        self.size, self.pixels = size, pixels
        self.observation_space = (
            gym.spaces.Box(0, 255, (size, size), np.uint8)
            if pixels
            else gym.spaces.Box(0.0, 1.0, (size * size,), np.float32)
        )
        self.action_space = gym.spaces.Discrete(2)
        self.right_action = np.random.default_rng(MAPPING_SEED).integers(0, 2, (size, size))
        self.row = self.column = 0

    def observation(self) -> np.ndarray:
        cells = np.zeros(self.size * self.size, np.float32)
        if self.row < self.size:
            cells[self.row * self.size + self.column] = 1.0
        return (cells * 255).astype(np.uint8).reshape(self.size, self.size) if self.pixels else cells

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        super().reset(seed=seed)
        self.row = self.column = 0
        return self.observation(), {}

    def step(self, action):
        right = int(action) == self.right_action[self.row, self.column]
        reward = -MOVE_COST / self.size if right else 0.0
        self.column = min(self.column + 1, self.size - 1) if right else max(self.column - 1, 0)
        self.row += 1
        terminated = self.row == self.size
        if terminated and self.column == self.size - 1:
            reward += 1.0
        return self.observation(), reward, terminated, False, {}
