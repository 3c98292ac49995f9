"""The math of one update: returns, advantages and the actor-critic loss with its gradient. Pure numpy.

Shapes: [T, B] for T rollout steps of B environments; [B] for bootstrap values. Returns and advantages
take [T, B, V] and [B, V] too, for V values each learning a return of its own (the env's and the novelty
bonus's: --novelty-value), with per-step flags [T, B, V].
`dones[t]` is 1 where the episode ended at step t (terminated or truncated); a
truncated episode's bootstrap from V(s_final) is folded into its reward first.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional

import numpy as np


def fold_truncation_bootstrap(
    rewards: np.ndarray, truncated: np.ndarray, final_values: np.ndarray, gamma: float
) -> np.ndarray:
    """r + gamma * V(s_final) where the time limit cut the episode: it did not end there."""
    return rewards + gamma * final_values * truncated


def discounted_returns(rewards: np.ndarray, dones: np.ndarray, bootstrap: np.ndarray, gamma: float) -> np.ndarray:
    """n-step returns R_t = r_t + gamma * R_{t+1} * (1 - done_t), R_T = V(s_T)."""
    returns = np.empty_like(rewards)
    running = bootstrap
    for t in range(rewards.shape[0] - 1, -1, -1):
        running = rewards[t] + gamma * running * (1 - dones[t])
        returns[t] = running
    return returns


def gae_advantages(
    rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, bootstrap: np.ndarray, gamma: float, lam: float
) -> np.ndarray:
    """Generalised advantage estimation; lam = 1 gives n-step returns minus values."""
    advantages = np.empty_like(rewards)
    running = np.zeros_like(rewards[0])
    next_value = bootstrap
    for t in range(rewards.shape[0] - 1, -1, -1):
        not_done = 1 - dones[t]
        delta = rewards[t] + gamma * next_value * not_done - values[t]
        running = delta + gamma * lam * not_done * running
        advantages[t] = running
        next_value = values[t]
    return advantages


def vtrace(
    log_rhos: np.ndarray,
    rewards: np.ndarray,
    dones: np.ndarray,
    values: np.ndarray,
    bootstrap: np.ndarray,
    gamma: float,
    lam: float,
    rho_bar: float = 1.0,
    c_bar: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """V-trace (Espeholt et al. 2018) with a lambda: (value targets v_t, policy advantages A_t).

    log_rhos = log pi(a_t|s_t) - log mu(a_t|s_t) of the acting policy mu; V_T = v_T = bootstrap.
      rho_t = min(rho_bar, e^log_rho_t), c_t = lam * min(c_bar, e^log_rho_t), g_t = gamma * (1 - done_t)
      delta_t = rho_t * (r_t + g_t * V_{t+1} - V_t)
      v_t - V_t = delta_t + g_t * c_t * (v_{t+1} - V_{t+1})
      A_t = rho_t * (r_t + g_t * ((1 - lam) * V_{t+1} + lam * v_{t+1}) - V_t)
    On-policy (log_rhos = 0) both v_t - V_t and A_t equal gae_advantages(lam).
    """
    # clipped in log space: e^log_rho overflows float32 past 88, min(log_rho, log rho_bar) does not;
    # math.log keeps the bound a Python float, so float32 stays float32
    rhos = np.exp(np.minimum(log_rhos, math.log(rho_bar)))
    traces = lam * np.exp(np.minimum(log_rhos, math.log(c_bar)))
    discounts = gamma * (1 - dones)
    next_values = np.concatenate([values[1:], bootstrap[None]])
    deltas = rhos * (rewards + discounts * next_values - values)
    corrections = np.empty_like(values)  # v_t - V_t
    running = np.zeros_like(bootstrap)
    for t in range(values.shape[0] - 1, -1, -1):
        running = deltas[t] + discounts[t] * traces[t] * running
        corrections[t] = running
    next_corrections = np.concatenate([corrections[1:], np.zeros_like(bootstrap)[None]])
    # (1 - lam) * V_{t+1} + lam * v_{t+1} = V_{t+1} + lam * (v_{t+1} - V_{t+1})
    advantages = rhos * (rewards + discounts * (next_values + lam * next_corrections) - values)
    return values + corrections, advantages


class Loss(NamedTuple):
    total: float
    policy: float
    value: float
    entropy: float


class LossGradient(NamedTuple):
    """d total / d log-prob, d total / d entropy and d total / d value of every step, each [T, B] (the values
    [T, B, V] where the loss had V of them)."""

    log_probs: np.ndarray
    entropies: np.ndarray
    values: np.ndarray


def loss_weights(shape: tuple, mask: Optional[np.ndarray] = None, is_weights=1.0) -> np.ndarray:
    """w = is_weights * mask / count(mask): the mean over real transitions, each scaled by its IS weight.

    Divided by the count, not by the sum of the IS weights: a rollout's single IS weight
    (prioritised replay) must scale its loss, and a sum-normalisation would cancel it.
    """
    mask = np.ones(shape, dtype=np.float32) if mask is None else mask
    return (is_weights * mask / max(mask.sum(), 1)).astype(np.float32)


def actor_critic_loss(
    log_probs: np.ndarray,
    entropies: np.ndarray,
    policy_advantages: np.ndarray,
    value_errors: np.ndarray,
    value_loss_coef: float,
    entropy_coef: float,
    weights: np.ndarray,
) -> tuple[Loss, LossGradient]:
    """sum_w(-log_prob * A) + value_loss_coef * sum_w(0.5 * (v_target - V)^2) - entropy_coef * sum_w(entropy).

    sum_w(x) = sum(weights * x); `weights` [T, B] come from `loss_weights`. A and the
    value targets are constants, so d/d log-prob = -w * A and, with value_errors =
    targets - V, d/d V = -value_loss_coef * w * value_errors. `value_errors` may be [T, B, V]: each of V
    values' errors weighted as its step is, their squares summed.
    """
    value_weights = weights.reshape(weights.shape + (1,) * (value_errors.ndim - weights.ndim))
    policy = -float((weights * log_probs * policy_advantages).sum())
    value = 0.5 * float((value_weights * value_errors**2).sum())
    entropy = float((weights * entropies).sum())
    total = policy + value_loss_coef * value - entropy_coef * entropy
    gradient = LossGradient(
        -weights * policy_advantages, -entropy_coef * weights, -value_loss_coef * value_weights * value_errors
    )
    return Loss(total, policy, value, entropy), gradient


def a3c_loss(
    log_probs: np.ndarray,
    entropies: np.ndarray,
    advantages: np.ndarray,
    value_loss_coef: float,
    entropy_coef: float,
    mask: Optional[np.ndarray] = None,
) -> tuple[Loss, LossGradient]:
    """The on-policy loss, averaged over [T, B]: the value target is advantages + values,
    so the value error is the advantage itself. `mask` (1 = a real transition) leaves
    out the steps that only reset an env. Advantages [T, B, V] of V values: the policy follows their sum,
    each value its own error.
    """
    return actor_critic_loss(
        log_probs,
        entropies,
        advantages if advantages.ndim == log_probs.ndim else advantages.sum(axis=-1),
        advantages,
        value_loss_coef,
        entropy_coef,
        loss_weights(log_probs.shape, mask),
    )
