"""The gradients of the numpy math against torch autograd: per distribution, and for a whole update
(returns, loss, distribution, network) through either policy. tests/test_policies.py holds the
network's own backward pass to autograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.distributions import Categorical as TorchCategorical
from torch.distributions import Normal
from torch.testing import assert_close

import a3c.learn.learner
from a3c.config.settings import Config
from a3c.learn.distributions import Categorical, Gaussian, MultiCategorical, mask_logits
from a3c.learn.learner import ActorLearner
from a3c.learn.seeding import worker_seeds

MASKED = "tests.masked_env:MaskedCue-v0"  # two of four actions legal each step


def log_prob_entropy_loss(dist, d_log_probs: torch.Tensor, d_entropies: torch.Tensor, actions: torch.Tensor):
    return (dist.log_prob(actions).reshape(d_log_probs.shape) * d_log_probs).sum() + (
        dist.entropy().reshape(d_entropies.shape) * d_entropies
    ).sum()


def test_the_categorical_backward_equals_autograd():
    torch.manual_seed(0)
    logits = torch.randn(4, 3, 5, requires_grad=True)
    actions = torch.randint(0, 5, (4, 3))
    d_log_probs, d_entropies = torch.randn(4, 3), torch.randn(4, 3)
    log_prob_entropy_loss(TorchCategorical(logits=logits), d_log_probs, d_entropies, actions).backward()
    d_head, d_log_std = Categorical().backward(
        logits.detach().numpy(), None, actions.numpy(), d_log_probs.numpy(), d_entropies.numpy()
    )
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
    d_head, _ = multi.backward(logits.detach().numpy(), None, actions.numpy(), d_log_probs.numpy(), d_entropies.numpy())
    assert_close(torch.from_numpy(d_head), logits.grad)
    greedy = multi.greedy(logits.detach().numpy())
    assert greedy.tolist() == torch.stack([part.argmax(-1) for part in logits.split(parts, -1)], -1).tolist()


@pytest.mark.parametrize("parts", [None, (3, 2, 4)])
def test_masked_logits_give_the_log_probs_entropies_and_gradients_of_autograds_masked_categoricals(parts):
    """Illegal logits at -1e30 in torch (-inf gives its entropy's gradient NaNs), at MASKED_LOGIT in ours:
    the same log-probs of legal actions, entropies over the legal ones, no NaN, and the same d loss / d head,
    0 at every illegal action."""
    rng = np.random.default_rng(0)
    sizes = parts or (5,)
    logits = torch.randn(4, 3, sum(sizes), dtype=torch.float32, requires_grad=True)
    mask = torch.from_numpy(rng.random((4, 3, sum(sizes))) < 0.5)
    for start, size in zip(np.cumsum((0, *sizes)), sizes):  # at least one legal choice in every part
        mask[..., start + int(rng.integers(size))] = True
    masked = logits.masked_fill(~mask, -1e30)
    dists = [TorchCategorical(logits=part) for part in masked.split(sizes, dim=-1)]
    actions = torch.stack([dist.sample() for dist in dists], dim=-1)  # legal, by the masked distributions
    d_log_probs, d_entropies = torch.randn(4, 3), torch.randn(4, 3)
    log_probs = sum(dist.log_prob(actions[..., k]) for k, dist in enumerate(dists))
    entropies = sum(dist.entropy() for dist in dists)
    ((log_probs * d_log_probs).sum() + (entropies * d_entropies).sum()).backward()

    ours = Categorical() if parts is None else MultiCategorical(parts)
    ours_actions = actions.numpy()[..., 0] if parts is None else actions.numpy()
    head = mask_logits(logits.detach().numpy(), mask.numpy())
    ours_log_probs, ours_entropies = ours.log_prob_entropy(head, None, ours_actions)
    assert np.isfinite(ours_entropies).all()
    assert_close(torch.from_numpy(ours_log_probs), log_probs.detach())
    assert_close(torch.from_numpy(ours_entropies), entropies.detach())
    d_head, _ = ours.backward(head, None, ours_actions, d_log_probs.numpy(), d_entropies.numpy())
    assert_close(torch.from_numpy(d_head), logits.grad)
    assert not d_head[~mask.numpy()].any() and d_head[mask.numpy()].any()
    assert legal(mask.numpy(), ours.greedy(head), sizes).all()  # though the raw logits' argmax is often illegal
    assert not legal(mask.numpy(), ours.greedy(logits.detach().numpy()), sizes).all()
    rows, row_masks = (np.repeat(array.reshape(-1, array.shape[-1]), 100, axis=0) for array in (head, mask.numpy()))
    assert legal(row_masks, ours.sample(rows, None, np.random.default_rng(1)), sizes).all()


def legal(mask: np.ndarray, actions: np.ndarray, sizes: tuple) -> np.ndarray:
    """Whether each action (a part per size, or one index) is legal under `mask`, its parts side by side."""
    indices = actions.reshape(*mask.shape[:-1], -1) + np.cumsum((0, *sizes))[:-1]
    return np.take_along_axis(mask, indices, -1).all(-1)


@pytest.mark.parametrize("bounded", [False, True])
def test_the_gaussian_backward_equals_autograd(bounded):
    torch.manual_seed(0)
    low, high = np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32)
    gaussian = Gaussian(low, high) if bounded else Gaussian()
    head = torch.randn(4, 3, 2, requires_grad=True)
    log_std = torch.tensor([-0.5, 0.3], requires_grad=True)
    actions = torch.randn(4, 3, 2)
    d_log_probs, d_entropies = torch.randn(4, 3), torch.randn(4, 3)
    mean = (
        torch.from_numpy(gaussian.center) + torch.from_numpy(gaussian.half_range) * torch.tanh(head)
        if bounded
        else head
    )
    normal = Normal(mean, log_std.exp())
    ((normal.log_prob(actions).sum(-1) * d_log_probs).sum() + (normal.entropy().sum(-1) * d_entropies).sum()).backward()
    d_head, d_log_std = gaussian.backward(
        head.detach().numpy(), log_std.detach().numpy(), actions.numpy(), d_log_probs.numpy(), d_entropies.numpy()
    )
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


@pytest.mark.parametrize(
    "env, envs, learner, core",
    [
        ("CartPole-v1", 8, "numpy", "lstm"),
        ("CartPole-v1", 2, "numpy", "lstm"),
        ("Pendulum-v1", 3, "numpy", "lstm"),
        ("CartPole-v1", 8, "torch", "lstm"),
        ("Pendulum-v1", 3, "torch", "none"),
        ("CartPole-v1", 2, "numpy", "none"),
        (MASKED, 8, "numpy", "lstm"),
        (MASKED, 4, "torch", "none"),
    ],
)
def test_an_update_gives_the_gradient_of_the_a3c_loss(env, envs, learner, core, monkeypatch):
    """The whole chain (advantages, loss, distribution, heads, LSTM, encoder) against autograd; with
    action masks, of the masked policy."""
    torch.manual_seed(0)
    config = Config(
        env=env,
        envs_per_process=envs,
        t_max=30,
        max_grad_norm=1e9,
        entropy_coef=0.05,
        value_loss_coef=0.3,
        gae_lambda=0.9,
        learner=learner,
        core=core,
        hidden_sizes=(16, 16),
        novelty_coef=0.0,  # the A3C loss alone (tests/test_novelty.py has the predictor's)
        normalize_obs=False,  # the statistics move with the rollout (tests/test_normalize.py)
    )
    learner = ActorLearner(config, worker_seeds(config, rank=0))
    learner.compute_gradient()  # a rollout in: the next one starts from a carried LSTM state
    spies = {}
    for owner, name in [
        (a3c.learn.learner, "a3c_loss"),
        (learner.policy, "backward"),
        (learner.policy, "act"),
        (learner.policy, "begin_rollout"),
        (learner.distribution, "log_prob_entropy"),
        (a3c.learn.learner, "mask_logits"),
    ]:
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
        if env == MASKED:  # the masks each step acted under
            # the steps' (the noise's figures mask the whole rollout's mean-weight heads once more)
            per_step = [args[1] for args, _, _ in spies["mask_logits"].calls if args[1].ndim == 2]
            masks = torch.from_numpy(np.stack(per_step))
            assert masks.shape == policy.shape and not masks.all()
            policy = policy.masked_fill(~masks, -1e30)
        dist = TorchCategorical(logits=policy)
        log_probs, entropies = dist.log_prob(torch.from_numpy(actions)), dist.entropy()
    weights = (
        torch.ones_like(values) / values.numel() if mask is None else torch.from_numpy(mask).float() / float(mask.sum())
    )
    advantages = torch.from_numpy(advantages)
    targets = advantages + values.detach()
    loss = (
        -(weights * log_probs * advantages).sum()
        + 0.3 * 0.5 * (weights * (targets - values) ** 2).sum()
        - 0.05 * (weights * entropies).sum()
    )
    loss.backward()
    assert torch.count_nonzero(learner.flat_grad) > learner.flat_grad.numel() // 2  # compared on real numbers
    assert_close(ours, learner.flat_grad, rtol=1e-4, atol=1e-6)
