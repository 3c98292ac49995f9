"""The algorithm of one worker: play a rollout in K environments, compute the A3C loss and its gradient."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from .config import Config
from .distributions import distribution
from .envs import make_env_batch
from .flat import attach_flat_gradient, clip_norm_, flatten_parameters
from .model import RunningNorm, build_model
from .optim import linear_decay
from .policies import make_policy
from .returns import a3c_loss, fold_truncation_bootstrap, gae_advantages
from .seeding import WorkerSeeds


@dataclass
class RolloutReport:
    """What one update tells the metrics writer: plain numbers only (docs/design.md, fact 5)."""

    env_steps: int
    finished_returns: list
    finished_lengths: list
    policy_loss: float
    value_loss: float
    entropy: float
    grad_norm: float
    applied: bool = True  # False where a non-finite gradient was dropped


class ActorLearner:
    """A local network and K environments; each call plays t_max steps and returns a gradient.

    Knows nothing of processes or shared memory, so any transport can drive it.
    """

    def __init__(self, config: Config, seeds: WorkerSeeds, obs_norm: Optional[RunningNorm] = None):
        """`obs_norm`: the shared model's observation statistics, updated and read in place."""
        self.config = config
        self.envs = make_env_batch(config.env, seeds.envs, seeds.vector_env)
        spec = self.envs.spec
        self.model = build_model(config, spec)
        if obs_norm is not None:
            self.model.obs_norm = obs_norm
        self.distribution = distribution(spec)
        self.flat_params = flatten_parameters(self.model)
        self.flat_grad = attach_flat_gradient(self.model)
        self.policy = make_policy(self.model, config.learner)
        self.state = self.policy.initial_state(len(self.envs))
        self.rng = np.random.default_rng(seeds.actions)

    @torch.no_grad()
    def load_weights(self, flat_weights: torch.Tensor) -> None:
        self.flat_params.copy_(flat_weights)

    def compute_gradient(self) -> tuple[torch.Tensor, RolloutReport]:
        """Play t_max steps in every env, then backpropagate the A3C loss once.

        The weights and the noise are those the policy acted with, so the gradient is
        exactly on-policy. Returns the flat gradient (a buffer this learner reuses on
        its next call).
        """
        config, policy, envs, spec = self.config, self.policy, self.envs, self.envs.spec
        steps, batch = config.t_max, len(envs)
        self.model.resample_noise()  # fixed for the whole rollout (docs/design.md, fact 6)
        state = policy.begin_rollout(self.state)
        observations = []
        action_shape, action_type = ((spec.num_actions,), np.float32) if spec.continuous else ((), np.int64)
        actions = np.zeros((steps, batch, *action_shape), dtype=action_type)
        heads = np.zeros((steps, batch, spec.num_actions), dtype=np.float32)
        values, rewards, dones, truncated, final_values = (np.zeros((steps, batch), dtype=np.float32)
                                                           for _ in range(5))
        valid = np.ones((steps, batch), dtype=bool)
        restarted = np.zeros((steps, batch), dtype=bool)
        finished_returns, finished_lengths = [], []
        for t in range(steps):
            observations.append(envs.obs)
            heads[t], values[t], state = policy.act(envs.obs, state)
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
            restarted[t] = ended | ~result.valid  # a new episode starts next step, from a fresh state
            state = policy.restart(state, restarted[t])
            finished_returns += result.finished_returns
            finished_lengths += result.finished_lengths
        bootstrap = policy.act(envs.obs, state, record=False)[1]
        self.state = state
        if self.model.obs_norm is not None:  # once per rollout: less time and fewer Hogwild races than per step
            self.model.obs_norm.update(torch.from_numpy(np.concatenate(observations)))

        rewards = fold_truncation_bootstrap(rewards, truncated, final_values, config.gamma)
        advantages = gae_advantages(rewards, values, dones, bootstrap, config.gamma, config.gae_lambda)
        log_probs, entropies = self.distribution.log_prob_entropy(heads, policy.log_std, actions)
        loss, d_loss = a3c_loss(log_probs, entropies, advantages, config.value_loss_coef, config.entropy_coef,
                                None if valid.all() else valid)
        d_heads, d_log_std = self.distribution.backward(heads, policy.log_std, actions, d_loss.log_probs,
                                                        d_loss.entropies)
        self.flat_grad.zero_()  # the gradient of this rollout only (docs/design.md, fact 1)
        policy.backward(d_heads, d_loss.values, d_log_std, restarted)
        grad_norm = clip_norm_(self.flat_grad, config.max_grad_norm)
        report = RolloutReport(int(valid.sum()), finished_returns, finished_lengths, loss.policy, loss.value,
                               loss.entropy, grad_norm.item())
        return self.flat_grad, report


def current_lr(config: Config, env_steps: int) -> float:
    return linear_decay(config.lr, env_steps, config.max_steps) if config.lr_decay else config.lr
