"""The numpy backward pass against torch autograd: per layer, per distribution, and for a whole update."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.distributions import Categorical as TorchCategorical, Normal
from torch.testing import assert_close

import a3c.learner
from a3c.actor import NumpyActor
from a3c.config import Config
from a3c.flat import attach_flat_gradient, flatten_parameters
from a3c.model import ActorCritic
from a3c.policy import Categorical, Gaussian
from a3c.seeding import worker_seeds
from a3c.learner import ActorLearner


def stepped_with_autograd(model: ActorCritic, inputs: torch.Tensor, state, keep: np.ndarray):
    """The reference: the torch network stepped with autograd, states zeroed where keep is False."""
    outputs = []
    for t, step_inputs in enumerate(inputs):
        state = model.step(step_inputs, state)
        outputs.append(model.heads(state[0]))
        mask = torch.from_numpy(keep[t]).float().unsqueeze(1)
        state = (state[0] * mask, state[1] * mask)
    policy, values = zip(*outputs)
    return torch.stack(policy), torch.stack(values)


def numpy_rollout(actor: NumpyActor, inputs: np.ndarray, state, keep: np.ndarray):
    start_states, traces = [], []
    for t, step_inputs in enumerate(inputs):
        start_states.append(state)
        traces.append(actor.step(step_inputs, state))
        state = (traces[-1].hidden * keep[t][:, None], traces[-1].cell * keep[t][:, None])
    return start_states, traces


@pytest.mark.parametrize("obs_shape, noisy, restarts", [
    ((4,), True, []), ((4,), True, [(1, 0), (2, 2), (4, 1)]), ((4,), False, [(2, 1)]),
    ((4,), True, [(t, b) for t in range(6) for b in range(3)]), ((2, 36, 36), True, [(3, 0)])])
def test_the_numpy_backward_pass_equals_autograd(obs_shape, noisy, restarts):
    torch.manual_seed(0)
    model = ActorCritic(obs_shape, 3, 16, noisy)
    flat = flatten_parameters(model)
    flat_grad = attach_flat_gradient(model)
    with torch.no_grad():
        flat.copy_(torch.randn_like(flat) * 0.3)
    model.resample_noise()
    actor = NumpyActor(model)
    actor.begin_rollout()
    steps, batch = 6, 3
    inputs = torch.rand(steps, batch, *obs_shape)
    state = (torch.randn(batch, 16) * 0.5, torch.randn(batch, 16))
    keep = np.ones((steps, batch), dtype=bool)
    for t, b in restarts:
        keep[t, b] = False
    d_heads = torch.randn(steps, batch, 4)  # an arbitrary loss: sum(d_heads * [policy, value])

    policy, values = stepped_with_autograd(model, inputs, state, keep)
    (torch.cat([policy, values.unsqueeze(-1)], -1) * d_heads).sum().backward()
    expected = flat_grad.clone()

    flat_grad.zero_()
    start_states, traces = numpy_rollout(actor, inputs.numpy(), tuple(part.numpy() for part in state), keep)
    actor.backward(inputs.numpy(), start_states, traces, keep, d_heads.numpy(), None)
    for name, param in model.named_parameters():
        offset = (param.data_ptr() - flat.data_ptr()) // flat.element_size()
        expected_grad = expected[offset:offset + param.numel()].view_as(param)
        assert torch.count_nonzero(expected_grad) > 0, name  # every parameter is compared on real numbers
        assert_close(param.grad, expected_grad, rtol=1e-4, atol=1e-5, msg=name)


def test_a_restart_cuts_the_gradient_to_the_episode_before_it():
    torch.manual_seed(0)
    model = ActorCritic(4, 2, 8, False)
    attach_flat_gradient(model)
    actor = NumpyActor(model)
    actor.begin_rollout()
    inputs = np.random.default_rng(0).random((4, 1, 4), dtype=np.float32)
    zeros = (np.zeros((1, 8), np.float32),) * 2
    keep = np.array([[True], [False], [True], [True]])  # the episode ended at step 1
    d_heads = np.zeros((4, 1, 3), dtype=np.float32)
    d_heads[2:] = 1.0  # a loss on steps 2-3 only, a new episode
    actor.backward(inputs, *numpy_rollout(actor, inputs, zeros, keep), keep, d_heads, None)
    whole_rollout = model.encoder[0].weight.grad.clone()
    # the same loss on a rollout of steps 2-3 alone: steps 0-1 must have added nothing
    actor.backward(inputs[2:], *numpy_rollout(actor, inputs[2:], zeros, keep[2:]), keep[2:], d_heads[2:], None)
    assert torch.count_nonzero(whole_rollout) > 0
    assert_close(model.encoder[0].weight.grad, whole_rollout)


def log_prob_entropy_loss(dist, d_log_probs: torch.Tensor, d_entropies: torch.Tensor, actions: torch.Tensor):
    return (dist.log_prob(actions).reshape(d_log_probs.shape) * d_log_probs).sum() + \
        (dist.entropy().reshape(d_entropies.shape) * d_entropies).sum()


def test_the_categorical_backward_equals_autograd():
    torch.manual_seed(0)
    logits = torch.randn(4, 3, 5, requires_grad=True)
    actions = torch.randint(0, 5, (4, 3))
    d_log_probs, d_entropies = torch.randn(4, 3), torch.randn(4, 3)
    log_prob_entropy_loss(TorchCategorical(logits=logits), d_log_probs, d_entropies, actions).backward()
    d_head, d_log_std = Categorical().backward(logits.detach().numpy(), None, actions.numpy(),
                                               d_log_probs.numpy(), d_entropies.numpy())
    assert d_log_std is None
    assert_close(torch.from_numpy(d_head), logits.grad)


@pytest.mark.parametrize("bounded", [False, True])
def test_the_gaussian_backward_equals_autograd(bounded):
    torch.manual_seed(0)
    low, high = np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32)
    gaussian = Gaussian(low, high) if bounded else Gaussian()
    head = torch.randn(4, 3, 2, requires_grad=True)
    log_std = torch.tensor([-0.5, 0.3], requires_grad=True)
    actions = torch.randn(4, 3, 2)
    d_log_probs, d_entropies = torch.randn(4, 3), torch.randn(4, 3)
    mean = torch.from_numpy(gaussian.center) + torch.from_numpy(gaussian.half_range) * torch.tanh(head) \
        if bounded else head
    normal = Normal(mean, log_std.exp())
    ((normal.log_prob(actions).sum(-1) * d_log_probs).sum() + (normal.entropy().sum(-1) * d_entropies).sum()).backward()
    d_head, d_log_std = gaussian.backward(head.detach().numpy(), log_std.detach().numpy(), actions.numpy(),
                                          d_log_probs.numpy(), d_entropies.numpy())
    assert_close(torch.from_numpy(d_head), head.grad)
    assert_close(torch.from_numpy(d_log_std), log_std.grad)


class Spy:
    """Wraps a function and keeps the arguments of its last call."""

    def __init__(self, function):
        self.function, self.args = function, None

    def __call__(self, *args):
        self.args = args
        return self.function(*args)


@pytest.mark.parametrize("env, envs", [("CartPole-v1", 8), ("CartPole-v1", 2), ("Pendulum-v1", 3)])
def test_an_update_gives_the_gradient_of_the_a3c_loss(env, envs, monkeypatch):
    """The whole chain (advantages, loss, distribution, heads, LSTM, encoder) against autograd."""
    torch.manual_seed(0)
    config = Config(env=env, envs_per_process=envs, t_max=30, max_grad_norm=1e9, entropy_coef=0.05,
                    value_loss_coef=0.3, gae_lambda=0.9)
    learner = ActorLearner(config, worker_seeds(config, rank=0))
    learner.compute_gradient()  # a rollout in: the next one starts from a carried LSTM state
    loss_spy = Spy(a3c.learner.a3c_loss)
    monkeypatch.setattr(a3c.learner, "a3c_loss", loss_spy)
    backward_spy = Spy(learner.actor.backward)
    monkeypatch.setattr(learner.actor, "backward", backward_spy)
    log_prob_spy = Spy(learner.policy.log_prob_entropy)
    monkeypatch.setattr(learner.policy, "log_prob_entropy", log_prob_spy)
    grad, _ = learner.compute_gradient()

    inputs, start_states, _, keep, _, _ = backward_spy.args
    _, _, actions = log_prob_spy.args
    _, _, advantages, _, _, mask = loss_spy.args
    if env == "CartPole-v1":
        assert not keep.all()  # episodes ended inside the rollout
    model = learner.model
    numpy_grad = grad.clone()
    model.zero_grad(set_to_none=False)
    learner.flat_grad.zero_()
    state = tuple(torch.from_numpy(part) for part in start_states[0])
    policy, values = stepped_with_autograd(model, torch.from_numpy(inputs), state, keep)
    if env == "Pendulum-v1":
        gaussian = learner.policy
        mean = torch.from_numpy(gaussian.center) + torch.from_numpy(gaussian.half_range) * torch.tanh(policy)
        dist = Normal(mean, model.log_std.exp())
        log_probs, entropies = dist.log_prob(torch.from_numpy(actions)).sum(-1), dist.entropy().sum(-1)
    else:
        dist = TorchCategorical(logits=policy)
        log_probs, entropies = dist.log_prob(torch.from_numpy(actions)), dist.entropy()
    weights = torch.ones_like(values) / values.numel() if mask is None else \
        torch.from_numpy(mask).float() / float(mask.sum())
    advantages = torch.from_numpy(advantages)
    targets = advantages + values.detach()
    loss = (-(weights * log_probs * advantages).sum() + 0.3 * 0.5 * (weights * (targets - values) ** 2).sum()
            - 0.05 * (weights * entropies).sum())
    loss.backward()
    assert_close(numpy_grad, learner.flat_grad, rtol=1e-4, atol=1e-6)
