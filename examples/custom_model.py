"""Your own network for a3c: `python main.py --env CartPole-v1 --model examples.custom_model:mlp`.

The function gets the env's gymnasium spaces and returns a torch module whose forward(obs)
maps a float batch [B, *obs_shape] to (head [B, n], value [B]): logits for a Discrete
action space, the Gaussian mean (before a3c squashes it into the bounds) for a Box.
"""

import numpy as np
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


def mlp(observation_space, action_space) -> nn.Module:
    outputs = action_space.n if hasattr(action_space, "n") else int(np.prod(action_space.shape))
    return MLPActorCritic(int(np.prod(observation_space.shape)), outputs)
