"""n-step returns, GAE and the actor-critic loss (a3c.learn.returns) against hand-computed numbers and autograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from a3c.learn.returns import (
    a3c_loss,
    actor_critic_loss,
    discounted_returns,
    fold_truncation_bootstrap,
    gae_advantages,
    loss_weights,
)


def tensor(values) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def col(*values: float) -> np.ndarray:
    """A [T, 1] rollout of one environment."""
    return tensor(values)[:, None]


def assert_close(actual, expected) -> None:
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


def test_returns_bootstrap_from_last_value_when_no_episode_ends():
    # gamma 0.5: R2 = 3 + 0.5 * 8 = 7; R1 = 2 + 0.5 * 7 = 5.5; R0 = 1 + 0.5 * 5.5 = 3.75
    returns = discounted_returns(col(1, 2, 3), col(0, 0, 0), tensor([8.0]), gamma=0.5)
    assert_close(returns, col(3.75, 5.5, 7.0))


def test_returns_do_not_bootstrap_past_a_termination():
    # the episode ends at t=1: R1 = 2 (nothing after it), R0 = 1 + 0.5 * 2; R2 starts the next episode
    returns = discounted_returns(col(1, 2, 3), col(0, 1, 0), tensor([8.0]), gamma=0.5)
    assert_close(returns, col(2.0, 2.0, 7.0))


def test_termination_on_the_last_step_ignores_the_bootstrap_value():
    returns = discounted_returns(col(1, 2), col(0, 1), tensor([100.0]), gamma=0.5)
    assert_close(returns, col(2.0, 2.0))


def test_gamma_one_sums_rewards_and_bootstrap():
    returns = discounted_returns(col(1, 2, 3), col(0, 0, 0), tensor([4.0]), gamma=1.0)
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
    returns = discounted_returns(rewards, col(0, 1, 0), tensor([8.0]), gamma=0.5)
    assert_close(returns, col(3.25, 4.5, 7.0))


def test_returns_of_a_multi_env_batch_are_computed_per_column():
    # [T=3, B=3]: env 0 never ends, env 1 terminates at t=0, env 2 is truncated at t=2 (V(s_final)=2)
    rewards = tensor([[1.0, 1.0, 0.0], [0.0, 2.0, 0.0], [1.0, 0.0, 4.0]])
    dones = tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    truncated = tensor([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    final_values = tensor([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 2.0]])
    bootstrap = tensor([2.0, 4.0, 100.0])
    folded = fold_truncation_bootstrap(rewards, truncated, final_values, gamma=0.5)
    returns = discounted_returns(folded, dones, bootstrap, gamma=0.5)
    # env 0: R2 = 1 + .5*2 = 2, R1 = 0 + .5*2 = 1, R0 = 1 + .5*1 = 1.5
    # env 1: R2 = 0 + .5*4 = 2, R1 = 2 + .5*2 = 3, R0 = 1 (terminated at t=0)
    # env 2: R2 = 4 + .5*2 = 5 (the bootstrap 100 is ignored), R1 = 2.5, R0 = 1.25
    expected = tensor([[1.5, 1.0, 1.25], [1.0, 3.0, 2.5], [2.0, 2.0, 5.0]])
    assert_close(returns, expected)
    # and each column equals the single-environment computation
    for b in range(3):
        single = discounted_returns(folded[:, b : b + 1], dones[:, b : b + 1], bootstrap[b : b + 1], gamma=0.5)
        assert_close(returns[:, b : b + 1], single)


def test_gae_hand_computed_lambda_half():
    # gamma = lambda = 0.5, values v = [0.5, 1, 1.5], bootstrap V(s_3) = 2, rewards [1, 0, 2]
    # delta2 = 2 + .5*2 - 1.5 = 1.5           A2 = 1.5
    # delta1 = 0 + .5*1.5 - 1 = -0.25         A1 = -0.25 + .25*1.5 = 0.125
    # delta0 = 1 + .5*1 - .5 = 1.0            A0 = 1 + .25*0.125 = 1.03125
    advantages = gae_advantages(col(1, 0, 2), col(0.5, 1, 1.5), col(0, 0, 0), tensor([2.0]), gamma=0.5, lam=0.5)
    assert_close(advantages, col(1.03125, 0.125, 1.5))


def test_gae_stops_at_a_termination():
    # as above but the episode ends at t=1: delta1 = 0 - 1 = -1 and nothing flows back across it
    # A1 = -1; A0 = 1 + .25*(-1) = 0.75; A2 unchanged
    advantages = gae_advantages(col(1, 0, 2), col(0.5, 1, 1.5), col(0, 1, 0), tensor([2.0]), gamma=0.5, lam=0.5)
    assert_close(advantages, col(0.75, -1.0, 1.5))


def test_gae_lambda_zero_is_the_one_step_td_error():
    rewards, values, dones = col(1, 0, 2), col(0.5, 1, 1.5), col(0, 1, 0)
    advantages = gae_advantages(rewards, values, dones, tensor([2.0]), gamma=0.5, lam=0.0)
    assert_close(advantages, col(1 + 0.5 * 1 - 0.5, 0 - 1.0, 2 + 0.5 * 2 - 1.5))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gae_lambda_one_equals_n_step_returns_minus_values(seed):
    rng = np.random.default_rng(seed)
    steps, batch, gamma = 7, 4, 0.9
    rewards, values = rng.standard_normal((2, steps, batch), dtype=np.float32)
    dones = (rng.random((steps, batch)) < 0.3).astype(np.float32)
    bootstrap = rng.standard_normal(batch, dtype=np.float32)
    advantages = gae_advantages(rewards, values, dones, bootstrap, gamma, lam=1.0)
    expected = discounted_returns(rewards, dones, bootstrap, gamma) - values
    assert dones.sum() > 0  # the episode boundaries are part of what is compared
    assert_close(advantages, expected)


def test_a3c_loss_terms_and_gradient_on_hand_computed_numbers():
    log_probs, entropies, advantages = col(-1.0, -2.0), col(0.5, 1.5), col(2.0, 1.0)
    loss, gradient = a3c_loss(log_probs, entropies, advantages, value_loss_coef=0.5, entropy_coef=0.01)
    # policy = -mean(log_prob * A) = -mean(-2, -2) = 2
    assert loss.policy == pytest.approx(2.0)
    # value target R = A + V, so the error is A: 0.5 * mean(4, 1) = 1.25
    assert loss.value == pytest.approx(1.25)
    assert loss.entropy == pytest.approx(1.0)
    assert loss.total == pytest.approx(2.0 + 0.5 * 1.25 - 0.01 * 1.0)
    # d total / d log_prob = -A / N; d total / d entropy = -entropy_coef / N
    assert_close(gradient.log_probs, col(-1.0, -0.5))
    assert_close(gradient.entropies, col(-0.005, -0.005))
    # the target A + V is a constant: d total / d V = coef * -(R - V) / N = -0.5 * A / 2
    assert_close(gradient.values, col(-0.5, -0.25))


def test_a3c_loss_mask_leaves_out_the_reset_steps():
    log_probs, entropies, advantages = col(-1.0, -5.0, -2.0), col(0.5, 9.0, 1.5), col(2.0, 7.0, 1.0)
    masked, masked_gradient = a3c_loss(log_probs, entropies, advantages, 0.5, 0.01, mask=col(1, 0, 1))
    kept = [0, 2]
    loss, gradient = a3c_loss(log_probs[kept], entropies[kept], advantages[kept], 0.5, 0.01)
    assert masked == pytest.approx(loss)
    for ours, theirs in zip(masked_gradient, gradient):
        assert_close(ours[kept], theirs)
        assert ours[1] == 0


def test_loss_weights_average_over_real_transitions_and_scale_by_the_is_weight():
    mask = col(1, 0, 1, 1)
    assert_close(loss_weights(mask.shape, mask), col(1 / 3, 0, 1 / 3, 1 / 3))
    assert_close(loss_weights((2, 2)), np.full((2, 2), 0.25))
    # one IS weight per rollout scales the whole loss: a sum-normalisation would cancel it
    assert_close(loss_weights(mask.shape, mask, is_weights=0.5), col(1 / 6, 0, 1 / 6, 1 / 6))
    per_step = col(0.5, 9.0, 1.0, 0.25)
    assert_close(loss_weights(mask.shape, mask, per_step), col(0.5 / 3, 0, 1 / 3, 0.25 / 3))
    assert loss_weights(mask.shape, mask, per_step).dtype == np.float32


@pytest.mark.parametrize("seed", [0, 1])
def test_actor_critic_loss_and_gradient_equal_autograd(seed):
    """Policy advantages and value errors differ (off-policy targets); weights are arbitrary."""
    rng = np.random.default_rng(seed)
    steps, batch, value_loss_coef, entropy_coef = 5, 3, 0.3, 0.05
    log_probs, entropies, values, targets, advantages = rng.standard_normal((5, steps, batch), dtype=np.float32)
    mask = rng.random((steps, batch)) < 0.8
    weights = loss_weights(mask.shape, mask, rng.random((steps, batch)).astype(np.float32))
    loss, gradient = actor_critic_loss(
        log_probs, entropies, advantages, targets - values, value_loss_coef, entropy_coef, weights
    )

    log_probs_t, entropies_t, values_t = (torch.from_numpy(x).requires_grad_() for x in (log_probs, entropies, values))
    weights_t, targets_t, advantages_t = (torch.from_numpy(x) for x in (weights, targets, advantages))
    policy = -(weights_t * log_probs_t * advantages_t).sum()
    value = 0.5 * (weights_t * (targets_t - values_t) ** 2).sum()
    entropy = (weights_t * entropies_t).sum()
    total = policy + value_loss_coef * value - entropy_coef * entropy
    total.backward()
    assert loss == pytest.approx((total.item(), policy.item(), value.item(), entropy.item()), rel=1e-5)
    for ours, theirs in zip(gradient, (log_probs_t.grad, entropies_t.grad, values_t.grad)):
        assert_close(ours, theirs.numpy())
    assert (gradient.values[~mask] == 0).all() and (gradient.log_probs[~mask] == 0).all()
