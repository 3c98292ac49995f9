"""Gradient hand-off (DESIGN.md fact 1): the optimizer gets exactly each step's gradient.

A known loss L_k = sum(w * c_k) has gradient c_k whatever w is, so a plain-SGD
SharedOptimizer must end at w0 - lr * sum_k c_k. A stale gradient (the first one
re-used) or an accumulating one (c_1 + ... + c_k) gives another result.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp
from torch import nn
from torch.testing import assert_close

from a3c.config import Config
from a3c.optim import SharedOptimizer
from a3c.worker import ActorLearner, local_gradients, sample_actions

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


def train_steps(rank: int, shared: TwoParams, optimizer: SharedOptimizer, steps: int, lock) -> None:
    """What a worker does: copy the shared weights, zero the local grads, backward, hand off."""
    torch.set_num_threads(1)
    local = copy.deepcopy(shared)
    for step in range(steps):
        with torch.no_grad():
            for local_param, shared_param in zip(local.parameters(), shared.parameters()):
                local_param.copy_(shared_param)
        local.zero_grad(set_to_none=True)
        known_loss(local, rank, step).backward()
        grads = local_gradients(local)
        with lock:  # serialise the updates: this test is about the hand-off, not Hogwild races
            optimizer.step(grads, lr=LR)


def test_local_gradients_return_exactly_the_fresh_gradient_each_step():
    model = TwoParams()
    for step in range(4):
        with torch.no_grad():
            model.w.mul_(-1.5)  # the weights change between steps, the gradient must not care
        model.zero_grad(set_to_none=True)
        known_loss(model, rank=0, step=step).backward()
        grads = local_gradients(model)
        c_w, c_b = known_gradients(0, step)
        assert len(grads) == 2
        assert_close(grads[0], c_w, rtol=0, atol=0)
        assert_close(grads[1], c_b, rtol=0, atol=0)


def test_local_gradients_give_zeros_for_an_unused_parameter():
    model = TwoParams()
    model.zero_grad(set_to_none=True)
    (model.w * 2.0).sum().backward()  # b takes no part in this loss
    grads = local_gradients(model)
    assert_close(grads[0], torch.full((4,), 2.0))
    assert grads[1].shape == model.b.shape and torch.count_nonzero(grads[1]) == 0


def test_single_process_optimizer_receives_each_step_gradient():
    shared = TwoParams()
    w0, b0 = shared.w.detach().clone(), shared.b.detach().clone()
    optimizer = PlainSGD(shared.parameters(), lr=1.0)
    train_steps(0, shared, optimizer, steps=5, lock=mp.get_context("fork").Lock())
    sum_w = sum(known_gradients(0, k)[0] for k in range(5))
    sum_b = sum(known_gradients(0, k)[1] for k in range(5))
    assert_close(shared.w.detach(), w0 - LR * sum_w, rtol=0, atol=0)
    assert_close(shared.b.detach(), b0 - LR * sum_b, rtol=0, atol=0)
    assert float(optimizer.steps) == 5


@pytest.mark.timeout(60)
def test_hand_off_across_forked_processes_applies_every_gradient_once():
    steps, ranks = 5, [1, 2]
    shared = TwoParams().share_memory()
    w0, b0 = shared.w.detach().clone(), shared.b.detach().clone()
    optimizer = PlainSGD(shared.parameters(), lr=1.0).share_memory()
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
    base = Config(env="tests.cue_env:Cue-v0", num_processes=1, envs_per_process=4, t_max=5,
                  hidden_size=16, seed=0)
    return base.replace(**changes)


def test_actor_learner_gradient_does_not_carry_what_was_in_grad_before():
    torch.manual_seed(0)
    learner = ActorLearner(cue_config(max_grad_norm=1e9), seeds=[0, 1, 2, 3])  # no clipping
    grads, _ = learner.compute_gradient()
    assert len(grads) == len(list(learner.model.parameters()))
    for param in learner.model.parameters():  # leftovers a missing zero_grad would add in
        param.grad = torch.full_like(param, 1e6)
    grads, _ = learner.compute_gradient()
    assert max(g.abs().max().item() for g in grads) < 1e3


def test_actor_learner_clips_the_gradient_norm():
    torch.manual_seed(0)
    max_norm = 1e-4
    learner = ActorLearner(cue_config(max_grad_norm=max_norm), seeds=[0, 1, 2, 3])
    grads, report = learner.compute_gradient()
    assert report.grad_norm > max_norm  # the unclipped norm, so clipping had work to do
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    assert total.item() == pytest.approx(max_norm, rel=1e-3)


def test_actor_learner_report_counts_steps_and_episodes():
    torch.manual_seed(0)
    learner = ActorLearner(cue_config(), seeds=[0, 1, 2, 3])
    _, report = learner.compute_gradient()
    assert report.env_steps == 5 * 4
    assert len(report.finished_returns) == 5 * 4  # every cue episode lasts one step
    assert set(report.finished_returns) <= {0.0, 1.0} and set(report.finished_lengths) == {1}


def test_actor_learner_handles_truncated_episodes():
    torch.manual_seed(0)
    learner = ActorLearner(cue_config(env="tests.cue_env:CueTruncated-v0", t_max=6), seeds=[0, 1, 2, 3])
    grads, report = learner.compute_gradient()
    assert report.env_steps == 6 * 4
    assert set(report.finished_lengths) == {2} and len(report.finished_lengths) == 3 * 4
    assert all(torch.isfinite(g).all() for g in grads)


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
