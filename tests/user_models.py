"""Networks a user might pass with --model tests.user_models:NAME, good and broken."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from examples.custom_model import GRUActorCritic, MLPActorCritic, sizes


def mlp(observation_space, action_space) -> nn.Module:
    return MLPActorCritic(*sizes(observation_space, action_space), width=16)


def gru(observation_space, action_space) -> nn.Module:
    return GRUActorCritic(*sizes(observation_space, action_space), width=16)


class StateOfAList(GRUActorCritic):
    def initial_state(self, batch_size):
        return [[0.0] * self.width] * batch_size


def state_of_a_list(observation_space, action_space):
    return StateOfAList(*sizes(observation_space, action_space), width=8)


class RecurrentWithoutState(GRUActorCritic):
    def forward(self, obs, state):
        return super().forward(obs, state)[:2]


def recurrent_without_state(observation_space, action_space):
    return RecurrentWithoutState(*sizes(observation_space, action_space), width=8)


class StateChangesShape(GRUActorCritic):
    def forward(self, obs, state):
        head, value, (hidden,) = super().forward(obs, state)
        return head, value, (hidden[:, :4],)


def state_changes_shape(observation_space, action_space):
    return StateChangesShape(*sizes(observation_space, action_space), width=8)


def raises(observation_space, action_space):
    raise RuntimeError("no GPU found")


def not_a_module(observation_space, action_space):
    return "a string"


def no_parameters(observation_space, action_space):
    return nn.Identity()


class OneOutput(nn.Module):
    def __init__(self, obs_size: int, num_outputs: int):
        super().__init__()
        self.linear = nn.Linear(obs_size, num_outputs)

    def forward(self, obs):
        return self.linear(obs)


def one_output(observation_space, action_space):
    return OneOutput(*sizes(observation_space, action_space))


class ValueWithExtraDimension(OneOutput):
    def forward(self, obs):
        return self.linear(obs), self.linear(obs)[:, :1]  # value [B, 1] instead of [B]


def value_with_extra_dimension(observation_space, action_space):
    return ValueWithExtraDimension(*sizes(observation_space, action_space))


class ForwardRaises(OneOutput):
    def forward(self, obs):
        return self.linear(obs.reshape(len(obs), -1, 7)), torch.zeros(len(obs))


def forward_raises(observation_space, action_space):
    return ForwardRaises(*sizes(observation_space, action_space))


class PartsActorCritic(nn.Module):
    """Reads a Dict or Tuple observation as the trainer hands it over: each part's float batch, by key."""

    def __init__(self, observation_space, action_space):
        super().__init__()
        parts = observation_space.spaces
        self.keys = list(parts) if isinstance(parts, dict) else [str(k) for k in range(len(parts))]
        width = sum(
            getattr(space, "n", None) or int(np.prod(space.shape))
            for space in (parts.values() if isinstance(parts, dict) else parts)
        )  # a Discrete part comes one-hot
        self.body = nn.Sequential(nn.Linear(width, 32), nn.ReLU())
        self.policy, self.value = nn.Linear(32, action_space.n), nn.Linear(32, 1)

    def forward(self, obs: dict):
        assert sorted(obs) == sorted(self.keys), obs.keys()
        features = self.body(torch.cat([obs[key].flatten(1) for key in self.keys], dim=1))
        return self.policy(features), self.value(features).squeeze(-1)


def parts(observation_space, action_space) -> nn.Module:
    return PartsActorCritic(observation_space, action_space)
