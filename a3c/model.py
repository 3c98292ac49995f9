"""NoisyLinear and the recurrent ActorCritic network."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

LSTMState = tuple[torch.Tensor, torch.Tensor]


class NoisyLinear(nn.Module):
    """Linear layer with independent Gaussian parameter noise (Fortunato et al., 2018).

    The paper's A3C variant: every weight has its own noise, mu ~ U(+-sqrt(3/p)),
    sigma starts at sigma_init (0.017). The noise stays fixed until
    resample_noise() is called (once per rollout); in eval() mode the layer
    uses the mean weights only.
    """

    def __init__(self, in_features: int, out_features: int, sigma_init: float = 0.017):
        super().__init__()
        bound = math.sqrt(3.0 / in_features)
        self.weight_mu = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound))
        self.bias_mu = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
        self.weight_sigma = nn.Parameter(torch.full((out_features, in_features), sigma_init))
        self.bias_sigma = nn.Parameter(torch.full((out_features,), sigma_init))
        self.register_buffer("weight_epsilon", torch.zeros(out_features, in_features), persistent=False)
        self.register_buffer("bias_epsilon", torch.zeros(out_features), persistent=False)

    def resample_noise(self, generator: torch.Generator | None = None) -> None:
        self.weight_epsilon.normal_(generator=generator)
        self.bias_epsilon.normal_(generator=generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training:
            return F.linear(x, self.weight_mu, self.bias_mu)
        weight = torch.addcmul(self.weight_mu, self.weight_sigma, self.weight_epsilon)
        bias = torch.addcmul(self.bias_mu, self.bias_sigma, self.bias_epsilon)
        return F.linear(x, weight, bias)


def conv_encoder(obs_shape: tuple[int, ...], hidden_size: int) -> nn.Sequential:
    """Stacked frames [C, 84, 84] (uint8) -> features: the A3C paper's small convnet, cheap on a CPU."""
    channels, height, width = obs_shape
    convs = nn.Sequential(nn.Conv2d(channels, 16, 8, stride=4), nn.ReLU(),
                          nn.Conv2d(16, 32, 4, stride=2), nn.ReLU(), nn.Flatten())
    with torch.no_grad():
        flat_size = convs(torch.zeros(1, channels, height, width)).shape[1]
    return nn.Sequential(ScaleFrames(), convs, nn.Linear(flat_size, hidden_size), nn.ReLU())


class ScaleFrames(nn.Module):
    """uint8 pixels travel and are stored as bytes; the network sees floats in [0, 1]."""

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        return frames.float() / 255.0


class RunningNorm(nn.Module):
    """Observation normalisation by a running mean and variance (Chan et al.'s parallel update).

    The statistics are buffers: they travel with state_dict into checkpoints, and a
    worker shares one instance with the shared model, so every worker updates and
    reads the same statistics in shared memory (Hogwild, like the weights).
    """

    def __init__(self, shape: tuple[int, ...], clip: float = 10.0):
        super().__init__()
        self.clip = clip
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))

    @torch.no_grad()
    def update(self, batch: torch.Tensor) -> None:
        batch = batch.double()
        n, batch_mean, batch_var = batch.shape[0], batch.mean(0), batch.var(0, unbiased=False)
        total = self.count + n
        delta = batch_mean - self.mean
        self.var.copy_((self.var * self.count + batch_var * n + delta.pow(2) * self.count * n / total) / total)
        self.mean.add_(delta * n / total)
        self.count.copy_(total)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return ((obs - self.mean) / torch.sqrt(self.var + 1e-8)).clamp(-self.clip, self.clip).float()


class ActorCritic(nn.Module):
    """Observation -> encoder -> LSTM -> policy head and state value.

    The encoder is Linear+ReLU for a flat observation and a convnet for stacked
    frames (an observation shape of three dimensions).

    Workers and the evaluator run it through its numpy twin (a3c/actor.py), on views
    of these weights; this module holds the weights (shared memory, checkpoints), runs
    the convolutional encoder, and its forward() is the reference the tests hold the
    numpy passes to.

    The policy head gives logits (discrete actions) or the Gaussian mean
    (continuous actions, with a state-independent `log_std` parameter).
    """

    def __init__(self, obs_shape: int | tuple[int, ...], num_actions: int, hidden_size: int = 64,
                 noisy: bool = True, sigma_init: float = 0.017, continuous: bool = False,
                 normalize_obs: bool = False):
        super().__init__()
        self.hidden_size = hidden_size
        obs_shape = (obs_shape,) if isinstance(obs_shape, int) else tuple(obs_shape)
        self.obs_norm = RunningNorm(obs_shape) if normalize_obs else None
        self.encoder = (nn.Sequential(nn.Linear(obs_shape[0], hidden_size), nn.ReLU()) if len(obs_shape) == 1
                        else conv_encoder(obs_shape, hidden_size))
        self.lstm = nn.LSTM(hidden_size, hidden_size)
        if noisy:
            self.policy = NoisyLinear(hidden_size, num_actions, sigma_init)
            self.value = NoisyLinear(hidden_size, 1, sigma_init)
        else:
            self.policy = nn.Linear(hidden_size, num_actions)
            self.value = nn.Linear(hidden_size, 1)
        self.log_std = nn.Parameter(torch.zeros(num_actions)) if continuous else None
        self.lstm.bias_ih_l0.data.zero_()
        self.lstm.bias_hh_l0.data.zero_()

    def initial_state(self, batch_size: int) -> LSTMState:
        zeros = torch.zeros(batch_size, self.hidden_size)
        return zeros, zeros.clone()

    def resample_noise(self, generator: torch.Generator | None = None) -> None:
        for module in (self.policy, self.value):
            if isinstance(module, NoisyLinear):
                module.resample_noise(generator)

    def normalize(self, obs: torch.Tensor) -> torch.Tensor:
        """What the encoder reads: the observation, normalised if the model keeps statistics."""
        return obs if self.obs_norm is None else self.obs_norm(obs)

    def step(self, inputs: torch.Tensor, state: LSTMState) -> LSTMState:
        """One recurrent step from normalised inputs [B, ...]: the new (hx, cx); the heads read hx."""
        lstm = self.lstm
        return torch.lstm_cell(self.encoder(inputs), state, lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0,
                               lstm.bias_hh_l0)

    def core(self, obs: torch.Tensor, state: LSTMState) -> LSTMState:
        """One recurrent step from a raw observation batch."""
        return self.step(self.normalize(obs), state)

    def heads(self, hx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Policy logits and state value for any leading shape, e.g. a whole rollout [T, B, H] at once."""
        return self.policy(hx), self.value(hx).squeeze(-1)

    def forward(self, obs: torch.Tensor, state: LSTMState) -> tuple[torch.Tensor, torch.Tensor, LSTMState]:
        hx, cx = self.core(obs, state)
        return (*self.heads(hx), (hx, cx))
