"""The novelty bonus of --novelty-coef: a reward for reaching observations the novelty's networks predict
badly (a3c/nets/novelty.py), and the predictor's training on the observations a rollout reached.

Each worker centres its errors on their rollout's mean and divides them by their running root mean square
(random network distillation divides by a running spread), so the coefficient means the same whatever the
observations' scale: a bonus of up to about coef a step where the agent goes where it has seldom been, as
much less where it has been, and none on average, so that ending an episode costs no bonus.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np
import torch

from a3c.nets.actor_critic import Network, RunningNorm


def arrivals(observations: np.ndarray, next_obs: np.ndarray) -> np.ndarray:
    """The observation each step of a rollout led to [T, B, ...]: the next step's, the last step's the one
    after the rollout. Where an episode ended it is the next episode's first, which novelty_bonus ignores."""
    return np.concatenate([observations[1:], next_obs[None]])


def novelty_bonus(errors: np.ndarray, scale: float, restarted: np.ndarray, coef: float) -> np.ndarray:
    """The bonus of each step [T, B]: `coef` times the error on what it led to, less the mean of the rollout's
    errors, over the errors' scale; none where the episode ended or the env did not step (`restarted` holds
    both: what the step led to is not the observation that follows it). Centred, the bonus is no reward for
    living: uncentred, every step earned about `coef`, and an episode that ended at its goal lost the rest of
    that stream (docs/design/choices.md, "Novelty")."""
    scored = ~restarted
    center = errors[scored].mean() if scored.any() else 0.0
    return np.where(restarted, 0.0, coef * (errors - center) / scale).astype(np.float32)


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
    """A worker's bonus: the running scale of its errors, and the predictor's gradient on what its last rollout
    reached. One pass of the novelty's networks a rollout serves both: the errors that make the bonus are those
    the predictor then learns from."""

    def __init__(self, coef: float):
        self.coef = coef
        self.errors = RunningNorm(())
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
        self.errors.update(torch.from_numpy(errors[valid]))
        scale = math.sqrt(self.errors.var.item() + self.errors.mean.item() ** 2) + 1e-8
        return novelty_bonus(errors, scale, restarted, self.coef), float(errors[valid].mean())

    def backward(self) -> None:
        """The predictor's gradient on the observations the last rollout reached (their mean squared error),
        added to its .grad; once a rollout."""
        if self.reached is not None:
            self.reached.mean().backward()
            self.reached = None
