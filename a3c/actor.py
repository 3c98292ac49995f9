"""The network in numpy: the acting pass a worker runs at every step, and its backward pass.

Acting needs no autograd, and at the batch sizes of a worker (1 to 64 envs) torch's
per-op overhead is most of a step's cost: one LSTM step and the heads cost about
25 us in numpy against about 100 us in torch at batch size 1. The learner then
backpropagates through what the actor recorded (a3c/backprop.py) instead of
replaying the rollout with autograd.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import torch
from torch import nn

from .backprop import StepTrace, linear_backward, lstm_backward
from .model import ActorCritic, NoisyLinear

NumpyState = tuple[np.ndarray, np.ndarray]


def gate_activation_constants(size: int) -> tuple[np.ndarray, np.ndarray]:
    """sigmoid(x) = 0.5 + 0.5 tanh(x / 2): with the pre-activations scaled by `scale`, one tanh
    over all four gates, times `scale` plus `shift`, gives sigmoid, sigmoid, tanh, sigmoid."""
    scale = np.full(4 * size, 0.5, dtype=np.float32)
    scale[2 * size:3 * size] = 1.0
    return scale, np.where(scale == 0.5, 0.5, 0.0).astype(np.float32)


def effective_weights(layer: nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
    """The weight and bias a layer applies: a NoisyLinear's mean weights in eval mode, plus its
    current noise in training mode."""
    if not isinstance(layer, NoisyLinear):
        return layer.weight, layer.bias
    if not layer.training:
        return layer.weight_mu, layer.bias_mu
    return (torch.addcmul(layer.weight_mu, layer.weight_sigma, layer.weight_epsilon),
            torch.addcmul(layer.bias_mu, layer.bias_sigma, layer.bias_epsilon))


def numpy_grad(param: torch.Tensor) -> np.ndarray:
    """A view of the parameter's .grad (a view into the learner's flat gradient)."""
    return param.grad.numpy()


def write_layer_grads(layer: nn.Module, d_weight: np.ndarray, d_bias: np.ndarray) -> None:
    """d W and d b of the weights a layer applied; a NoisyLinear's W = mu + sigma * epsilon."""
    if isinstance(layer, NoisyLinear):
        numpy_grad(layer.weight_mu)[...] = d_weight
        numpy_grad(layer.bias_mu)[...] = d_bias
        numpy_grad(layer.weight_sigma)[...] = d_weight * layer.weight_epsilon.numpy()
        numpy_grad(layer.bias_sigma)[...] = d_bias * layer.bias_epsilon.numpy()
    else:
        numpy_grad(layer.weight)[...] = d_weight
        numpy_grad(layer.bias)[...] = d_bias


class NumpyActor:
    """Steps `model`'s LSTM and heads in numpy, on numpy views of its weights, and backpropagates.

    The views follow the model's weights in place, but the heads' noisy weights and the
    scaled LSTM weights are computed by begin_rollout(): call it after the weights are
    loaded and the noise is drawn (or the model is put in eval mode: mean weights). A
    flat observation's encoder runs in numpy too; a convolutional one runs in torch
    (without autograd when acting).
    """

    def __init__(self, model: ActorCritic):
        self.model = model
        lstm = model.lstm
        self.weight_ih = lstm.weight_ih_l0.detach().numpy()
        self.weight_hh = lstm.weight_hh_l0.detach().numpy()
        self.gate_scale, self.gate_shift = gate_activation_constants(model.hidden_size)
        first = model.encoder[0]
        self.linear_encoder = first if isinstance(first, nn.Linear) else None
        if self.linear_encoder is not None:
            self.encoder_weight, self.encoder_bias = first.weight.detach().numpy(), first.bias.detach().numpy()
            self.encoder_weight_t = self.encoder_weight.T
        self.log_std = None if model.log_std is None else model.log_std.detach().numpy()
        self.scaled_weight_ih_t = self.scaled_weight_hh_t = self.scaled_lstm_bias = None
        self.heads_weight = self.heads_weight_t = self.heads_bias = None

    @torch.no_grad()
    def begin_rollout(self) -> None:
        lstm, scale = self.model.lstm, self.gate_scale
        self.scaled_weight_ih_t = self.weight_ih.T * scale
        self.scaled_weight_hh_t = self.weight_hh.T * scale
        self.scaled_lstm_bias = (lstm.bias_ih_l0 + lstm.bias_hh_l0).numpy() * scale
        (policy_weight, policy_bias), (value_weight, value_bias) = map(
            effective_weights, (self.model.policy, self.model.value))
        self.heads_weight = torch.cat([policy_weight, value_weight]).numpy()  # one matmul for both heads
        self.heads_weight_t = self.heads_weight.T.copy()
        self.heads_bias = torch.cat([policy_bias, value_bias]).numpy()

    def normalize(self, obs: np.ndarray) -> np.ndarray:
        """What the encoder reads: the observations, normalised by the model's running statistics if it keeps them."""
        norm = self.model.obs_norm
        if norm is None:
            return obs
        with torch.no_grad():
            return norm(torch.from_numpy(obs)).numpy()

    def encode(self, inputs: np.ndarray) -> np.ndarray:
        if self.linear_encoder is None:
            with torch.no_grad():
                return self.model.encoder(torch.from_numpy(inputs)).numpy()
        return np.maximum(inputs @ self.encoder_weight_t + self.encoder_bias, 0.0)

    def step(self, inputs: np.ndarray, state: NumpyState) -> StepTrace:
        """One LSTM step from normalised inputs [B, ...] and the state it starts from."""
        hidden, cell = state
        features = self.encode(inputs)
        gates = np.tanh(features @ self.scaled_weight_ih_t + hidden @ self.scaled_weight_hh_t + self.scaled_lstm_bias)
        gates *= self.gate_scale
        gates += self.gate_shift
        size = hidden.shape[1]
        cell = gates[:, size:2 * size] * cell + gates[:, :size] * gates[:, 2 * size:3 * size]
        tanh_cell = np.tanh(cell)
        return StepTrace(features, gates, tanh_cell, gates[:, 3 * size:] * tanh_cell, cell)

    def heads(self, hidden: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The policy head's output [..., A] and the state values [...]."""
        out = hidden @ self.heads_weight_t + self.heads_bias
        return out[..., :-1], out[..., -1]

    def backward(self, inputs: np.ndarray, start_states: list[NumpyState], traces: list[StepTrace],
                 keep: np.ndarray, d_heads: np.ndarray, d_log_std: Optional[np.ndarray]) -> None:
        """Write d loss / d parameter into the model's .grad views (zero them first).

        `inputs` [T, B, ...], and for each step the state it started from and its trace;
        `keep[t]` is False where an env's state was zeroed after step t; `d_heads`
        [T, B, A + 1]: d loss / d (policy head, value) of every step.
        """
        model, actions = self.model, d_heads.shape[-1] - 1
        hidden = np.stack([trace.hidden for trace in traces])
        d_hidden, d_heads_weight, d_heads_bias = linear_backward(hidden, d_heads, self.heads_weight)
        write_layer_grads(model.policy, d_heads_weight[:actions], d_heads_bias[:actions])
        write_layer_grads(model.value, d_heads_weight[actions:], d_heads_bias[actions:])

        hidden_prev, cell_prev = (np.stack(part) for part in zip(*start_states))
        d_gates = lstm_backward(traces, hidden_prev, cell_prev, keep, d_hidden, self.weight_hh)
        features = np.stack([trace.features for trace in traces])
        d_features, d_weight_ih, d_bias = linear_backward(features, d_gates, self.weight_ih)
        lstm = model.lstm
        numpy_grad(lstm.weight_ih_l0)[...] = d_weight_ih
        numpy_grad(lstm.weight_hh_l0)[...] = d_gates.reshape(-1, d_gates.shape[-1]).T @ hidden_prev.reshape(
            -1, hidden_prev.shape[-1])
        numpy_grad(lstm.bias_ih_l0)[...] = d_bias
        numpy_grad(lstm.bias_hh_l0)[...] = d_bias

        if self.linear_encoder is None:  # convolutional: torch's autograd, once over the whole rollout
            encoded = model.encoder(torch.from_numpy(inputs).flatten(0, 1))
            encoded.backward(torch.from_numpy(d_features.reshape(encoded.shape)))
        else:
            _, d_weight, d_bias = linear_backward(inputs, d_features * (features > 0), self.encoder_weight)
            write_layer_grads(self.linear_encoder, d_weight, d_bias)
        if d_log_std is not None:
            numpy_grad(model.log_std)[...] = d_log_std
