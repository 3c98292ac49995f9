"""Rewards divided by the running standard deviation of the discounted return (--normalize-returns): the value
targets of any task then stay near unit scale, whatever its rewards' units, so the value's error neither swamps the
policy's gradient under the clip nor saturates the network.

Each env keeps its discounted return so far, R_t = gamma R_{t-1} + r_t, started again at each episode's end; the
statistics of R are shared by the workers (a RunningNorm in the shared model, like the observations'), and a
rollout's rewards are divided by the spread as it stood when the rollout was played. The return's mean is not
subtracted: a shifted reward would change what the task asks (a survival bonus turned into a cost).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from a3c.nets.actor_critic import RunningNorm

EPSILON = 1e-8


def return_spread(stats: RunningNorm) -> float:
    """The discounted return's standard deviation: what a reward is divided by."""
    return math.sqrt(float(stats.var) + EPSILON)


def scaled_rewards(rewards: np.ndarray, spread: float) -> np.ndarray:
    """Rewards divided by the return's standard deviation."""
    return (rewards / spread).astype(rewards.dtype, copy=False)


class ReturnScale:
    """One worker's discounted returns of its K envs, feeding the shared statistics `stats`."""

    def __init__(self, num_envs: int, gamma: float, stats: RunningNorm):
        self.gamma, self.stats = gamma, stats
        self.returns = np.zeros(num_envs, dtype=np.float64)
        self.seen: list[np.ndarray] = []  # the returns of this rollout's steps, for the statistics

    def __call__(self, rewards: np.ndarray, ended: np.ndarray) -> np.ndarray:
        """A step's rewards [K], scaled; `ended` [K]: the envs whose episode ended at this step."""
        self.returns = self.returns * self.gamma + rewards
        self.seen.append(self.returns.copy())
        scaled = scaled_rewards(rewards, return_spread(self.stats))
        self.returns[ended | ~np.isfinite(self.returns)] = 0.0  # a NaN reward's env starts its return again
        return scaled

    def end_rollout(self) -> None:
        """The rollout's returns into the shared statistics (once a rollout, as the observations')."""
        if self.seen:
            returns = np.concatenate(self.seen)
            returns = returns[np.isfinite(returns)]  # a NaN reward's step leaves the statistics alone
            if returns.size:
                self.stats.update(torch.from_numpy(returns))
            self.seen = []
