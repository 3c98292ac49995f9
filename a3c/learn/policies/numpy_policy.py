"""The numpy fast path for the stock network: acting at every step, and the backward pass of a rollout.

Acting needs no autograd, and at the batch sizes of a worker (1 to 64 envs) torch's
per-op overhead is most of a step's cost: one LSTM step and the heads cost about
25 us in numpy against about 100 us in torch at batch size 1. The policy keeps what
each step computed (layer activations, gate activations, cell states) and the
backward pass reads that record (a3c/learn/backprop.py) instead of replaying the rollout
with autograd. A flat observation's MLP encoder runs in numpy; a convolutional one
runs in torch (without autograd when acting, with it once per rollout backward).
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np
import torch
from torch import nn

from a3c.learn.backprop import StepTrace, linear_backward, lstm_backward, per_row_linear_backward
from a3c.learn.policies.base import Policy
from a3c.nets.actor_critic import ActorCritic, NoisyLinear

# A convolutional encoder's forward and backward over a rollout run this many samples at a time: one
# pass over the Atari preset's 320 cost 1.4x a sample what passes of 80 did (docs/results, "Atari throughput")
CONVOLUTION_CHUNK = 80

NumpyState = tuple[np.ndarray, ...]  # (hidden, cell), or () without an LSTM


def gate_activation_constants(size: int) -> tuple[np.ndarray, np.ndarray]:
    """sigmoid(x) = 0.5 + 0.5 tanh(x / 2): with the pre-activations scaled by `scale`, one tanh
    over all four gates, times `scale` plus `shift`, gives sigmoid, sigmoid, tanh, sigmoid."""
    scale = np.full(4 * size, 0.5, dtype=np.float32)
    scale[2 * size : 3 * size] = 1.0
    return scale, np.where(scale == 0.5, 0.5, 0.0).astype(np.float32)


def effective_weights(layer: nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
    return layer.effective_weights() if isinstance(layer, NoisyLinear) else (layer.weight, layer.bias)


def numpy_grad(param: torch.Tensor) -> np.ndarray:
    """A view of the parameter's .grad (a view into the learner's flat gradient)."""
    return param.grad.numpy()


def write_layer_grads(layer: nn.Module, d_weight: np.ndarray, d_bias: np.ndarray) -> None:
    """d W and d b of the weights a layer applied; a NoisyLinear's W = mu + sigma * epsilon, with a W for each
    row of the batch where it drew a noise a row (d W [B, out, in] and d b [B, out] then)."""
    if isinstance(layer, NoisyLinear):
        over_rows = (lambda grad: grad.sum(axis=0)) if d_weight.ndim == 3 else (lambda grad: grad)
        numpy_grad(layer.weight_mu)[...] = over_rows(d_weight)
        numpy_grad(layer.bias_mu)[...] = over_rows(d_bias)
        numpy_grad(layer.weight_sigma)[...] = over_rows(d_weight * layer.weight_epsilon.numpy())
        numpy_grad(layer.bias_sigma)[...] = over_rows(d_bias * layer.bias_epsilon.numpy())
    else:
        numpy_grad(layer.weight)[...] = d_weight
        numpy_grad(layer.bias)[...] = d_bias


class NumpyEncoder:
    """An encoder of the stock network, run in numpy for an MLP; a convolutional one runs in torch,
    without autograd when acting and with it once over the rollout's inputs in the backward pass."""

    def __init__(self, module: nn.Module):
        convolutional = not all(isinstance(layer, (nn.Linear, nn.ReLU)) for layer in module)
        self.layers = [] if convolutional else [layer for layer in module if isinstance(layer, nn.Linear)]
        self.torch_module = module if convolutional else None

    def begin_rollout(self) -> None:
        self.weights = [(layer.weight.numpy(), layer.bias.numpy()) for layer in self.layers]

    def encode(self, inputs: np.ndarray) -> list[np.ndarray]:
        """The encoder's input and each layer's output; the last is the features."""
        if self.torch_module is not None:
            with torch.no_grad():
                return [inputs, self.torch_module(torch.from_numpy(inputs)).numpy()]
        activations = [inputs]
        for weight, bias in self.weights:
            activations.append(np.maximum(activations[-1] @ weight.T + bias, 0.0))
        return activations

    def backward(self, activations: list[list[np.ndarray]], d_features: np.ndarray) -> None:
        """Writes the gradients, given each step's `encode` record and d loss / d features [T, B, F]."""
        if self.torch_module is not None:  # convolutional: torch's autograd over the rollout, a chunk at a time
            inputs = torch.from_numpy(np.stack([step[0] for step in activations])).flatten(0, 1)
            d_encoded = torch.from_numpy(d_features.reshape(len(inputs), -1))
            for start in range(0, len(inputs), CONVOLUTION_CHUNK):  # the gradients add up over the chunks
                chunk = slice(start, start + CONVOLUTION_CHUNK)
                self.torch_module(inputs[chunk]).backward(d_encoded[chunk])
            return
        layers = [np.stack(layer) for layer in zip(*activations)]
        d_output = d_features
        for k in range(len(self.layers) - 1, -1, -1):
            d_pre = d_output * (layers[k + 1] > 0)  # through the ReLU
            d_output, d_weight, d_bias = linear_backward(layers[k], d_pre, self.weights[k][0])
            write_layer_grads(self.layers[k], d_weight, d_bias)


class Step(NamedTuple):
    """What one recorded step computed, each [B, ...]: what the backward pass reads."""

    activations: list  # the encoder's input, then each MLP layer's output (a convnet: input, output)
    start_state: NumpyState
    lstm: Optional[StepTrace]
    features: np.ndarray  # what the policy head reads
    critic_activations: Optional[list]  # the critic's own encoder's, as `activations`
    value_inputs: np.ndarray  # what the value head reads


class NumpyPolicy(Policy):
    """Runs an ActorCritic of any shape the options allow in numpy, on views of its weights."""

    def __init__(self, model: ActorCritic):
        super().__init__(model)
        self.encoder = NumpyEncoder(model.encoder)
        self.critic_encoder = None if model.critic_encoder is None else NumpyEncoder(model.critic_encoder)
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
        for encoder in (self.encoder, self.critic_encoder):
            if encoder is not None:
                encoder.begin_rollout()
        lstm = model.lstm
        if lstm is not None:
            self.weight_ih, self.weight_hh = lstm.weight_ih_l0.numpy(), lstm.weight_hh_l0.numpy()
            self.scaled_weight_ih_t = self.weight_ih.T * self.gate_scale
            self.scaled_weight_hh_t = self.weight_hh.T * self.gate_scale
            self.scaled_lstm_bias = (lstm.bias_ih_l0 + lstm.bias_hh_l0).numpy() * self.gate_scale
        (policy_weight, policy_bias), (value_weight, value_bias) = map(effective_weights, (model.policy, model.value))
        self.policy_weight, self.policy_bias = policy_weight.numpy(), policy_bias.numpy()
        self.policy_weight_t = self.policy_weight.T.copy() if self.policy_weight.ndim == 2 else None
        self.value_weight, self.value_bias = value_weight.numpy(), value_bias.numpy()
        self.steps = []
        return state

    def normalize(self, obs: np.ndarray) -> np.ndarray:
        norm = self.model.obs_norm
        if norm is None:
            return obs
        with torch.no_grad():
            return norm(torch.from_numpy(obs)).numpy()

    def lstm_step(self, features: np.ndarray, state: NumpyState) -> StepTrace:
        hidden, cell = state
        gates = np.tanh(features @ self.scaled_weight_ih_t + hidden @ self.scaled_weight_hh_t + self.scaled_lstm_bias)
        gates *= self.gate_scale
        gates += self.gate_shift
        size = hidden.shape[1]
        cell = gates[:, size : 2 * size] * cell + gates[:, :size] * gates[:, 2 * size : 3 * size]
        tanh_cell = np.tanh(cell)
        return StepTrace(gates, tanh_cell, gates[:, 3 * size :] * tanh_cell, cell)

    def act(self, obs: np.ndarray, state: NumpyState, record: bool = True):
        inputs = self.normalize(obs)
        activations = self.encoder.encode(inputs)
        trace = None if self.model.lstm is None else self.lstm_step(activations[-1], state)
        features = activations[-1] if trace is None else trace.hidden
        critic_activations, value_inputs = None, features
        if self.critic_encoder is not None:  # as ActorCritic.value_inputs
            critic_activations = self.critic_encoder.encode(inputs)
            value_inputs = (
                critic_activations[-1] if trace is None else np.concatenate([critic_activations[-1], features], axis=-1)
            )
        if record:
            self.steps.append(Step(activations, state, trace, features, critic_activations, value_inputs))
        if self.policy_weight.ndim == 2:
            head = features @ self.policy_weight_t + self.policy_bias
            values = value_inputs @ self.value_weight.T + self.value_bias
        else:  # NoisyNet's draw an env: row b through its own heads
            head = np.einsum("bi,boi->bo", features, self.policy_weight) + self.policy_bias
            values = np.einsum("bi,boi->bo", value_inputs, self.value_weight) + self.value_bias
        value = values[:, 0] if self.model.value_heads == 1 else values  # [B], or [B, value_heads]
        return head, value, (() if trace is None else (trace.hidden, trace.cell))

    def mean_heads(self) -> Optional[np.ndarray]:
        head = self.model.policy
        if not isinstance(head, NoisyLinear):
            return None
        features = np.stack([step.features for step in self.steps])
        return features @ head.weight_mu.detach().numpy().T + head.bias_mu.detach().numpy()

    def restart(self, state: NumpyState, restarting: np.ndarray) -> NumpyState:
        if not restarting.any():
            return state
        keep = ~restarting[:, None]
        return tuple(part * keep for part in state)

    def backward(
        self, d_heads: np.ndarray, d_values: np.ndarray, d_log_std: Optional[np.ndarray], restarted: np.ndarray
    ) -> None:
        model, steps = self.model, self.steps
        features = np.stack([step.features for step in steps])
        heads_backward = linear_backward if self.policy_weight.ndim == 2 else per_row_linear_backward
        d_features, d_weight, d_bias = heads_backward(features, d_heads, self.policy_weight)
        write_layer_grads(model.policy, d_weight, d_bias)
        value_inputs = features if self.critic_encoder is None else np.stack([step.value_inputs for step in steps])
        d_values = d_values[..., None] if model.value_heads == 1 else d_values
        d_value_inputs, d_weight, d_bias = heads_backward(value_inputs, d_values, self.value_weight)
        write_layer_grads(model.value, d_weight, d_bias)
        if self.critic_encoder is None:
            d_features += d_value_inputs
        else:  # the critic's own features come first; the LSTM's output beside them takes no gradient
            own = d_value_inputs[..., : model.hidden_size]
            self.critic_encoder.backward([step.critic_activations for step in steps], own)
        if model.lstm is not None:
            d_features = self.lstm_backward(d_features, ~restarted)
        self.encoder.backward([step.activations for step in steps], d_features)
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
            -1, hidden_prev.shape[-1]
        )
        numpy_grad(lstm.bias_ih_l0)[...] = d_bias
        numpy_grad(lstm.bias_hh_l0)[...] = d_bias
        return d_inputs
