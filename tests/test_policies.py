"""The two policies on the stock network: the numpy fast path acts and backpropagates as torch autograd does,
in every shape the options allow (encoder depth, LSTM or none, noise or none, discrete or continuous,
flat or pixel observations, one value or two), with episode restarts."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from a3c.learn.policies import NumpyPolicy, TorchPolicy, make_policy, numpy_policy
from a3c.nets.actor_critic import ActorCritic, NoisyLinear, StockOptions
from a3c.nets.flat import attach_flat_gradient, flatten_parameters

SHAPES = {  # id: (obs_shape, StockOptions fields)
    "lstm": ((4,), {}),
    "lstm-own-critic": ((4,), {"own_critic": True}),
    "lstm-deep-own-critic-no-noise": ((4,), {"hidden_sizes": (12, 16), "own_critic": True, "noisy": False}),
    "no-core-own-critic": ((4,), {"core": "none", "own_critic": True}),
    "continuous-own-critic": ((4,), {"continuous": True, "own_critic": True}),
    "frames-lstm-own-critic": ((2, 36, 36), {"own_critic": True}),
    "lstm-no-noise": ((4,), {"noisy": False}),
    "lstm-deep": ((4,), {"hidden_sizes": (12, 16)}),
    "no-core": ((4,), {"core": "none"}),
    "no-core-deep-no-noise": ((4,), {"core": "none", "hidden_sizes": (16, 8, 16), "noisy": False}),
    "continuous": ((4,), {"continuous": True, "hidden_sizes": (16, 16)}),
    "continuous-no-core": ((4,), {"continuous": True, "core": "none"}),
    "frames-lstm": ((2, 36, 36), {}),
    "frames-no-core": ((2, 36, 36), {"core": "none"}),
    "frames-deep-mlp": ((2, 36, 36), {"core": "none", "hidden_sizes": (16, 8)}),
    "small-frames": ((3, 10, 10), {"core": "none"}),  # MinAtar's: one convolution
    "frames-lstm-bfloat16": ((2, 36, 36), {"bfloat16": True}),  # the convolutions under autocast
    "small-frames-bfloat16": ((3, 10, 10), {"core": "none", "bfloat16": True}),
    "frames-lstm-centred": ((2, 36, 36), {"center_frames": True}),
    "frames-lstm-newest": ((3, 36, 36), {"frames": 1}),  # the convnet reads the last of the stack
    "frames-small-convnet": ((2, 64, 64), {"convnet": "small"}),  # averaged to 32 x 32, four convolutions
    "frames-small-convnet-unpooled": ((2, 36, 36), {"convnet": "small", "bfloat16": True}),
    "two-values": ((4,), {"value_heads": 2}),  # the env's return's and the novelty bonus's (--novelty-value)
    "two-values-own-critic": ((4,), {"value_heads": 2, "own_critic": True}),
    "small-frames-two-values": ((3, 10, 10), {"value_heads": 2}),  # a grid world's picture
}


def random_network(obs_shape, **options) -> tuple[ActorCritic, torch.Tensor]:
    """A stock network with random weights (large enough that every unit works) and its flat gradient."""
    torch.manual_seed(0)
    model = ActorCritic(obs_shape, 3, StockOptions(**{"hidden_sizes": (16,), **options}))
    flat = flatten_parameters(model)
    flat_grad = attach_flat_gradient(model)
    with torch.no_grad():
        flat.copy_(torch.randn_like(flat) * 0.3)
    model.resample_noise()
    return model, flat_grad


def play(policy, inputs: np.ndarray, state, restarted: np.ndarray) -> list[np.ndarray]:
    """A rollout through the policy interface, as a worker plays it; returns each step's head and value."""
    state = policy.begin_rollout(state)
    outputs = []
    for t, obs in enumerate(inputs):
        head, value, state = policy.act(obs, state)
        outputs.append((head.copy(), value.copy()))
        state = policy.restart(state, restarted[t])
    return outputs


def start_state(policy, batch: int):
    """A non-zero state to start from, as a rollout carried over from the last one gives."""
    generator = np.random.default_rng(1)
    parts = [generator.standard_normal(tuple(part.shape)).astype(np.float32) for part in policy.initial_state(batch)]
    return tuple(parts) if isinstance(policy, NumpyPolicy) else tuple(map(torch.from_numpy, parts))


def draw_noise(model: ActorCritic, draw: str, batch: int) -> None:
    """The rollout's noise: one draw for the batch (--noise-draw worker) or one for each row (env)."""
    if draw == "env" and not any(isinstance(module, NoisyLinear) for module in model.modules()):
        pytest.skip("no noise to draw")
    model.resample_noise(rows=batch if draw == "env" else None)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("draw", ["worker", "env"])
def test_the_numpy_policy_acts_as_the_torch_network_does(shape, training, draw):
    """In training mode with the rollout's noise; in eval mode (the evaluator's) with the mean weights."""
    obs_shape, options = SHAPES[shape]
    model, _ = random_network(obs_shape, **options)
    model.train(training)
    steps, batch = 4, 5
    draw_noise(model, draw, batch)
    inputs = np.random.default_rng(0).random((steps, batch, *obs_shape), dtype=np.float32)
    restarted = np.zeros((steps, batch), dtype=bool)
    restarted[1, 2] = True
    fast, autograd = NumpyPolicy(model), TorchPolicy(model)
    ours = play(fast, inputs, start_state(fast, batch), restarted)
    with torch.no_grad():
        theirs = play(autograd, inputs, start_state(autograd, batch), restarted)
    for (head, value), (torch_head, torch_value) in zip(ours, theirs):
        assert head.dtype == np.float32
        assert_close(torch.from_numpy(head), torch.from_numpy(torch_head), rtol=1e-5, atol=1e-5)
        assert_close(torch.from_numpy(value), torch.from_numpy(torch_value), rtol=1e-5, atol=1e-5)


def gradient(policy, model, flat_grad, inputs, restarted, d_heads, d_values, d_log_std) -> torch.Tensor:
    flat_grad.zero_()
    play(policy, inputs, start_state(policy, inputs.shape[1]), restarted)
    policy.backward(d_heads, d_values, d_log_std, restarted)
    return flat_grad.clone()


RESTARTS = {"none": [], "some": [(1, 0), (2, 2), (4, 1)], "all": [(t, b) for t in range(6) for b in range(3)]}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("restarts", RESTARTS)
@pytest.mark.parametrize("draw", ["worker", "env"])
def test_the_numpy_backward_pass_equals_autograd(shape, restarts, draw):
    obs_shape, options = SHAPES[shape]
    model, flat_grad = random_network(obs_shape, **options)
    steps, batch = 6, 3
    draw_noise(model, draw, batch)
    rng = np.random.default_rng(0)
    inputs = rng.random((steps, batch, *obs_shape), dtype=np.float32)
    restarted = np.zeros((steps, batch), dtype=bool)
    for t, b in RESTARTS[restarts]:
        restarted[t, b] = True
    # an arbitrary loss: sum(d_heads * head + d_values * value), plus a log std gradient for a Box
    d_heads = rng.standard_normal((steps, batch, 3)).astype(np.float32)
    values = () if model.value_heads == 1 else (model.value_heads,)
    d_values = rng.standard_normal((steps, batch, *values)).astype(np.float32)
    d_log_std = rng.standard_normal(3).astype(np.float32) if model.log_std is not None else None

    expected = gradient(TorchPolicy(model), model, flat_grad, inputs, restarted, d_heads, d_values, d_log_std)
    ours = gradient(NumpyPolicy(model), model, flat_grad, inputs, restarted, d_heads, d_values, d_log_std)
    start = 0  # the flat gradient holds the parameters in order
    for name, param in model.named_parameters():
        end = start + param.numel()
        assert torch.count_nonzero(expected[start:end]) > 0, name  # every parameter compared on real numbers
        if options.get("bfloat16") and name.startswith("encoder.1."):  # the convolutions, under autocast
            # bfloat16 keeps 8 bits of mantissa (a relative step of 0.4%), and the numpy path convolves the
            # rollout's frames in one batch where autograd convolved them step by step
            error = (ours[start:end] - expected[start:end]).norm() / expected[start:end].norm()
            assert error < 1e-2, name
        else:
            assert_close(ours[start:end], expected[start:end], rtol=1e-4, atol=1e-5, msg=name)
        start = end


@pytest.mark.parametrize("shape", ["frames-lstm", "frames-no-core", "frames-lstm-bfloat16", "frames-lstm-own-critic"])
def test_the_convolutions_backward_a_chunk_at_a_time_equals_autograd(shape, monkeypatch):
    monkeypatch.setattr(numpy_policy, "CONVOLUTION_CHUNK", 4)  # the rollout's 18 samples: 4 + 4 + 4 + 4 + 2
    test_the_numpy_backward_pass_equals_autograd(shape, "some", "worker")


def test_a_restart_cuts_the_gradient_to_the_episode_before_it():
    model, flat_grad = random_network((4,), noisy=False, hidden_sizes=(8,))
    inputs = np.random.default_rng(0).random((4, 1, 4), dtype=np.float32)
    restarted = np.array([[False], [True], [False], [False]])  # the episode ended at step 1
    d_heads = np.zeros((4, 1, 3), dtype=np.float32)
    d_heads[2:] = 1.0  # a loss on steps 2-3 only, a new episode
    d_values = np.zeros((4, 1), dtype=np.float32)
    policy = NumpyPolicy(model)
    zeros = policy.initial_state(1)
    whole_rollout = gradient(policy, model, flat_grad, inputs, restarted, d_heads, d_values, None)
    # the same loss on a rollout of steps 2-3 alone, from a fresh state: steps 0-1 must add nothing
    flat_grad.zero_()
    play(policy, inputs[2:], zeros, restarted[2:])
    policy.backward(d_heads[2:], d_values[2:], None, restarted[2:])
    assert torch.count_nonzero(whole_rollout) > 0
    assert_close(flat_grad, whole_rollout)


def test_the_numpy_policy_uses_the_noise_of_the_current_rollout():
    model, _ = random_network((4,))
    policy = NumpyPolicy(model)
    obs = np.ones((1, 4), dtype=np.float32)
    state = policy.begin_rollout(policy.initial_state(1))
    first = policy.act(obs, state, record=False)[0].copy()
    model.resample_noise()
    state = policy.begin_rollout(policy.initial_state(1))
    with torch.no_grad():
        expected = model(torch.from_numpy(obs), model.initial_state(1))[0]
    assert_close(torch.from_numpy(policy.act(obs, state, record=False)[0]), expected)
    assert not np.allclose(policy.act(obs, state, record=False)[0], first)


def test_auto_chooses_the_numpy_path_for_the_stock_network_and_autograd_for_any_other():
    model, _ = random_network((4,))
    assert type(make_policy(model, "auto")) is NumpyPolicy
    assert type(make_policy(model, "torch")) is TorchPolicy

    class Other(ActorCritic):
        pass

    other = Other((4,), 3)
    assert type(make_policy(other, "auto")) is TorchPolicy
    with pytest.raises(ValueError, match="stock ActorCritic"):
        make_policy(other, "numpy")
