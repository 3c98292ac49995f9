"""The network's acting pass in numpy: what a worker runs at every step of a rollout.

Acting needs no autograd (the learner replays the rollout with ActorCritic.unroll),
and at the batch sizes of a worker (1 to 64 envs) torch's per-op overhead is most of
a step's cost: one LSTM step and the heads cost about 25 us in numpy against
about 100 us in torch at batch size 1.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .model import ActorCritic, NoisyLinear

NumpyState = tuple[np.ndarray, np.ndarray]


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # no overflow warning for large |x|, unlike 1 / (1 + exp(-x))


def effective_weights(layer: nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
    """The weight and bias a layer applies in training: with its current noise for a NoisyLinear."""
    if isinstance(layer, NoisyLinear):
        return (torch.addcmul(layer.weight_mu, layer.weight_sigma, layer.weight_epsilon),
                torch.addcmul(layer.bias_mu, layer.bias_sigma, layer.bias_epsilon))
    return layer.weight, layer.bias


class NumpyActor:
    """Steps `model`'s LSTM and heads in numpy, on numpy views of its weights.

    The views follow the model's weights in place, but the heads' noisy weights and the
    summed LSTM biases are computed by begin_rollout(): call it after the weights are
    loaded and the noise is drawn. A flat observation's encoder runs in numpy too; a
    convolutional one runs in torch without autograd.
    """

    def __init__(self, model: ActorCritic):
        self.model = model
        lstm = model.lstm
        self.weight_ih_t = lstm.weight_ih_l0.detach().numpy().T
        self.weight_hh_t = lstm.weight_hh_l0.detach().numpy().T
        first = model.encoder[0]
        self.linear_encoder = (first.weight.detach().numpy().T, first.bias.detach().numpy()) \
            if isinstance(first, nn.Linear) else None
        self.lstm_bias = self.heads_weight_t = self.heads_bias = None

    @torch.no_grad()
    def begin_rollout(self) -> None:
        lstm = self.model.lstm
        self.lstm_bias = (lstm.bias_ih_l0 + lstm.bias_hh_l0).numpy()
        (policy_weight, policy_bias), (value_weight, value_bias) = map(
            effective_weights, (self.model.policy, self.model.value))
        self.heads_weight_t = torch.cat([policy_weight, value_weight]).numpy().T.copy()  # one matmul for both
        self.heads_bias = torch.cat([policy_bias, value_bias]).numpy()

    def encode(self, inputs: np.ndarray) -> np.ndarray:
        if self.linear_encoder is None:
            with torch.no_grad():
                return self.model.encoder(torch.from_numpy(inputs)).numpy()
        weight_t, bias = self.linear_encoder
        return np.maximum(inputs @ weight_t + bias, 0.0)

    def step(self, inputs: np.ndarray, state: NumpyState) -> NumpyState:
        """One LSTM step from normalised inputs [B, ...] (torch's gate order: input, forget, cell, output)."""
        hx, cx = state
        gates = self.encode(inputs) @ self.weight_ih_t + hx @ self.weight_hh_t + self.lstm_bias
        size = hx.shape[1]
        input_gate, forget_gate = sigmoid(gates[:, :size]), sigmoid(gates[:, size:2 * size])
        cell_gate, output_gate = np.tanh(gates[:, 2 * size:3 * size]), sigmoid(gates[:, 3 * size:])
        cx = forget_gate * cx + input_gate * cell_gate
        return output_gate * np.tanh(cx), cx

    def heads(self, hx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The policy head's output [B, A] and the state values [B]."""
        out = hx @ self.heads_weight_t + self.heads_bias
        return out[:, :-1], out[:, -1]
