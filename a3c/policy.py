"""Action distributions over the policy head's output: sampling, greedy actions, log-probs, entropy.

Categorical for Discrete spaces (the head gives logits). Gaussian for Box spaces:
the head gives the mean and the log standard deviation is one learned parameter
per action dimension, independent of the state. That is the usual choice for
actor-critic methods on continuous control: it cannot collapse on one state's
gradient, and the NoisyNet head already makes exploration state-dependent.
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

    @torch.no_grad()
    def sample(self, head: torch.Tensor, log_std, rng: np.random.Generator) -> np.ndarray:
        return sample_categorical(F.softmax(head, dim=-1).numpy(), rng.random(head.shape[0]))

    @torch.no_grad()
    def greedy(self, head: torch.Tensor) -> np.ndarray:
        return head.argmax(dim=-1).numpy()

    def log_prob_entropy(self, head: torch.Tensor, log_std, actions: np.ndarray):
        log_p = F.log_softmax(head, dim=-1)
        log_probs = log_p.gather(-1, torch.from_numpy(actions).unsqueeze(-1)).squeeze(-1)
        return log_probs, -(log_p.exp() * log_p).sum(-1)


class Gaussian:
    continuous = True

    @torch.no_grad()
    def sample(self, head: torch.Tensor, log_std: torch.Tensor, rng: np.random.Generator) -> np.ndarray:
        mean, std = head.numpy(), log_std.exp().numpy()
        return (mean + std * rng.standard_normal(mean.shape)).astype(np.float32)

    @torch.no_grad()
    def greedy(self, head: torch.Tensor) -> np.ndarray:
        return head.numpy()

    def log_prob_entropy(self, head: torch.Tensor, log_std: torch.Tensor, actions: np.ndarray):
        """Of the unclipped sample; summed over the action dimensions."""
        z = (torch.from_numpy(actions) - head) * torch.exp(-log_std)
        log_probs = (-0.5 * z.pow(2) - log_std - 0.5 * LOG_2PI).sum(-1)
        entropy = (0.5 + 0.5 * LOG_2PI + log_std).sum().expand(log_probs.shape)
        return log_probs, entropy


def distribution(continuous: bool):
    return Gaussian() if continuous else Categorical()
