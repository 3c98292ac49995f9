"""Action distributions over the policy head's output: sampling, greedy actions, log-probs, entropy.

Sampling and greedy actions read the head as a numpy array (the actor's); log-probs
and entropy read it as a tensor with autograd (the learner's).

Categorical for Discrete spaces (the head gives logits). Gaussian for Box spaces:
the head gives the mean, squashed into the action bounds, and the log standard
deviation is one learned parameter per action dimension, independent of the
state. That is the usual choice for actor-critic methods on continuous control:
it cannot collapse on one state's gradient, and the NoisyNet head already makes
exploration state-dependent.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

LOG_2PI = math.log(2 * math.pi)


def sample_categorical(probs: np.ndarray, uniform: np.ndarray) -> np.ndarray:
    """One action per row by inverse CDF; 20x cheaper than torch.multinomial at batch size 8.

    The uniform draw is scaled by each row's total, which float32 rounding leaves
    a little off 1, so an action of probability 0 is never picked.
    """
    cdf = probs.cumsum(axis=1)
    return (cdf < uniform[:, None] * cdf[:, -1:]).sum(axis=1)


class Categorical:
    continuous = False

    def sample(self, head: np.ndarray, log_std, rng: np.random.Generator) -> np.ndarray:
        unnormalised = np.exp(head - head.max(axis=1, keepdims=True))  # sample_categorical scales by the total
        return sample_categorical(unnormalised, rng.random(head.shape[0]))

    def greedy(self, head: np.ndarray) -> np.ndarray:
        return head.argmax(axis=-1)

    def log_prob_entropy(self, head: torch.Tensor, log_std, actions: np.ndarray):
        log_p = F.log_softmax(head, dim=-1)
        log_probs = log_p.gather(-1, torch.from_numpy(actions).unsqueeze(-1)).squeeze(-1)
        return log_probs, -(log_p.exp() * log_p).sum(-1)


class Gaussian:
    """`low`, `high`: the Box bounds. Where both are finite the mean is center + half range *
    tanh(head): an unbounded mean drifts past a bound, where every sample is clipped to the
    same action and the policy stops learning (seen on Pendulum-v1: means of -14 for a
    bound of -2, a pendulum spinning for ever)."""

    continuous = True

    def __init__(self, low: np.ndarray | None = None, high: np.ndarray | None = None):
        self.bounded = low is not None and high is not None and np.isfinite(low).all() and np.isfinite(high).all()
        if self.bounded:
            self.center, self.half_range = (high + low) / 2, (high - low) / 2

    def mean(self, head: torch.Tensor) -> torch.Tensor:
        if not self.bounded:
            return head
        return torch.from_numpy(self.center) + torch.from_numpy(self.half_range) * torch.tanh(head)

    def numpy_mean(self, head: np.ndarray) -> np.ndarray:
        return self.center + self.half_range * np.tanh(head) if self.bounded else head

    def sample(self, head: np.ndarray, log_std: torch.Tensor, rng: np.random.Generator) -> np.ndarray:
        mean, std = self.numpy_mean(head), log_std.detach().exp().numpy()
        return (mean + std * rng.standard_normal(mean.shape)).astype(np.float32)

    def greedy(self, head: np.ndarray) -> np.ndarray:
        return self.numpy_mean(head).astype(np.float32)

    def log_prob_entropy(self, head: torch.Tensor, log_std: torch.Tensor, actions: np.ndarray):
        """Of the unclipped sample; summed over the action dimensions."""
        z = (torch.from_numpy(actions) - self.mean(head)) * torch.exp(-log_std)
        log_probs = (-0.5 * z.pow(2) - log_std - 0.5 * LOG_2PI).sum(-1)
        entropy = (0.5 + 0.5 * LOG_2PI + log_std).sum().expand(log_probs.shape)
        return log_probs, entropy


def distribution(spec) -> Categorical | Gaussian:
    """For an EnvSpec: the policy head's distribution over its actions."""
    return Gaussian(spec.action_low, spec.action_high) if spec.continuous else Categorical()
