"""Gradient hand-off (docs/design/facts.md, fact 1): the optimizer gets exactly each step's gradient.

A known loss L_k = sum(w * c_k) has gradient c_k whatever w is, so a plain-SGD
SharedOptimizer must end at w0 - lr * sum_k c_k. A stale gradient (the first one
re-used) or an accumulating one (c_1 + ... + c_k) gives another result.
"""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.multiprocessing as mp
from torch import nn
from torch.testing import assert_close

from a3c.config.settings import Config
from a3c.learn.distributions import sample_categorical as sample_actions
from a3c.learn.learner import ActorLearner
from a3c.learn.optim import SharedOptimizer
from a3c.learn.seeding import worker_seeds
from a3c.nets.flat import attach_flat_gradient, flatten_parameters

LR = 0.25  # a power of two, and small integer gradients: every sum below is exact in float32


class PlainSGD(SharedOptimizer):
    """Test-only: params -= lr * grad, so the final weights reveal every gradient received."""

    def _update(self, grads, lr, step):
        for param, grad in zip(self.params, grads):
            param.add_(grad, alpha=-lr)


class TwoParams(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.tensor([1.0, -2.0, 0.5, 3.0]))
        self.b = nn.Parameter(torch.tensor([[0.0, 1.0, 2.0], [-1.0, -0.5, 4.0]]))


def known_gradients(rank: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """c_k for the loss of `step` in process `rank`: different in every step and process."""
    c_w = torch.tensor([1.0, -2.0, 3.0, 0.5]) * (step + 1) + rank
    c_b = torch.full((2, 3), float(step - rank)) + torch.tensor([[1.0, 0.0, -1.0], [2.0, 0.0, -2.0]])
    return c_w, c_b


def known_loss(model: TwoParams, rank: int, step: int) -> torch.Tensor:
    c_w, c_b = known_gradients(rank, step)
    return (model.w * c_w).sum() + (model.b * c_b).sum()


def flat(*tensors: torch.Tensor) -> torch.Tensor:
    return torch.cat([t.reshape(-1) for t in tensors])


def shared_two_params() -> tuple[TwoParams, torch.Tensor]:
    """The trainer's layout: the shared model's parameters are views of one flat shared tensor."""
    shared = TwoParams()
    weights = flatten_parameters(shared).share_memory_()
    return shared, weights


def train_steps(rank: int, shared: TwoParams, optimizer: SharedOptimizer, steps: int, lock) -> None:
    """What a worker does: copy the shared weights, zero the local flat grad, backward, hand off."""
    torch.set_num_threads(1)
    local = copy.deepcopy(shared)
    local_weights = flatten_parameters(local)
    local_grad = attach_flat_gradient(local)
    for step in range(steps):
        with torch.no_grad():
            local_weights.copy_(optimizer.params[0])
        local_grad.zero_()
        known_loss(local, rank, step).backward()
        with lock:  # serialise the updates: this test is about the hand-off, not Hogwild races
            optimizer.step([local_grad], lr=LR)


def test_flat_gradient_holds_exactly_the_fresh_gradient_each_step():
    model = TwoParams()
    flatten_parameters(model)
    grad = attach_flat_gradient(model)
    for step in range(4):
        with torch.no_grad():
            model.w.mul_(-1.5)  # the weights change between steps, the gradient must not care
        grad.zero_()
        known_loss(model, rank=0, step=step).backward()
        assert_close(grad, flat(*known_gradients(0, step)), rtol=0, atol=0)


def test_flat_gradient_is_zero_for_an_unused_parameter():
    model = TwoParams()
    flatten_parameters(model)
    grad = attach_flat_gradient(model)
    (model.w * 2.0).sum().backward()  # b takes no part in this loss
    assert_close(grad, flat(torch.full((4,), 2.0), torch.zeros(2, 3)))


def test_single_process_optimizer_receives_each_step_gradient():
    shared, weights = shared_two_params()
    w0, b0 = shared.w.detach().clone(), shared.b.detach().clone()
    optimizer = PlainSGD([weights], lr=1.0)
    train_steps(0, shared, optimizer, steps=5, lock=mp.get_context("fork").Lock())
    sum_w = sum(known_gradients(0, k)[0] for k in range(5))
    sum_b = sum(known_gradients(0, k)[1] for k in range(5))
    assert_close(shared.w.detach(), w0 - LR * sum_w, rtol=0, atol=0)
    assert_close(shared.b.detach(), b0 - LR * sum_b, rtol=0, atol=0)
    assert float(optimizer.steps) == 5


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_hand_off_across_forked_processes_applies_every_gradient_once():
    steps, ranks = 5, [1, 2]
    shared, weights = shared_two_params()
    w0, b0 = shared.w.detach().clone(), shared.b.detach().clone()
    optimizer = PlainSGD([weights], lr=1.0).share_memory()
    ctx = mp.get_context("fork")
    lock = ctx.Lock()
    processes = [ctx.Process(target=train_steps, args=(rank, shared, optimizer, steps, lock)) for rank in ranks]
    for process in processes:
        process.start()
    for process in processes:
        process.join(30)
    assert [p.exitcode for p in processes] == [0, 0]
    train_steps(0, shared, optimizer, steps, lock)  # and the parent's own steps land on the same weights

    all_ranks = [0] + ranks
    sum_w = sum(known_gradients(r, k)[0] for r in all_ranks for k in range(steps))
    sum_b = sum(known_gradients(r, k)[1] for r in all_ranks for k in range(steps))
    assert_close(shared.w.detach(), w0 - LR * sum_w, rtol=0, atol=0)
    assert_close(shared.b.detach(), b0 - LR * sum_b, rtol=0, atol=0)
    assert float(optimizer.steps) == steps * len(all_ranks)


def cue_config(**changes) -> Config:
    base = Config(env="tests.cue_env:Cue-v0", num_processes=1, envs_per_process=4, t_max=5, hidden_sizes=(16,), seed=0)
    return base.replace(**changes)


class CueFramesEnv(gym.Env):
    """The cue task seen as a tiny uint8 frame (brightness = cue), so the model gets the convolutional
    encoder, whose backward pass is torch's and accumulates into .grad (the numpy passes overwrite)."""

    observation_space = gym.spaces.Box(0, 255, (2, 20, 20), np.uint8)
    action_space = gym.spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.cue = int(self.np_random.integers(3))
        return np.full((2, 20, 20), 100 * self.cue, np.uint8), {}

    def step(self, action):
        return self.reset()[0], float(int(action) == self.cue), True, False, {}


if "CueFrames-v0" not in gym.registry:
    gym.register(id="CueFrames-v0", entry_point=CueFramesEnv)


def cue_learner(**changes) -> ActorLearner:
    config = cue_config(**changes)
    return ActorLearner(config, worker_seeds(config, rank=0))


@pytest.mark.parametrize("kind", ["numpy", "torch"])  # the autograd learner accumulates into every .grad
def test_actor_learner_gradient_does_not_carry_what_was_in_grad_before(kind):
    def rollout_gradient(garbage: bool) -> tuple[torch.Tensor, torch.Tensor]:
        torch.manual_seed(0)  # the same weights, envs and noise for both learners
        learner = cue_learner(env="tests.test_handoff:CueFrames-v0", max_grad_norm=1e9, learner=kind)
        if garbage:  # leftovers a missing zero would add in
            learner.flat_grad.fill_(1e6)
        grad, _ = learner.compute_gradient()
        convs = [m for m in learner.model.encoder.modules() if isinstance(m, nn.Conv2d)]
        return grad.clone(), torch.cat([m.weight.grad.reshape(-1) for m in convs])

    clean, conv_grad = rollout_gradient(garbage=False)
    assert conv_grad.numel() > 0 and conv_grad.abs().sum() > 0  # the accumulating path took part
    assert_close(rollout_gradient(garbage=True)[0], clean, rtol=0, atol=0)


def test_actor_learner_clips_the_gradient_norm():
    torch.manual_seed(0)
    max_norm = 1e-4
    learner = cue_learner(max_grad_norm=max_norm)
    grad, report = learner.compute_gradient()
    assert report.grad_norm > max_norm  # the unclipped norm, so clipping had work to do
    assert torch.linalg.vector_norm(grad).item() == pytest.approx(max_norm, rel=1e-3)


def test_actor_learner_report_counts_steps_and_episodes():
    torch.manual_seed(0)
    learner = cue_learner()
    _, report = learner.compute_gradient()
    assert report.env_steps == 5 * 4
    assert len(report.finished_returns) == 5 * 4  # every cue episode lasts one step
    assert set(report.finished_returns) <= {0.0, 1.0} and set(report.finished_lengths) == {1}


def test_actor_learner_handles_truncated_episodes():
    torch.manual_seed(0)
    learner = cue_learner(env="tests.cue_env:CueTruncated-v0", t_max=6)
    grad, report = learner.compute_gradient()
    assert report.env_steps == 6 * 4
    assert set(report.finished_lengths) == {2} and len(report.finished_lengths) == 3 * 4
    assert torch.isfinite(grad).all()


def test_sample_actions_inverts_the_cumulative_distribution():
    probs = np.array([[0.2, 0.5, 0.3]] * 5, dtype=np.float32)
    uniform = np.array([0.1, 0.3, 0.69, 0.71, 0.999999])
    assert sample_actions(probs, uniform).tolist() == [0, 1, 1, 2, 2]
    certain = np.array([[0.0, 1.0, 0.0]] * 3, dtype=np.float32)
    assert sample_actions(certain, np.array([1e-9, 0.5, 0.999999])).tolist() == [1, 1, 1]


def test_sample_actions_frequencies_follow_the_probabilities():
    rng = np.random.default_rng(0)
    probs = np.tile(np.array([0.1, 0.6, 0.3], dtype=np.float32), (20_000, 1))
    counts = np.bincount(sample_actions(probs, rng.random(20_000)), minlength=3) / 20_000
    assert np.allclose(counts, [0.1, 0.6, 0.3], atol=0.015)  # about 4 standard errors


def test_sample_actions_never_picks_an_action_of_probability_zero():
    # float32 softmax rows often sum to 0.99999994; a uniform draw above that must not fall
    # through to the last action when that action's probability is 0
    probs = torch.softmax(torch.tensor([[1.0, 2.5, -200.0]]), dim=-1).numpy()
    assert probs[0, 2] == 0.0
    largest_uniform = np.array([np.nextafter(1.0, 0.0)])  # the largest value rng.random() can return
    assert sample_actions(probs, largest_uniform).item() != 2
