"""n-step returns, GAE and the A3C loss (a3c.returns) against hand-computed numbers."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from a3c.returns import a3c_loss, discounted_returns, fold_truncation_bootstrap, gae_advantages


def col(*values: float) -> torch.Tensor:
    """A [T, 1] rollout of one environment."""
    return torch.tensor(values, dtype=torch.float32).unsqueeze(1)


def test_returns_bootstrap_from_last_value_when_no_episode_ends():
    # gamma 0.5: R2 = 3 + 0.5 * 8 = 7; R1 = 2 + 0.5 * 7 = 5.5; R0 = 1 + 0.5 * 5.5 = 3.75
    returns = discounted_returns(col(1, 2, 3), col(0, 0, 0), torch.tensor([8.0]), gamma=0.5)
    assert_close(returns, col(3.75, 5.5, 7.0))


def test_returns_do_not_bootstrap_past_a_termination():
    # the episode ends at t=1: R1 = 2 (nothing after it), R0 = 1 + 0.5 * 2; R2 starts the next episode
    returns = discounted_returns(col(1, 2, 3), col(0, 1, 0), torch.tensor([8.0]), gamma=0.5)
    assert_close(returns, col(2.0, 2.0, 7.0))


def test_termination_on_the_last_step_ignores_the_bootstrap_value():
    returns = discounted_returns(col(1, 2), col(0, 1), torch.tensor([100.0]), gamma=0.5)
    assert_close(returns, col(2.0, 2.0))


def test_gamma_one_sums_rewards_and_bootstrap():
    returns = discounted_returns(col(1, 2, 3), col(0, 0, 0), torch.tensor([4.0]), gamma=1.0)
    assert_close(returns, col(10.0, 9.0, 7.0))


def test_fold_truncation_bootstrap_adds_discounted_final_value_only_where_truncated():
    rewards = col(1, 2, 3)
    truncated = col(0, 1, 0)
    final_values = col(9, 5, 9)  # only the truncated step's value may count
    folded = fold_truncation_bootstrap(rewards, truncated, final_values, gamma=0.5)
    assert_close(folded, col(1.0, 4.5, 3.0))


def test_truncation_bootstraps_from_the_final_observation_not_the_next_episode():
    # truncated at t=1 with V(s_final) = 5: R1 = 2 + 0.5 * 5 = 4.5, R0 = 1 + 0.5 * 4.5 = 3.25;
    # t=2 belongs to the next episode: R2 = 3 + 0.5 * V(s_T) = 3 + 0.5 * 8 = 7
    rewards = fold_truncation_bootstrap(col(1, 2, 3), col(0, 1, 0), col(0, 5, 0), gamma=0.5)
    returns = discounted_returns(rewards, col(0, 1, 0), torch.tensor([8.0]), gamma=0.5)
    assert_close(returns, col(3.25, 4.5, 7.0))


def test_returns_of_a_multi_env_batch_are_computed_per_column():
    # [T=3, B=3]: env 0 never ends, env 1 terminates at t=0, env 2 is truncated at t=2 (V(s_final)=2)
    rewards = torch.tensor([[1.0, 1.0, 0.0],
                            [0.0, 2.0, 0.0],
                            [1.0, 0.0, 4.0]])
    dones = torch.tensor([[0.0, 1.0, 0.0],
                          [0.0, 0.0, 0.0],
                          [0.0, 0.0, 1.0]])
    truncated = torch.tensor([[0.0, 0.0, 0.0],
                              [0.0, 0.0, 0.0],
                              [0.0, 0.0, 1.0]])
    final_values = torch.tensor([[0.0, 0.0, 0.0],
                                 [0.0, 0.0, 0.0],
                                 [0.0, 0.0, 2.0]])
    bootstrap = torch.tensor([2.0, 4.0, 100.0])
    folded = fold_truncation_bootstrap(rewards, truncated, final_values, gamma=0.5)
    returns = discounted_returns(folded, dones, bootstrap, gamma=0.5)
    # env 0: R2 = 1 + .5*2 = 2, R1 = 0 + .5*2 = 1, R0 = 1 + .5*1 = 1.5
    # env 1: R2 = 0 + .5*4 = 2, R1 = 2 + .5*2 = 3, R0 = 1 (terminated at t=0)
    # env 2: R2 = 4 + .5*2 = 5 (the bootstrap 100 is ignored), R1 = 2.5, R0 = 1.25
    expected = torch.tensor([[1.5, 1.0, 1.25],
                             [1.0, 3.0, 2.5],
                             [2.0, 2.0, 5.0]])
    assert_close(returns, expected)
    # and each column equals the single-environment computation
    for b in range(3):
        single = discounted_returns(folded[:, b:b + 1], dones[:, b:b + 1], bootstrap[b:b + 1], gamma=0.5)
        assert_close(returns[:, b:b + 1], single)


def test_gae_hand_computed_lambda_half():
    # gamma = lambda = 0.5, values v = [0.5, 1, 1.5], bootstrap V(s_3) = 2, rewards [1, 0, 2]
    # delta2 = 2 + .5*2 - 1.5 = 1.5           A2 = 1.5
    # delta1 = 0 + .5*1.5 - 1 = -0.25         A1 = -0.25 + .25*1.5 = 0.125
    # delta0 = 1 + .5*1 - .5 = 1.0            A0 = 1 + .25*0.125 = 1.03125
    advantages = gae_advantages(col(1, 0, 2), col(0.5, 1, 1.5), col(0, 0, 0), torch.tensor([2.0]),
                                gamma=0.5, lam=0.5)
    assert_close(advantages, col(1.03125, 0.125, 1.5))


def test_gae_stops_at_a_termination():
    # as above but the episode ends at t=1: delta1 = 0 - 1 = -1 and nothing flows back across it
    # A1 = -1; A0 = 1 + .25*(-1) = 0.75; A2 unchanged
    advantages = gae_advantages(col(1, 0, 2), col(0.5, 1, 1.5), col(0, 1, 0), torch.tensor([2.0]),
                                gamma=0.5, lam=0.5)
    assert_close(advantages, col(0.75, -1.0, 1.5))


def test_gae_lambda_zero_is_the_one_step_td_error():
    rewards, values, dones = col(1, 0, 2), col(0.5, 1, 1.5), col(0, 1, 0)
    advantages = gae_advantages(rewards, values, dones, torch.tensor([2.0]), gamma=0.5, lam=0.0)
    assert_close(advantages, col(1 + 0.5 * 1 - 0.5, 0 - 1.0, 2 + 0.5 * 2 - 1.5))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gae_lambda_one_equals_n_step_returns_minus_values(seed):
    generator = torch.Generator().manual_seed(seed)
    steps, batch, gamma = 7, 4, 0.9
    rewards = torch.randn(steps, batch, generator=generator)
    values = torch.randn(steps, batch, generator=generator)
    dones = (torch.rand(steps, batch, generator=generator) < 0.3).float()
    bootstrap = torch.randn(batch, generator=generator)
    advantages = gae_advantages(rewards, values, dones, bootstrap, gamma, lam=1.0)
    expected = discounted_returns(rewards, dones, bootstrap, gamma) - values
    assert dones.sum() > 0  # the episode boundaries are part of what is compared
    assert_close(advantages, expected)


def test_a3c_loss_terms_on_hand_computed_numbers():
    log_probs = col(-1.0, -2.0).requires_grad_()
    entropies = col(0.5, 1.5).requires_grad_()
    values = col(1.0, 2.0).requires_grad_()
    advantages = col(2.0, 1.0)
    loss = a3c_loss(log_probs, entropies, values, advantages, value_loss_coef=0.5, entropy_coef=0.01)
    # policy = -mean(log_prob * A) = -mean(-2, -2) = 2
    assert_close(loss.policy, torch.tensor(2.0))
    # value target R = A + V, so the error is A: 0.5 * mean(4, 1) = 1.25
    assert_close(loss.value, torch.tensor(1.25))
    assert_close(loss.entropy, torch.tensor(1.0))
    assert_close(loss.total, torch.tensor(2.0 + 0.5 * 1.25 - 0.01 * 1.0))

    loss.total.backward()
    # d total / d log_prob = -A / N; d total / d entropy = -entropy_coef / N
    assert_close(log_probs.grad, col(-1.0, -0.5))
    assert_close(entropies.grad, col(-0.005, -0.005))
    # the target A + V is a constant: d total / d V = coef * -(R - V) / N = -0.5 * A / 2
    assert_close(values.grad, col(-0.5, -0.25))


def test_a3c_loss_value_target_is_advantages_plus_values():
    values = torch.tensor([[0.3, -1.2], [2.0, 0.7]], requires_grad=True)
    advantages = torch.tensor([[1.0, -0.5], [0.25, 3.0]])
    targets = advantages + values.detach()
    loss = a3c_loss(torch.zeros(2, 2), torch.zeros(2, 2), values, advantages, 1.0, 0.0)
    assert_close(loss.value, 0.5 * (targets - values.detach()).pow(2).mean())
    loss.value.backward()
    assert_close(values.grad, -(targets - values.detach()) / values.numel())
