"""The numpy acting pass must compute what the torch network computes: the evaluator plays
with the torch network, and checkpoints hold its weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from a3c.actor import NumpyActor
from a3c.flat import flatten_parameters
from a3c.model import ActorCritic


@pytest.mark.parametrize("obs_shape, noisy, training", [((4,), True, True), ((4,), False, True),
                                                        ((2, 36, 36), True, True), ((4,), True, False)])
def test_the_numpy_actor_steps_as_the_torch_network_does(obs_shape, noisy, training):
    """In training mode with the rollout's noise; in eval mode (the evaluator's) with the mean weights."""
    torch.manual_seed(0)
    model = ActorCritic(obs_shape, 3, 16, noisy).train(training)
    flat = flatten_parameters(model)
    actor = NumpyActor(model)
    with torch.no_grad():
        flat.copy_(torch.randn_like(flat) * 0.3)  # weights loaded after the actor was made: its views follow
    model.resample_noise()
    actor.begin_rollout()
    batch = 5
    torch_state = (torch.randn(batch, 16), torch.randn(batch, 16))
    numpy_state = tuple(part.numpy().copy() for part in torch_state)
    for _ in range(4):
        inputs = torch.rand(batch, *obs_shape)
        with torch.no_grad():
            torch_state = model.step(inputs, torch_state)
            policy, value = model.heads(torch_state[0])
        trace = actor.step(inputs.numpy(), numpy_state)
        numpy_state = (trace.hidden, trace.cell)
        numpy_policy, numpy_value = actor.heads(numpy_state[0])
        assert numpy_state[0].dtype == np.float32
        for ours, theirs in zip((*numpy_state, numpy_policy, numpy_value), (*torch_state, policy, value)):
            assert_close(torch.from_numpy(np.ascontiguousarray(ours)), theirs, rtol=1e-5, atol=1e-5)


def test_the_actor_uses_the_noise_of_the_current_rollout():
    torch.manual_seed(0)
    model = ActorCritic(4, 2, 8, True)
    actor = NumpyActor(model)
    hx = np.ones((1, 8), dtype=np.float32)
    model.resample_noise()
    actor.begin_rollout()
    first = actor.heads(hx)[0].copy()
    model.resample_noise()
    actor.begin_rollout()
    with torch.no_grad():
        assert_close(torch.from_numpy(actor.heads(hx)[0]), model.heads(torch.from_numpy(hx))[0])
    assert not np.allclose(actor.heads(hx)[0], first)
