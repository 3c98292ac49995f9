"""How new an observation is: random network distillation (--novelty-coef).

A fixed random network (the prior) maps each observation to a few features; a trained network (the
predictor) learns to give the same features on the observations the workers visit. Its error stays
large where it has seldom been trained, that is where the agent has seldom been: a count of visits
that generalises, and the uncertainty of a value fitted to 0 with a randomised prior (one member of
a bootstrapped ensemble). docs/design/choices.md, "Novelty".

The prior's weights are buffers drawn from one fixed seed, so every process of every run, resumed
ones with another --seed included, builds the same prior without sharing it, and no optimizer touches
it; the predictor's are parameters, shared and stepped like the network's.
"""

from __future__ import annotations

import math

import torch
from torch import nn

NOVELTY_WIDTH = 64  # the hidden layers of both networks
NOVELTY_FEATURES = 32  # what the predictor predicts of the prior
PRIOR_SEED = 0


class FixedLinear(nn.Module):
    """A linear layer whose weights are constants drawn from `generator` (He's scale, for ReLUs)."""

    def __init__(self, inputs: int, outputs: int, generator: torch.Generator):
        super().__init__()
        scale = math.sqrt(2.0 / inputs)
        self.register_buffer("weight", torch.randn(outputs, inputs, generator=generator) * scale)
        self.register_buffer("bias", torch.zeros(outputs))

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(inputs, self.weight, self.bias)


class NoveltyNets(nn.Module):
    def __init__(self, obs_size: int):
        super().__init__()
        generator = torch.Generator().manual_seed(PRIOR_SEED)
        self.prior = nn.Sequential(
            FixedLinear(obs_size, NOVELTY_WIDTH, generator),
            nn.ReLU(),
            FixedLinear(NOVELTY_WIDTH, NOVELTY_FEATURES, generator),
        )
        self.predictor = nn.Sequential(
            nn.Linear(obs_size, NOVELTY_WIDTH),
            nn.ReLU(),
            nn.Linear(NOVELTY_WIDTH, NOVELTY_WIDTH),
            nn.ReLU(),
            nn.Linear(NOVELTY_WIDTH, NOVELTY_FEATURES),
        )

    def errors(self, inputs: torch.Tensor) -> torch.Tensor:
        """The predictor's squared error on each of `inputs` [N, obs_size] (what the network reads of an
        observation, normalised where it normalises), averaged over the features: [N]."""
        return (self.predictor(inputs) - self.prior(inputs)).pow(2).mean(dim=-1)
