"""Optimizers whose whole state lives in shared memory, stepped by every worker (Hogwild).

Standalone rather than torch.optim subclasses: the first torch.optim optimizer
imports torch._dynamo (about 0.85 s of start-up), and here the gradient is
handed to step() explicitly, so no process ever reads a stale `.grad`
(docs/design/facts.md, fact 1). The updates reproduce torch.optim.Adam / RMSprop to rounding, with
one addition for Hogwild: each weight's move is clamped to what a sequential run can reach (fact 2).
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import torch

from a3c.config.settings import Config


class SharedOptimizer:
    state_names: tuple[str, ...] = ()

    def __init__(self, params: Iterable[torch.Tensor], lr: float):
        self.params = list(params)
        self.lr = lr
        # One counter for all workers: Adam's bias correction needs the global step.
        self.steps = torch.zeros((), dtype=torch.float64)
        self.state = {name: [torch.zeros_like(p) for p in self.params] for name in self.state_names}

    def share_memory(self) -> "SharedOptimizer":
        """Move every state tensor to shared memory; call before starting workers."""
        self.steps.share_memory_()
        for tensors in self.state.values():
            for tensor in tensors:
                tensor.share_memory_()
        return self

    @torch.no_grad()
    def step(self, grads: Sequence[torch.Tensor], lr: float | None = None) -> int:
        """Apply one gradient (one tensor per parameter, in parameter order); returns its step number,
        counted over every process that steps this optimizer."""
        if len(grads) != len(self.params):
            raise ValueError(f"expected {len(self.params)} gradients, got {len(grads)}")
        step = self.steps.add_(1).item()
        self._update(list(grads), self.lr if lr is None else lr, step)
        return int(step)

    def step_count(self) -> int:
        return int(self.steps.item())

    def _update(self, grads: list[torch.Tensor], lr: float, step: float) -> None:
        raise NotImplementedError

    def state_dict(self) -> dict:
        return {"steps": self.steps.clone(), **{k: [t.clone() for t in v] for k, v in self.state.items()}}

    @torch.no_grad()
    def load_state_dict(self, saved: dict) -> None:
        self.steps.copy_(saved["steps"])
        for name, tensors in self.state.items():
            torch._foreach_copy_(tensors, saved[name])


class SharedAdam(SharedOptimizer):
    state_names = ("exp_avg", "exp_avg_sq")

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8):
        super().__init__(params, lr)
        self.betas, self.eps = betas, eps

    def _update(self, grads, lr, step):
        beta1, beta2 = self.betas
        exp_avg, exp_avg_sq = self.state["exp_avg"], self.state["exp_avg_sq"]
        torch._foreach_lerp_(exp_avg, grads, 1 - beta1)
        torch._foreach_mul_(exp_avg_sq, beta2)
        torch._foreach_addcmul_(exp_avg_sq, grads, grads, 1 - beta2)
        denom = torch._foreach_sqrt(exp_avg_sq)
        torch._foreach_div_(denom, math.sqrt(1 - beta2**step))
        torch._foreach_add_(denom, self.eps)
        ratio = torch._foreach_div(exp_avg, denom)  # m_hat / sqrt(v_hat) times (1 - beta1^step)
        bias_correction = 1 - beta1**step
        # inert unless a race (docs/design/facts.md, fact 2)
        clamp_(ratio, adam_ratio_bound(beta1, beta2, step) * bias_correction)
        torch._foreach_add_(self.params, ratio, alpha=-lr / bias_correction)


class SharedRMSprop(SharedOptimizer):
    state_names = ("square_avg",)

    def __init__(self, params, lr: float = 7e-4, alpha: float = 0.99, eps: float = 1e-5):
        super().__init__(params, lr)
        self.alpha, self.eps = alpha, eps

    def _update(self, grads, lr, step):
        square_avg = self.state["square_avg"]
        torch._foreach_mul_(square_avg, self.alpha)
        torch._foreach_addcmul_(square_avg, grads, grads, 1 - self.alpha)
        denom = torch._foreach_sqrt(square_avg)
        torch._foreach_add_(denom, self.eps)
        ratio = torch._foreach_div(grads, denom)
        # the average holds at least (1 - alpha) g^2 unless a race overwrote it (docs/design/facts.md, fact 2)
        clamp_(ratio, 1 / math.sqrt(1 - self.alpha))
        torch._foreach_add_(self.params, ratio, alpha=-lr)


def adam_ratio_bound(beta1: float, beta2: float, step: float) -> float:
    """The largest |m_hat| / sqrt(v_hat) Adam can reach at `step` when m and v hold the same gradients.

    m = (1 - b1) sum_k b1^k g_k and v = (1 - b2) sum_k b2^k g_k^2 over the last `step` gradients; by
    Cauchy-Schwarz |sum_k b1^k g_k| <= sqrt(sum_k (b1^2 / b2)^k) sqrt(sum_k b2^k g_k^2). 1 at the first
    step; about 7.3 later with the default betas.
    """
    r = beta1**2 / beta2
    terms = step if r == 1 else (1 - r**step) / (1 - r)
    return (1 - beta1) / math.sqrt(1 - beta2) * math.sqrt(1 - beta2**step) / (1 - beta1**step) * math.sqrt(terms)


def clamp_(tensors: list[torch.Tensor], bound: float) -> None:
    torch._foreach_clamp_min_(tensors, -bound)
    torch._foreach_clamp_max_(tensors, bound)


def average_states(states: list[dict]) -> dict:
    """One optimizer state for several that stepped copies of the same weights (a Ray run's node groups):
    the mean of each moment, and the most steps (Adam's bias correction has then long faded)."""
    merged = {"steps": max(state["steps"] for state in states)}
    for name in states[0]:
        if name != "steps":
            merged[name] = [torch.stack(tensors).mean(0) for tensors in zip(*(state[name] for state in states))]
    return merged


def make_optimizer(name: str, params, lr: float) -> SharedOptimizer:
    optimizers = {"adam": SharedAdam, "rmsprop": SharedRMSprop}
    return optimizers[name](params, lr=lr)


def budget_used(env_steps: int, max_steps: int, seconds: float, max_minutes: float) -> float:
    """The share of the run's budget spent: of --max-steps, or of --max-minutes (0: none) where that is further."""
    used = env_steps / max_steps
    return max(used, seconds / (60 * max_minutes)) if max_minutes > 0 else used


def linear_decay(initial_lr: float, used: float) -> float:
    """Learning rate once `used` of the budget is spent: a linear decay to zero at its end."""
    return initial_lr * max(0.0, 1.0 - used)


def current_lr(config: Config, env_steps: int, seconds: float) -> float:
    """The run's learning rate after `env_steps` and `seconds` of training: --lr, decayed linearly with
    --lr-decay to 0 at --max-steps, or at --max-minutes if that comes first."""
    if not config.lr_decay:
        return config.lr
    return linear_decay(config.lr, budget_used(env_steps, config.max_steps, seconds, config.max_minutes))
