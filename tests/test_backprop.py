"""The gradients of the numpy math against torch autograd: per distribution, and for a whole update
(returns, loss, distribution, network) through either policy. tests/test_policies.py holds the
network's own backward pass to autograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.distributions import Categorical as TorchCategorical, Normal
from torch.testing import assert_close

import a3c.learner
from a3c.config import Config
from a3c.distributions import Categorical, Gaussian, MultiCategorical
from a3c.learner import ActorLearner
from a3c.seeding import worker_seeds


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


def test_the_multi_part_categorical_backward_equals_autograd_over_independent_parts():
    torch.manual_seed(0)
    parts = (3, 2, 4)
    logits = torch.randn(4, 3, sum(parts), requires_grad=True)
    actions = torch.stack([torch.randint(0, n, (4, 3)) for n in parts], dim=-1)
    d_log_probs, d_entropies = torch.randn(4, 3), torch.randn(4, 3)
    dists = [TorchCategorical(logits=part) for part in logits.split(parts, dim=-1)]
    log_probs = sum(dist.log_prob(actions[..., k]) for k, dist in enumerate(dists))
    entropies = sum(dist.entropy() for dist in dists)
    ((log_probs * d_log_probs).sum() + (entropies * d_entropies).sum()).backward()
    multi = MultiCategorical(parts)
    ours_log_probs, ours_entropies = multi.log_prob_entropy(logits.detach().numpy(), None, actions.numpy())
    assert_close(torch.from_numpy(ours_log_probs), log_probs.detach())
    assert_close(torch.from_numpy(ours_entropies), entropies.detach())
    d_head, _ = multi.backward(logits.detach().numpy(), None, actions.numpy(), d_log_probs.numpy(),
                               d_entropies.numpy())
    assert_close(torch.from_numpy(d_head), logits.grad)
    greedy = multi.greedy(logits.detach().numpy())
    assert greedy.tolist() == torch.stack([part.argmax(-1) for part in logits.split(parts, -1)], -1).tolist()


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
    """Wraps a function and keeps the arguments and result of each call."""

    def __init__(self, function):
        self.function, self.calls = function, []

    def __call__(self, *args, **kwargs):
        result = self.function(*args, **kwargs)
        self.calls.append((args, kwargs, result))
        return result

    @property
    def args(self):
        return self.calls[-1][0]


def stepped_with_autograd(model, observations: list, state, restarted: np.ndarray):
    """The reference: the torch network stepped with autograd, states zeroed where an episode restarted."""
    heads, values = [], []
    for t, obs in enumerate(observations):
        head, value, state = model(model.normalize(torch.from_numpy(obs)), state)
        heads.append(head)
        values.append(value)
        keep = torch.from_numpy(~restarted[t]).float().unsqueeze(1)
        state = tuple(part * keep for part in state)
    return torch.stack(heads), torch.stack(values)


@pytest.mark.parametrize("env, envs, learner, core", [
    ("CartPole-v1", 8, "numpy", "lstm"), ("CartPole-v1", 2, "numpy", "lstm"), ("Pendulum-v1", 3, "numpy", "lstm"),
    ("CartPole-v1", 8, "torch", "lstm"), ("Pendulum-v1", 3, "torch", "none"), ("CartPole-v1", 2, "numpy", "none")])
def test_an_update_gives_the_gradient_of_the_a3c_loss(env, envs, learner, core, monkeypatch):
    """The whole chain (advantages, loss, distribution, heads, LSTM, encoder) against autograd."""
    torch.manual_seed(0)
    config = Config(env=env, envs_per_process=envs, t_max=30, max_grad_norm=1e9, entropy_coef=0.05,
                    value_loss_coef=0.3, gae_lambda=0.9, learner=learner, core=core, hidden_sizes=(16, 16))
    learner = ActorLearner(config, worker_seeds(config, rank=0))
    learner.compute_gradient()  # a rollout in: the next one starts from a carried LSTM state
    spies = {}
    for owner, name in [(a3c.learner, "a3c_loss"), (learner.policy, "backward"), (learner.policy, "act"),
                        (learner.policy, "begin_rollout"), (learner.distribution, "log_prob_entropy")]:
        spies[name] = Spy(getattr(owner, name))
        monkeypatch.setattr(owner, name, spies[name])
    grad, _ = learner.compute_gradient()

    start_state = spies["begin_rollout"].calls[-1][2]
    observations = [args[0].copy() for args, kwargs, _ in spies["act"].calls if kwargs.get("record", True)]
    _, _, _, restarted = spies["backward"].args
    _, _, actions = spies["log_prob_entropy"].args
    _, _, advantages, _, _, mask = spies["a3c_loss"].args
    if env == "CartPole-v1":
        assert restarted.any()  # episodes ended inside the rollout
    model = learner.model
    ours = grad.clone()
    learner.flat_grad.zero_()
    state = tuple(torch.as_tensor(part).detach() for part in start_state)
    policy, values = stepped_with_autograd(model, observations, state, restarted)
    if env == "Pendulum-v1":
        gaussian = learner.distribution
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
    assert torch.count_nonzero(learner.flat_grad) > learner.flat_grad.numel() // 2  # compared on real numbers
    assert_close(ours, learner.flat_grad, rtol=1e-4, atol=1e-6)
