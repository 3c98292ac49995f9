"""The algorithm of one worker: play a rollout in K environments, compute the A3C loss and its gradient;
with --replay-ratio, also replay stored rollouts under the V-trace correction (ACER-style)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from a3c.config.settings import Config
from a3c.envs.batch import make_env_batch
from a3c.learn.distributions import distribution, mask_logits
from a3c.learn.policies import make_policy
from a3c.learn.replay import ReplayMemory, Rollout
from a3c.learn.returns import (
    LossGradient,
    a3c_loss,
    actor_critic_loss,
    fold_truncation_bootstrap,
    gae_advantages,
    loss_weights,
    vtrace,
)
from a3c.learn.seeding import WorkerSeeds
from a3c.nets.actor_critic import RunningNorm
from a3c.nets.factory import build_model
from a3c.nets.flat import attach_flat_gradient, clip_norm_, flatten_parameters


@dataclass
class RolloutReport:
    """What one update tells the metrics writer: plain numbers only (docs/design/facts.md, fact 5)."""

    env_steps: int  # 0 for a replayed update
    finished_returns: list
    finished_lengths: list
    policy_loss: float
    value_loss: float
    entropy: float
    grad_norm: float
    rollout_seconds: float = 0.0  # acting: the envs and the forward passes
    update_seconds: float = 0.0  # the loss and the backward pass (a replay's forward passes included)
    replayed: bool = False
    applied: bool = True  # False where a non-finite gradient was dropped
    policy_lag: int = 0  # shared-model updates applied between this gradient's weight read and its own


class ActorLearner:
    """A local network and K environments; each call returns a gradient: of a new rollout of t_max
    steps, or of a stored one replayed with the current weights.

    Knows nothing of processes or shared memory, so any transport can drive it.
    """

    def __init__(self, config: Config, seeds: WorkerSeeds, shared_statistics: Optional[dict[str, RunningNorm]] = None):
        """`shared_statistics`: the shared model's `statistics()`, updated and read in place."""
        self.config = config
        self.envs = make_env_batch(config.env, seeds.envs, seeds.vector_env)
        spec = self.envs.spec
        self.model = build_model(config, spec)
        for name, norm in (shared_statistics or {}).items():
            setattr(self.model, name, norm)
        self.distribution = distribution(spec)
        self.flat_params = flatten_parameters(self.model)
        self.flat_grad = attach_flat_gradient(self.model)
        self.policy = make_policy(self.model, config.learner)
        self.state = self.policy.initial_state(len(self.envs))
        self.rng = np.random.default_rng(seeds.actions)
        self.replay_rng = np.random.default_rng(seeds.replay)
        self.memory = (ReplayMemory(config.replay_capacity, config.replay_priority, rng=self.replay_rng)
                       if config.replay_ratio > 0 else None)
        self.replays_pending = 0  # replayed updates due before the next new rollout

    @torch.no_grad()
    def load_weights(self, flat_weights: torch.Tensor) -> None:
        self.flat_params.copy_(flat_weights)

    def next_gradient(self) -> tuple[torch.Tensor, RolloutReport]:
        """The gradient of the next update: a new rollout's, then those of the replays due after it."""
        if self.replays_pending:
            self.replays_pending -= 1
            return self.replay_gradient()
        gradient = self.compute_gradient()
        self.replays_pending = self.replays_due()
        return gradient

    def compute_gradient(self) -> tuple[torch.Tensor, RolloutReport]:
        """Play t_max steps in every env, then backpropagate the A3C loss once.

        The weights and the noise are those the policy acted with, so the gradient is
        exactly on-policy. Stores the rollout for replay when replay is on. Returns the
        flat gradient (a buffer this learner reuses on its next call).
        """
        started = time.perf_counter()
        config, policy, envs, spec = self.config, self.policy, self.envs, self.envs.spec
        steps, batch = config.t_max, len(envs)
        self.model.resample_noise()  # fixed for the whole rollout (docs/design/facts.md, fact 6)
        state = policy.begin_rollout(self.state)
        start_state = policy.state_to_numpy(state) if self.memory is not None else ()
        observations = []
        action_shape, action_type = action_layout(spec)
        actions = np.zeros((steps, batch, *action_shape), dtype=action_type)
        heads = np.zeros((steps, batch, spec.num_actions), dtype=np.float32)
        values, rewards, dones, truncated, final_values = (np.zeros((steps, batch), dtype=np.float32)
                                                           for _ in range(5))
        final_obs = np.zeros((steps, *envs.obs.shape), dtype=envs.obs.dtype) if self.memory is not None else None
        valid = np.ones((steps, batch), dtype=bool)
        restarted = np.zeros((steps, batch), dtype=bool)
        masks = None if envs.action_mask is None else np.zeros((steps, *envs.action_mask.shape), dtype=bool)
        finished_returns, finished_lengths = [], []
        for t in range(steps):
            observations.append(envs.obs)
            heads[t], values[t], state = policy.act(envs.obs, state)
            if masks is not None:  # the loss and the replay score the policy that acted: the masked one
                masks[t] = envs.action_mask
                heads[t] = mask_logits(heads[t], masks[t])
            actions[t] = self.distribution.sample(heads[t], policy.log_std, self.rng)
            result = envs.step(actions[t])
            rewards[t] = ((np.sign(result.rewards) if config.clip_rewards else result.rewards)
                          * config.reward_scale)
            ended = result.terminated | result.truncated
            dones[t] = ended
            valid[t] = result.valid
            if result.truncated.any():
                truncated[t] = result.truncated
                final_values[t] = policy.act(result.final_obs, state, record=False)[1]
                if final_obs is not None:
                    final_obs[t] = result.final_obs
            restarted[t] = ended | ~result.valid  # a new episode starts next step, from a fresh state
            state = policy.restart(state, restarted[t])
            finished_returns += result.finished_returns
            finished_lengths += result.finished_lengths
        bootstrap = policy.act(envs.obs, state, record=False)[1]
        self.state = state
        observations = np.stack(observations)
        if self.model.obs_norm is not None:  # once per rollout: less time and fewer Hogwild races than per step
            self.model.obs_norm.update(torch.from_numpy(observations.reshape(-1, *spec.obs_shape)))
        rollout_seconds = time.perf_counter() - started

        offset = value_offset(self.model.value_stats)
        values, final_values, bootstrap = (offset + v for v in (values, final_values, bootstrap))
        folded = fold_truncation_bootstrap(rewards, truncated, final_values, config.gamma)
        advantages = gae_advantages(folded, values, dones, bootstrap, config.gamma, config.gae_lambda)
        log_probs, entropies = self.distribution.log_prob_entropy(heads, policy.log_std, actions)
        loss, d_loss = a3c_loss(log_probs, entropies, advantages, config.value_loss_coef, config.entropy_coef,
                                None if valid.all() else valid)
        grad_norm = self.backpropagate(heads, actions, d_loss, restarted)
        if self.model.value_stats is not None:  # the value targets of new experience (replays add none)
            targets = (advantages + values)[valid]
            if np.isfinite(targets).all():  # a NaN reward's are left out, as the worker drops its gradient
                self.model.value_stats.update(torch.from_numpy(targets))
        if self.memory is not None:
            self.memory.add(Rollout(observations, actions, log_probs, rewards, dones, truncated, final_obs, valid,
                                    restarted, start_state, envs.obs.copy(), masks))
        report = RolloutReport(int(valid.sum()), finished_returns, finished_lengths, loss.policy, loss.value,
                               loss.entropy, grad_norm, rollout_seconds, time.perf_counter() - started - rollout_seconds)
        return self.flat_grad, report

    def replays_due(self) -> int:
        """How many replayed updates follow the on-policy one: Poisson(--replay-ratio), as in ACER."""
        if self.memory is None or not len(self.memory):
            return 0
        return int(self.replay_rng.poisson(self.config.replay_ratio))

    def replay_gradient(self) -> tuple[torch.Tensor, RolloutReport]:
        """The gradient of a stored rollout under the current weights (and new noise), corrected by V-trace.

        The network re-runs the rollout from the recurrent state it started with; the
        ratios of the current policy to the behaviour policy that acted truncate the
        value targets and the policy gradient, and the rollout's importance-sampling
        weight (prioritised replay) scales its loss. Its new priority: the mean absolute
        value error.
        """
        started = time.perf_counter()
        config, policy = self.config, self.policy
        handle, rollout, is_weight = self.memory.sample()
        self.model.resample_noise()
        state = policy.begin_rollout(policy.state_from_numpy(rollout.start_state))
        heads = np.zeros((*rollout.rewards.shape, self.envs.spec.num_actions), dtype=np.float32)
        values, final_values = np.zeros_like(rollout.rewards), np.zeros_like(rollout.rewards)
        for t, obs in enumerate(rollout.observations):
            heads[t], values[t], state = policy.act(obs, state)
            if rollout.action_masks is not None:
                heads[t] = mask_logits(heads[t], rollout.action_masks[t])
            if rollout.truncated[t].any():
                final_values[t] = policy.act(rollout.final_obs[t], state, record=False)[1]
            state = policy.restart(state, rollout.restarted[t])
        bootstrap = policy.act(rollout.next_obs, state, record=False)[1]
        offset = value_offset(self.model.value_stats)
        values, final_values, bootstrap = (offset + v for v in (values, final_values, bootstrap))

        log_probs, entropies = self.distribution.log_prob_entropy(heads, policy.log_std, rollout.actions)
        log_rhos = np.where(rollout.valid, log_probs - rollout.behaviour_log_probs, 0.0).astype(np.float32)
        rewards = fold_truncation_bootstrap(rollout.rewards, rollout.truncated, final_values, config.gamma)
        targets, advantages = vtrace(log_rhos, rewards, rollout.dones, values, bootstrap, config.gamma,
                                     config.gae_lambda, config.rho_bar, config.c_bar)
        value_errors = targets - values
        weights = loss_weights(values.shape, None if rollout.valid.all() else rollout.valid, is_weight)
        loss, d_loss = actor_critic_loss(log_probs, entropies, advantages, value_errors, config.value_loss_coef,
                                         config.entropy_coef, weights)
        grad_norm = self.backpropagate(heads, rollout.actions, d_loss, rollout.restarted)
        self.memory.update_priority(handle, float(np.abs(value_errors[rollout.valid]).mean()))
        report = RolloutReport(0, [], [], loss.policy, loss.value, loss.entropy, grad_norm,
                               update_seconds=time.perf_counter() - started, replayed=True)
        return self.flat_grad, report

    def backpropagate(self, heads: np.ndarray, actions: np.ndarray, d_loss: LossGradient,
                      restarted: np.ndarray) -> float:
        """The loss's gradient into the flat gradient, through the distribution and the network; clipped.
        Returns the norm before clipping."""
        d_heads, d_log_std = self.distribution.backward(heads, self.policy.log_std, actions, d_loss.log_probs,
                                                        d_loss.entropies)
        self.flat_grad.zero_()  # the gradient of this rollout only (docs/design/facts.md, fact 1)
        self.policy.backward(d_heads, d_loss.values, d_log_std, restarted)
        return clip_norm_(self.flat_grad, self.config.max_grad_norm).item()


def action_layout(spec) -> tuple[tuple[int, ...], type]:
    """The shape of one env's action in a rollout, and its dtype: a Box's vector, a part per multi-part
    action, a scalar index for a Discrete space."""
    if spec.continuous:
        return (spec.num_actions,), np.float32
    return (() if spec.action_parts is None else (len(spec.action_parts),)), np.int64


def value_offset(value_stats: Optional[RunningNorm]) -> float:
    """What the value head's output lacks of a return: the running mean of the value targets with
    --center-values, read once an update (the other workers update it meanwhile); else 0."""
    return 0.0 if value_stats is None else value_stats.mean.item()
