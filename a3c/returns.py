"""The math of one update: returns, advantages and the A3C loss with its gradient. Pure numpy.

Shapes: [T, B] for T rollout steps of B environments; [B] for bootstrap values.
`dones[t]` is 1 where the episode ended at step t (terminated or truncated); a
truncated episode's bootstrap from V(s_final) is folded into its reward first.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np


def fold_truncation_bootstrap(rewards: np.ndarray, truncated: np.ndarray, final_values: np.ndarray,
                              gamma: float) -> np.ndarray:
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


def gae_advantages(rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, bootstrap: np.ndarray,
                   gamma: float, lam: float) -> np.ndarray:
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


class Loss(NamedTuple):
    total: float
    policy: float
    value: float
    entropy: float


class LossGradient(NamedTuple):
    """d total / d log-prob, d total / d entropy and d total / d value of every step, each [T, B]."""

    log_probs: np.ndarray
    entropies: np.ndarray
    values: np.ndarray


def a3c_loss(log_probs: np.ndarray, entropies: np.ndarray, advantages: np.ndarray, value_loss_coef: float,
             entropy_coef: float, mask: Optional[np.ndarray] = None) -> tuple[Loss, LossGradient]:
    """Policy gradient with advantage + value regression - entropy bonus, averaged over [T, B].

    The value target is advantages + values, a constant, so the value error is the
    advantage itself. `mask` (1 = a real transition) leaves out the steps that only
    reset an env.
    """
    weights = np.full(advantages.shape, 1.0 / advantages.size, dtype=np.float32) if mask is None \
        else (mask / max(mask.sum(), 1)).astype(np.float32)
    policy = -float((weights * log_probs * advantages).sum())
    value = 0.5 * float((weights * advantages ** 2).sum())
    entropy = float((weights * entropies).sum())
    total = policy + value_loss_coef * value - entropy_coef * entropy
    gradient = LossGradient(-weights * advantages, -entropy_coef * weights, -value_loss_coef * weights * advantages)
    return Loss(total, policy, value, entropy), gradient
