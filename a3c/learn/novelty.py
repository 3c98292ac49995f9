"""The novelty bonus of --novelty-coef: a reward for reaching observations the novelty's networks predict
badly (a3c/nets/novelty.py), and the predictor's training on the observations a rollout reached.

Each worker centres its errors on their rollout's mean, so that ending an episode costs no bonus, and divides
them by a running spread (--novelty-scale), so that the coefficient means the same whatever the observations'
scale: `step`, the errors' root mean square, gives a bonus of up to about coef a step where the agent goes where
it has seldom been; `return`, the spread of the bonus's discounted sum (random network distillation's), gives a
bonus whose return spreads about coef, however long the stretches of new observations are.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np
import torch

from a3c.learn.return_scale import return_spread
from a3c.nets.actor_critic import Network, RunningNorm


def arrivals(observations: np.ndarray, next_obs: np.ndarray) -> np.ndarray:
    """The observation each step of a rollout led to [T, B, ...]: the next step's, the last step's the one
    after the rollout. Where an episode ended it is the next episode's first, which novelty_bonus ignores."""
    return np.concatenate([observations[1:], next_obs[None]])


def centred_errors(errors: np.ndarray, restarted: np.ndarray) -> np.ndarray:
    """The bonus of each step [T, B] before its weight and scale: the error on what it led to, less the mean of the
    rollout's errors; none where the episode ended or the env did not step (`restarted` holds both: what the step
    led to is not the observation that follows it). Centred, the bonus is no reward for living: uncentred, every
    step earned about the weight, and an episode that ended at its goal lost the rest of that stream
    (docs/design/choices.md, "Novelty")."""
    scored = ~restarted
    center = errors[scored].mean() if scored.any() else 0.0
    return np.where(restarted, 0.0, errors - center)


def discounted_sums(carried: np.ndarray, rewards: np.ndarray, gamma: float) -> np.ndarray:
    """Each step's discounted sum of the rewards [T, B] up to it, carried on from `carried` [B], the sums before the
    rollout, across episodes' ends: random network distillation's running return, whose spread scales its bonus."""
    sums = np.empty(rewards.shape, dtype=np.float64)
    for t, reward in enumerate(rewards):
        carried = gamma * carried + reward
        sums[t] = carried
    return sums


def per_value(flags: np.ndarray, novelty_value: str) -> np.ndarray:
    """A rollout's per-step flags [T, B] (its episode ends, its truncations) for the two values of --novelty-value
    episodic or non-episodic, [T, B, 2]: the env's return's as they are; the bonus's the same where its return is
    episodic, none where it runs on across episodes (random network distillation's: an episode's end costs no
    bonus, and the next episode's first observation bootstraps it)."""
    return np.stack([flags, flags if novelty_value == "episodic" else np.zeros_like(flags)], axis=-1)


def novelty_inputs(model: Network, observations: np.ndarray, learn_from: Optional[np.ndarray] = None) -> torch.Tensor:
    """What the novelty's networks read of observations [..., *obs_shape], a row each: a flat observation as the
    network reads it (normalised where it normalises); a picture or a Dict or Tuple's parts viewed and normalised
    by the novelty's own statistics (a3c/nets/novelty.py), which first learn from the rows `learn_from` selects
    (bool [...])."""
    view = model.novelty.view
    if view is None:
        flat = torch.from_numpy(np.ascontiguousarray(observations)).reshape(-1, observations.shape[-1]).float()
        return model.normalize(flat)
    seen = view(torch.from_numpy(np.ascontiguousarray(observations)).reshape(-1, *view.obs_shape))
    if learn_from is not None:
        model.novelty_norm.update(seen[torch.from_numpy(learn_from.reshape(-1))])
    return model.novelty_norm(seen)


class NoveltyBonus:
    """A worker's bonus: the running spread it is divided by, and the predictor's gradient on what its last rollout
    reached. One pass of the novelty's networks a rollout serves both: the errors that make the bonus are those
    the predictor then learns from."""

    def __init__(self, coef: float, scale: str = "step", gamma: float = 0.99):
        self.coef, self.scale, self.gamma = coef, scale, gamma
        self.spread = RunningNorm(())  # of the errors (scale step) or of the bonus's discounted sums (return)
        self.sums: Optional[np.ndarray] = None  # scale return: each env's discounted sum so far [B]
        self.reached: Optional[torch.Tensor] = None  # the last rollout's errors, in the predictor's graph

    def of(
        self, model: Network, arrived: np.ndarray, restarted: np.ndarray, valid: np.ndarray
    ) -> tuple[np.ndarray, float]:
        """Each step's bonus [T, B] (`arrived`: what each step led to, `restarted` and `valid` [T, B] as the rollout
        has them), and the mean error over the valid steps, whose errors `backward` trains on."""
        self.reached = None
        if not valid.any():  # no env stepped: nothing to score, and no statistics to move
            return np.zeros(valid.shape, dtype=np.float32), math.nan
        with torch.no_grad():
            inputs = novelty_inputs(model, arrived, learn_from=valid)
        errors = model.novelty.errors(inputs)
        self.reached = errors[torch.from_numpy(valid.reshape(-1))]
        errors = errors.detach().numpy().reshape(valid.shape)
        centred = centred_errors(errors, restarted)
        bonus = self.coef * centred / self.spread_of(errors, centred, valid)
        return bonus.astype(np.float32), float(errors[valid].mean())

    def spread_of(self, errors: np.ndarray, centred: np.ndarray, valid: np.ndarray) -> float:
        """The running spread the bonus is divided by, updated with the valid steps of a rollout: the root mean
        square of the errors, or the standard deviation of the centred bonus's discounted sums."""
        if self.scale == "step":
            self.spread.update(torch.from_numpy(errors[valid]))
            return math.sqrt(self.spread.var.item() + self.spread.mean.item() ** 2) + 1e-8
        if self.sums is None:
            self.sums = np.zeros(centred.shape[1])
        sums = discounted_sums(self.sums, centred, self.gamma)
        self.sums = sums[-1]
        self.spread.update(torch.from_numpy(sums[valid]))
        return return_spread(self.spread)

    def backward(self) -> None:
        """The predictor's gradient on the observations the last rollout reached (their mean squared error),
        added to its .grad; once a rollout."""
        if self.reached is not None:
            self.reached.mean().backward()
            self.reached = None
