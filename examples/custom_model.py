"""Your own network for a3c: `python main.py --env CartPole-v1 --model examples.custom_model:mlp`.

The function gets the env's gymnasium spaces and returns a torch module whose forward(obs)
maps a float batch [B, *obs_shape] to (head [B, n], value [B]): logits for a Discrete
action space, the Gaussian mean (before a3c squashes it into the bounds) for a Box. A
recurrent one (`--model examples.custom_model:gru`) also defines initial_state(batch_size),
and its forward(obs, state) returns (head, value, next state).
"""

import numpy as np
import torch
from torch import nn


class MLPActorCritic(nn.Module):
    """Two tanh layers shared by a policy head and a value head."""

    def __init__(self, obs_size: int, num_outputs: int, width: int = 64):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_size, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh())
        self.policy = nn.Linear(width, num_outputs)
        self.value = nn.Linear(width, 1)

    def forward(self, obs):
        features = self.body(obs)
        return self.policy(features), self.value(features).squeeze(-1)


class GRUActorCritic(nn.Module):
    """A layer, a GRU cell, and the two heads on its hidden state: a tuple of one tensor [B, width]."""

    def __init__(self, obs_size: int, num_outputs: int, width: int = 64):
        super().__init__()
        self.width = width
        self.encoder = nn.Sequential(nn.Linear(obs_size, width), nn.Tanh())
        self.gru = nn.GRUCell(width, width)
        self.policy = nn.Linear(width, num_outputs)
        self.value = nn.Linear(width, 1)

    def initial_state(self, batch_size: int) -> tuple:
        return (torch.zeros(batch_size, self.width),)

    def forward(self, obs, state):
        hidden = self.gru(self.encoder(obs), state[0])
        return self.policy(hidden), self.value(hidden).squeeze(-1), (hidden,)


def sizes(observation_space, action_space) -> tuple[int, int]:
    """The flat observation's size and the number of head outputs (actions, or a Box's dimensions)."""
    outputs = action_space.n if hasattr(action_space, "n") else int(np.prod(action_space.shape))
    return int(np.prod(observation_space.shape)), outputs


def mlp(observation_space, action_space) -> nn.Module:
    return MLPActorCritic(*sizes(observation_space, action_space))


def gru(observation_space, action_space) -> nn.Module:
    return GRUActorCritic(*sizes(observation_space, action_space))
