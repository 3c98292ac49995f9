"""A worker's replay memory of whole rollouts (ACER/IMPALA-style), uniform or prioritised. Pure numpy.

A rollout is replayed by re-running the current network over its observations from
its start state, so it keeps what the loss needs beyond them: the behaviour
log-probs for the V-trace ratios, and the truncation and reset bookkeeping.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

# the floor of a priority: a rollout whose value error was ~0 stays sampleable
MIN_PRIORITY = 1e-6


class Rollout(NamedTuple):
    """One rollout of T steps in B envs, as the acting worker saw it; [T, B] unless noted."""

    observations: np.ndarray  # [T, B, *obs], raw from the env, dtype kept (uint8 frames stay uint8)
    actions: np.ndarray  # [T, B] discrete or [T, B, A] continuous
    behaviour_log_probs: np.ndarray  # log mu(a_t|s_t) of the policy that acted, NoisyNet noise included
    rewards: np.ndarray  # scaled/clipped as the loss sees them, before fold_truncation_bootstrap
    dones: np.ndarray  # terminated | truncated
    truncated: np.ndarray
    final_obs: np.ndarray  # [T, B, *obs]: the last observation where truncated, zeros elsewhere
    valid: np.ndarray  # False on the steps that only reset an env
    restarted: np.ndarray  # the recurrent state is zeroed after these steps
    start_state: tuple  # the recurrent state the rollout began with, numpy arrays; () without one
    next_obs: np.ndarray  # [B, *obs]: the observation after the last step, for the bootstrap
    action_masks: Optional[np.ndarray] = None  # [T, B, actions]: each step's legal actions; None without masks

    @property
    def nbytes(self) -> int:
        arrays = [field for field in self if isinstance(field, np.ndarray)] + list(self.start_state)
        return sum(array.nbytes for array in arrays)


class ReplayHandle(NamedTuple):
    """Which rollout `sample` returned: its slot, and which of the rollouts stored there over time."""

    slot: int
    generation: int


class ReplayMemory:
    """A ring buffer of the last `capacity` rollouts, sampled with P(i) = p_i^alpha / sum_k p_k^alpha.

    alpha = 0 samples uniformly. The importance-sampling weight (N P(i))^-beta / max_k (N P(k))^-beta
    with beta = 1 is P_min / P(i), 1 when uniform. Capacity is tens to hundreds of
    rollouts, so sampling is plain numpy over the priority array, O(N), not a sum tree.
    """

    def __init__(self, capacity: int, priority_alpha: float = 0.0, *, rng: np.random.Generator):
        if capacity < 1:
            raise ValueError(f"ReplayMemory capacity must be at least 1, got {capacity}")
        if priority_alpha < 0:
            raise ValueError(f"ReplayMemory priority_alpha must be >= 0, got {priority_alpha}")
        self.capacity, self.priority_alpha, self.rng = capacity, priority_alpha, rng
        self._rollouts: list[Rollout] = []
        self._priorities = np.zeros(capacity)
        self._generations = np.zeros(capacity, dtype=np.int64)
        self._added = 0  # rollouts ever added: the next one's generation

    def __len__(self) -> int:
        return len(self._rollouts)

    def add(self, rollout: Rollout) -> ReplayHandle:
        """Store `rollout` (its arrays, not copies: the caller must not reuse them) in place of the
        oldest one once full; it gets the largest priority of the others stored (1 if none), so
        it is sampled soon and its priority then measured."""
        slot = self._added % self.capacity
        self._priorities[slot] = 0.0  # an evicted rollout's priority is not among those stored
        stored = self._priorities[: len(self)]
        priority = stored.max() if stored.any() else 1.0  # stored priorities are >= MIN_PRIORITY > 0
        if slot == len(self._rollouts):
            self._rollouts.append(rollout)
        else:
            self._rollouts[slot] = rollout
        handle = ReplayHandle(slot, self._added)
        self._priorities[slot], self._generations[slot] = priority, self._added
        self._added += 1
        return handle

    def sample(self) -> tuple[ReplayHandle, Rollout, float]:
        """(handle, rollout, importance-sampling weight in (0, 1]) of one rollout drawn by priority."""
        if not self._rollouts:
            raise ValueError("sample() from an empty ReplayMemory: add() a rollout first")
        weights = self._priorities[: len(self)] ** self.priority_alpha
        slot = int(self.rng.choice(len(weights), p=weights / weights.sum()))
        return (
            ReplayHandle(slot, int(self._generations[slot])),
            self._rollouts[slot],
            float(weights.min() / weights[slot]),
        )

    def update_priority(self, handle: ReplayHandle, priority: float) -> None:
        """Set the priority (e.g. the mean |value error|) of the rollout `handle` names, floored at
        MIN_PRIORITY; ignored when that rollout has since been overwritten by a newer one."""
        if not np.isfinite(priority):
            raise ValueError(f"a replay priority must be finite, got {priority}")
        if self._generations[handle.slot] == handle.generation:
            self._priorities[handle.slot] = max(float(priority), MIN_PRIORITY)
