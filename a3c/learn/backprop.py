"""Backpropagation through a rollout in numpy: pure functions of what the actor computed.

At a worker's sizes (1 to 64 envs, 10 to 20 steps, 64 units) torch's autograd spends
most of an update on per-op overhead; these few dozen numpy ops do the same work in
a fraction of the time. tests/test_backprop.py checks them against torch autograd.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class StepTrace(NamedTuple):
    """One LSTM step as the actor computed it, each [B, ...]: what the backward pass reads."""

    gates: np.ndarray  # [B, 4H] after their nonlinearities, in torch's order: input, forget, cell, output
    tanh_cell: np.ndarray
    hidden: np.ndarray  # what the heads read
    cell: np.ndarray


def linear_backward(inputs: np.ndarray, d_outputs: np.ndarray, weight: np.ndarray):
    """y = x W^T + b over any leading shape: returns d x, d W, d b."""
    flat_inputs = inputs.reshape(-1, inputs.shape[-1])
    flat_d = d_outputs.reshape(-1, d_outputs.shape[-1])
    return d_outputs @ weight, flat_d.T @ flat_inputs, flat_d.sum(axis=0)


def per_row_linear_backward(inputs: np.ndarray, d_outputs: np.ndarray, weight: np.ndarray):
    """y[t, b] = W[b] x[t, b] + c[b], a weight for each row b of the batch (NoisyNet's draw an env): inputs
    [T, B, I], d_outputs [T, B, O], weight [B, O, I]; returns d x [T, B, I], d W [B, O, I], d c [B, O]."""
    return (
        np.einsum("tbo,boi->tbi", d_outputs, weight),
        np.einsum("tbo,tbi->boi", d_outputs, inputs),
        d_outputs.sum(axis=0),
    )


def lstm_backward(
    traces: list[StepTrace],
    hidden_prev: np.ndarray,
    cell_prev: np.ndarray,
    keep: np.ndarray,
    d_hidden: np.ndarray,
    weight_hh: np.ndarray,
) -> np.ndarray:
    """d loss / d gate pre-activations [T, B, 4H] of a rollout, given d loss / d hidden [T, B, H].

    `hidden_prev`, `cell_prev` [T, B, H]: the state each step started from. `keep[t]`
    [T, B] is False where an env's state was zeroed after step t: no gradient crosses
    that restart into the episode before it.
    """
    steps, batch, size = d_hidden.shape
    gates = np.stack([trace.gates for trace in traces])
    input_gate, forget_gate, cell_gate, output_gate = np.split(gates, 4, axis=-1)
    tanh_cell = np.stack([trace.tanh_cell for trace in traces])
    # slope of each gate's nonlinearity, read at its output: s(1 - s) for sigmoids, 1 - t^2 for the tanh
    slopes = gates * (1 - gates)
    slopes[..., 2 * size : 3 * size] = 1 - cell_gate**2
    d_cell_from_hidden = output_gate * (1 - tanh_cell**2)
    keep = keep[..., None].astype(d_hidden.dtype)

    d_gates = np.empty_like(gates)
    d_hidden_next = np.zeros((batch, size), dtype=d_hidden.dtype)
    d_cell_next = np.zeros_like(d_hidden_next)
    for t in range(steps - 1, -1, -1):
        d_h = d_hidden[t] + d_hidden_next
        d_c = d_cell_next + d_h * d_cell_from_hidden[t]
        d_gate = d_gates[t]
        d_gate[:, :size] = d_c * cell_gate[t]
        d_gate[:, size : 2 * size] = d_c * cell_prev[t]
        d_gate[:, 2 * size : 3 * size] = d_c * input_gate[t]
        d_gate[:, 3 * size :] = d_h * tanh_cell[t]
        d_gate *= slopes[t]
        if t > 0:  # the state step t started from was step t - 1's, zeroed where that episode ended
            d_hidden_next = (d_gate @ weight_hh) * keep[t - 1]
            d_cell_next = d_c * forget_gate[t] * keep[t - 1]
    return d_gates
