"""The numpy fast path for the stock network: acting at every step, and the backward pass of a rollout.

Acting needs no autograd, and at the batch sizes of a worker (1 to 64 envs) torch's
per-op overhead is most of a step's cost: one LSTM step and the heads cost about
25 us in numpy against about 100 us in torch at batch size 1. The policy keeps what
each step computed (layer activations, gate activations, cell states) and the
backward pass reads that record (a3c/backprop.py) instead of replaying the rollout
with autograd. A flat observation's MLP encoder runs in numpy; a convolutional one
runs in torch (without autograd when acting, with it once per rollout backward).
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np
import torch
from torch import nn

from ..backprop import StepTrace, linear_backward, lstm_backward
from ..model import ActorCritic, NoisyLinear
from .base import Policy

NumpyState = tuple[np.ndarray, ...]  # (hidden, cell), or () without an LSTM


def gate_activation_constants(size: int) -> tuple[np.ndarray, np.ndarray]:
    """sigmoid(x) = 0.5 + 0.5 tanh(x / 2): with the pre-activations scaled by `scale`, one tanh
    over all four gates, times `scale` plus `shift`, gives sigmoid, sigmoid, tanh, sigmoid."""
    scale = np.full(4 * size, 0.5, dtype=np.float32)
    scale[2 * size:3 * size] = 1.0
    return scale, np.where(scale == 0.5, 0.5, 0.0).astype(np.float32)


def effective_weights(layer: nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
    return layer.effective_weights() if isinstance(layer, NoisyLinear) else (layer.weight, layer.bias)


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


class Step(NamedTuple):
    """What one recorded step computed, each [B, ...]: what the backward pass reads."""

    activations: list  # the encoder's input, then each MLP layer's output (a convnet: input, output)
    start_state: NumpyState
    lstm: Optional[StepTrace]
    features: np.ndarray  # what the heads read


class NumpyPolicy(Policy):
    """Runs an ActorCritic of any shape the options allow in numpy, on views of its weights."""

    def __init__(self, model: ActorCritic):
        super().__init__(model)
        convolutional = not all(isinstance(layer, (nn.Linear, nn.ReLU)) for layer in model.encoder)
        self.mlp_layers = [] if convolutional else [layer for layer in model.encoder if isinstance(layer, nn.Linear)]
        self.torch_encoder = model.encoder if convolutional else None
        if model.lstm is not None:
            self.gate_scale, self.gate_shift = gate_activation_constants(model.hidden_size)
        self.steps: list[Step] = []

    def initial_state(self, batch_size: int) -> NumpyState:
        return tuple(part.numpy() for part in self.model.initial_state(batch_size))

    def state_to_numpy(self, state: NumpyState) -> NumpyState:
        return tuple(part.copy() for part in state)

    def state_from_numpy(self, arrays: NumpyState) -> NumpyState:
        return tuple(arrays)

    @torch.no_grad()
    def begin_rollout(self, state: NumpyState) -> NumpyState:
        """Views of the weights, the heads' noisy weights and the scaled LSTM weights of this rollout."""
        model = self.model
        self.mlp_weights = [(layer.weight.numpy(), layer.bias.numpy()) for layer in self.mlp_layers]
        lstm = model.lstm
        if lstm is not None:
            self.weight_ih, self.weight_hh = lstm.weight_ih_l0.numpy(), lstm.weight_hh_l0.numpy()
            self.scaled_weight_ih_t = self.weight_ih.T * self.gate_scale
            self.scaled_weight_hh_t = self.weight_hh.T * self.gate_scale
            self.scaled_lstm_bias = (lstm.bias_ih_l0 + lstm.bias_hh_l0).numpy() * self.gate_scale
        (policy_weight, policy_bias), (value_weight, value_bias) = map(effective_weights, (model.policy, model.value))
        self.heads_weight = torch.cat([policy_weight, value_weight]).numpy()  # one matmul for both heads
        self.heads_weight_t = self.heads_weight.T.copy()
        self.heads_bias = torch.cat([policy_bias, value_bias]).numpy()
        self.steps = []
        return state

    def normalize(self, obs: np.ndarray) -> np.ndarray:
        norm = self.model.obs_norm
        if norm is None:
            return obs
        with torch.no_grad():
            return norm(torch.from_numpy(obs)).numpy()

    def encode(self, inputs: np.ndarray) -> list[np.ndarray]:
        """The encoder's input and each layer's output; the last is the features."""
        if self.torch_encoder is not None:
            with torch.no_grad():
                return [inputs, self.torch_encoder(torch.from_numpy(inputs)).numpy()]
        activations = [inputs]
        for weight, bias in self.mlp_weights:
            activations.append(np.maximum(activations[-1] @ weight.T + bias, 0.0))
        return activations

    def lstm_step(self, features: np.ndarray, state: NumpyState) -> StepTrace:
        hidden, cell = state
        gates = np.tanh(features @ self.scaled_weight_ih_t + hidden @ self.scaled_weight_hh_t + self.scaled_lstm_bias)
        gates *= self.gate_scale
        gates += self.gate_shift
        size = hidden.shape[1]
        cell = gates[:, size:2 * size] * cell + gates[:, :size] * gates[:, 2 * size:3 * size]
        tanh_cell = np.tanh(cell)
        return StepTrace(gates, tanh_cell, gates[:, 3 * size:] * tanh_cell, cell)

    def act(self, obs: np.ndarray, state: NumpyState, record: bool = True):
        activations = self.encode(self.normalize(obs))
        trace = None if self.model.lstm is None else self.lstm_step(activations[-1], state)
        features = activations[-1] if trace is None else trace.hidden
        if record:
            self.steps.append(Step(activations, state, trace, features))
        out = features @ self.heads_weight_t + self.heads_bias
        return out[:, :-1], out[:, -1], (() if trace is None else (trace.hidden, trace.cell))

    def restart(self, state: NumpyState, restarting: np.ndarray) -> NumpyState:
        if not restarting.any():
            return state
        keep = ~restarting[:, None]
        return tuple(part * keep for part in state)

    def backward(self, d_heads: np.ndarray, d_values: np.ndarray, d_log_std: Optional[np.ndarray],
                 restarted: np.ndarray) -> None:
        model, steps, actions = self.model, self.steps, d_heads.shape[-1]
        features = np.stack([step.features for step in steps])
        d_out = np.concatenate([d_heads, d_values[..., None]], axis=-1)
        d_features, d_heads_weight, d_heads_bias = linear_backward(features, d_out, self.heads_weight)
        write_layer_grads(model.policy, d_heads_weight[:actions], d_heads_bias[:actions])
        write_layer_grads(model.value, d_heads_weight[actions:], d_heads_bias[actions:])
        if model.lstm is not None:
            d_features = self.lstm_backward(d_features, ~restarted)
        self.encoder_backward(d_features)
        self.write_log_std_grad(d_log_std)

    def lstm_backward(self, d_hidden: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """Writes the LSTM's gradients; returns d loss / d its inputs (the encoder's features) [T, B, F]."""
        steps = self.steps
        hidden_prev, cell_prev = (np.stack(part) for part in zip(*(step.start_state for step in steps)))
        d_gates = lstm_backward([step.lstm for step in steps], hidden_prev, cell_prev, keep, d_hidden, self.weight_hh)
        lstm_inputs = np.stack([step.activations[-1] for step in steps])
        d_inputs, d_weight_ih, d_bias = linear_backward(lstm_inputs, d_gates, self.weight_ih)
        lstm = self.model.lstm
        numpy_grad(lstm.weight_ih_l0)[...] = d_weight_ih
        numpy_grad(lstm.weight_hh_l0)[...] = d_gates.reshape(-1, d_gates.shape[-1]).T @ hidden_prev.reshape(
            -1, hidden_prev.shape[-1])
        numpy_grad(lstm.bias_ih_l0)[...] = d_bias
        numpy_grad(lstm.bias_hh_l0)[...] = d_bias
        return d_inputs

    def encoder_backward(self, d_features: np.ndarray) -> None:
        if self.torch_encoder is not None:  # convolutional: torch's autograd, once over the whole rollout
            inputs = torch.from_numpy(np.stack([step.activations[0] for step in self.steps]))
            encoded = self.torch_encoder(inputs.flatten(0, 1))
            encoded.backward(torch.from_numpy(d_features.reshape(encoded.shape)))
            return
        activations = [np.stack(layer) for layer in zip(*(step.activations for step in self.steps))]
        d_output = d_features
        for k in range(len(self.mlp_layers) - 1, -1, -1):
            d_pre = d_output * (activations[k + 1] > 0)  # through the ReLU
            d_output, d_weight, d_bias = linear_backward(activations[k], d_pre, self.mlp_weights[k][0])
            write_layer_grads(self.mlp_layers[k], d_weight, d_bias)
