"""The math of one update: returns, advantages and the A3C loss. Pure tensor functions.

Shapes: [T, B] for T rollout steps of B environments; [B] for bootstrap values.
`dones[t]` is 1 where the episode ended at step t (terminated or truncated); a
truncated episode's bootstrap from V(s_final) is folded into its reward first.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch


def fold_truncation_bootstrap(rewards: torch.Tensor, truncated: torch.Tensor,
                              final_values: torch.Tensor, gamma: float) -> torch.Tensor:
    """r + gamma * V(s_final) where the time limit cut the episode: it did not end there."""
    return rewards + gamma * final_values * truncated


def discounted_returns(rewards: torch.Tensor, dones: torch.Tensor,
                       bootstrap: torch.Tensor, gamma: float) -> torch.Tensor:
    """n-step returns R_t = r_t + gamma * R_{t+1} * (1 - done_t), R_T = V(s_T)."""
    r, d = rewards.numpy(), dones.numpy()
    returns = np.empty_like(r)
    running = bootstrap.numpy()
    for t in range(r.shape[0] - 1, -1, -1):
        running = r[t] + gamma * running * (1 - d[t])
        returns[t] = running
    return torch.from_numpy(returns)


def gae_advantages(rewards: torch.Tensor, values: torch.Tensor, dones: torch.Tensor,
                   bootstrap: torch.Tensor, gamma: float, lam: float) -> torch.Tensor:
    """Generalised advantage estimation; lam = 1 gives n-step returns minus values.

    Inputs carry no gradient; the recursion runs on numpy views, where each of
    its small per-step ops costs a fifth of a torch op.
    """
    r, v, d = rewards.numpy(), values.numpy(), dones.numpy()
    advantages = np.empty_like(r)
    running = np.zeros_like(r[0])
    next_value = bootstrap.numpy()
    for t in range(r.shape[0] - 1, -1, -1):
        not_done = 1 - d[t]
        delta = r[t] + gamma * next_value * not_done - v[t]
        running = delta + gamma * lam * not_done * running
        advantages[t] = running
        next_value = v[t]
    return torch.from_numpy(advantages)


class Loss(NamedTuple):
    total: torch.Tensor
    policy: torch.Tensor
    value: torch.Tensor
    entropy: torch.Tensor


def masked_mean(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    return x.mean() if mask is None else (x * mask).sum() / mask.sum().clamp_min(1)


def a3c_loss(log_probs: torch.Tensor, entropies: torch.Tensor, values: torch.Tensor,
             advantages: torch.Tensor, value_loss_coef: float, entropy_coef: float,
             mask: torch.Tensor | None = None) -> Loss:
    """Policy gradient with advantage + value regression - entropy bonus, averaged over [T, B].

    `advantages` must be detached; the value target is advantages + values.
    `mask` (1 = a real transition) leaves out the steps that only reset an env.
    """
    returns = advantages + values.detach()
    policy = -masked_mean(log_probs * advantages, mask)
    value = 0.5 * masked_mean((returns - values).pow(2), mask)
    entropy = masked_mean(entropies, mask)
    return Loss(policy + value_loss_coef * value - entropy_coef * entropy, policy, value, entropy)
