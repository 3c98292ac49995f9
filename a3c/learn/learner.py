"""The algorithm of one worker: play a rollout in K environments, compute the A3C loss and its gradient;
with --replay-ratio, also replay stored rollouts under the V-trace correction (ACER-style)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import NamedTuple, Optional

import numpy as np
import torch

from a3c.config.settings import Config, for_spaces
from a3c.envs.batch import StepResult, make_env_batch
from a3c.learn.distributions import Categorical, distribution, mask_logits, noise_effects
from a3c.learn.noise_scale import adapted_noise_scale
from a3c.learn.novelty import NoveltyBonus, arrivals, per_value
from a3c.learn.policies import make_policy
from a3c.learn.replay import ReplayMemory, Rollout
from a3c.learn.return_scale import ReturnScale
from a3c.learn.returns import (
    Loss,
    LossGradient,
    a3c_loss,
    actor_critic_loss,
    fold_truncation_bootstrap,
    gae_advantages,
    loss_weights,
    vtrace,
)
from a3c.learn.seeding import WorkerSeeds
from a3c.nets.actor_critic import NoisyLinear, RunningNorm
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
    # what the rollout's NoisyNet draw did to the policy (distributions.noise_effects); NaN where not measured
    noise_kl: float = math.nan
    noise_flips: float = math.nan
    noise_consistency: float = math.nan
    noise_share: float = math.nan
    noise_scale: float = math.nan  # what the draw's epsilon was multiplied by (--noise-kl-target adapts it)
    novelty: float = math.nan  # --novelty-coef: the novelty's networks' mean error on where the rollout went


class NetOutputs(NamedTuple):
    """What the network gave along a rollout of T steps in B envs, before value_offset: the heads [T, B, n]
    (masked where the env masks actions: the loss and the replay score the policy that acted), the values
    [T, B], the values of the final observations where an episode was truncated [T, B] (0 elsewhere) and
    the bootstrap values of the observations after the last step [B]; each value [..., 2] where the network
    has the novelty bonus's beside the env's return's (--novelty-value episodic or non-episodic)."""

    heads: np.ndarray
    values: np.ndarray
    final_values: np.ndarray
    bootstrap: Optional[np.ndarray]  # None while the steps are being filled in


class Estimates(NamedTuple):
    """What both losses read of a rollout under the network: log pi(a|s) of the actions taken and the
    entropies [T, B]; the values [T, B] and the bootstrap [B] as returns (value_offset added); the rewards
    with each truncated episode's final value folded in. With the bonus's value of its own, values, bootstrap
    and rewards are [..., 2]: the env's return's, then the bonus's."""

    log_probs: np.ndarray
    entropies: np.ndarray
    values: np.ndarray
    rewards: np.ndarray
    bootstrap: np.ndarray


@dataclass
class PlayedRollout:
    """A new rollout: its steps as the replay memory stores them (the behaviour log-probs, which the loss
    computes, still None), what the network gave along them, and the episodes that finished."""

    steps: Rollout
    outputs: NetOutputs
    finished_returns: list
    finished_lengths: list


class ActorLearner:
    """A local network and K environments; each call returns a gradient: of a new rollout of t_max
    steps, or of a stored one replayed with the current weights.

    Knows nothing of processes or shared memory, so any transport can drive it.
    """

    def __init__(self, config: Config, seeds: WorkerSeeds, shared_statistics: Optional[dict[str, RunningNorm]] = None):
        """`shared_statistics`: the shared model's `statistics()`, updated and read in place."""
        self.envs = make_env_batch(config.env, seeds.envs, seeds.vector_env)
        spec = self.envs.spec
        self.config = config = for_spaces(config, spec)
        self.model = build_model(config, spec)
        for name, norm in (shared_statistics or {}).items():
            setattr(self.model, name, norm)
        self.distribution = distribution(spec, config.std_limit == "range")
        self.flat_params = flatten_parameters(self.model)
        self.flat_grad = attach_flat_gradient(self.model)
        self.policy = make_policy(self.model, config.learner)
        self.state = self.policy.initial_state(len(self.envs))
        self.rng = np.random.default_rng(seeds.actions)
        self.replay_rng = np.random.default_rng(seeds.replay)
        self.memory = (
            ReplayMemory(config.replay_capacity, config.replay_priority, rng=self.replay_rng)
            if config.replay_ratio > 0
            else None
        )
        self.replays_pending = 0  # replayed updates due before the next new rollout
        # NoisyNet's draw an env (held for a rollout, or until the env's episode ends), or one for all
        self.noise_rows = None if config.noise_draw == "worker" else len(self.envs)
        self.episode_ended = torch.ones(len(self.envs), dtype=torch.bool)  # the envs a held draw is due for
        self.noise_scale = 1.0  # the next draws' epsilon times this; --noise-kl-target adapts it
        self.novelty = (
            None
            if self.model.novelty is None
            else NoveltyBonus(config.novelty_coef, config.novelty_scale, config.gamma)
        )
        stats = self.model.return_stats
        self.return_scale = None if stats is None else ReturnScale(len(self.envs), config.gamma, stats)

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
        """Play t_max steps in every env, then backpropagate the A3C loss (GAE / n-step returns) once.

        The weights and the noise are those the policy acted with, so the gradient is
        exactly on-policy. Stores the rollout for replay when replay is on. Returns the
        flat gradient (a buffer this learner reuses on its next call).
        """
        started = time.perf_counter()
        played = self.play_rollout()
        update_started = time.perf_counter()
        config, steps = self.config, played.steps
        bonus, novelty = self.novelty_bonus(steps)
        estimates = self.estimates(steps, played.outputs, bonus)
        dones = steps.dones if bonus is None else per_value(steps.dones, config.novelty_value)
        advantages = gae_advantages(
            estimates.rewards, estimates.values, dones, estimates.bootstrap, config.gamma, config.gae_lambda
        )
        loss = a3c_loss(
            estimates.log_probs,
            estimates.entropies,
            advantages,
            config.value_loss_coef,
            config.entropy_coef,
            None if steps.valid.all() else steps.valid,
        )
        self.track_value_targets(advantages + estimates.values, steps.valid)
        if self.memory is not None:  # its buffers as they are (each rollout has new ones); next_obs is the envs' own
            self.memory.add(steps._replace(behaviour_log_probs=estimates.log_probs, next_obs=steps.next_obs.copy()))
        return self.gradient_of(
            played.outputs.heads,
            steps,
            loss,
            update_started,
            **self.measured_noise(played.outputs.heads, steps),
            env_steps=int(steps.valid.sum()),
            finished_returns=played.finished_returns,
            finished_lengths=played.finished_lengths,
            rollout_seconds=update_started - started,
            novelty=novelty,
        )

    def novelty_bonus(self, steps: Rollout) -> tuple[Optional[np.ndarray], float]:
        """With --novelty-coef, the novelty bonus of the rollout's steps and the mean error it came from (NaN
        without). With --novelty-value shared the bonus joins the rollout's rewards (a replay reuses it) and
        None is returned; else it is returned [T, B], for the value of its own."""
        if self.novelty is None:
            return None, math.nan
        arrived = arrivals(steps.observations, steps.next_obs)
        bonus, error = self.novelty.of(self.model, arrived, steps.restarted, steps.valid)
        if self.config.novelty_value != "shared":
            return bonus, error
        steps.rewards[...] += bonus
        return None, error

    def measured_noise(self, heads: np.ndarray, steps: Rollout) -> dict[str, float]:
        """What the rollout's draws did to the policy and the scale they were drawn at; with --noise-kl-target,
        the next draws' scale adapted to what these did (a3c/learn/noise_scale.py)."""
        effects = self.noise_effects(heads, steps)
        if not effects:
            return {}
        scale, target = self.noise_scale, self.config.noise_kl_target
        if target:
            self.noise_scale = adapted_noise_scale(scale, effects["noise_kl"], target)
        return {**effects, "noise_scale": scale}

    def noise_effects(self, heads: np.ndarray, steps: Rollout) -> dict[str, float]:
        """What this rollout's noise draws did to the softmax policy it acted with, over its valid steps;
        nothing where it is not measured: no noisy policy head, another distribution, or the torch learner."""
        mean_heads = self.policy.mean_heads() if isinstance(self.distribution, Categorical) else None
        if mean_heads is None:
            return {}
        if steps.action_masks is not None:
            mean_heads = mask_logits(mean_heads, steps.action_masks)
        if self.noise_rows is None:  # one draw over all the rollout's steps
            return noise_effects(mean_heads[steps.valid][None], heads[steps.valid][None])
        # a draw an env: each env's steps are one draw's
        return noise_effects(mean_heads.swapaxes(0, 1), heads.swapaxes(0, 1), steps.valid.T)

    def replays_due(self) -> int:
        """How many replayed updates follow the on-policy one: Poisson(--replay-ratio), as in ACER."""
        if self.memory is None or not len(self.memory):
            return 0
        return int(self.replay_rng.poisson(self.config.replay_ratio))

    def replay_gradient(self) -> tuple[torch.Tensor, RolloutReport]:
        """The gradient of a stored rollout under the current weights (and new noise), corrected by V-trace.

        The ratios of the current policy to the behaviour policy that acted truncate the
        value targets and the policy gradient, and the rollout's importance-sampling
        weight (prioritised replay) scales its loss. Its new priority: the mean absolute
        value error.
        """
        started = time.perf_counter()
        config = self.config
        handle, rollout, is_weight = self.memory.sample()
        outputs = self.replay_outputs(rollout)
        estimates = self.estimates(rollout, outputs)
        log_rhos = np.where(rollout.valid, estimates.log_probs - rollout.behaviour_log_probs, 0.0).astype(np.float32)
        targets, advantages = vtrace(
            log_rhos,
            estimates.rewards,
            rollout.dones,
            estimates.values,
            estimates.bootstrap,
            config.gamma,
            config.gae_lambda,
            config.rho_bar,
            config.c_bar,
        )
        value_errors = targets - estimates.values
        weights = loss_weights(estimates.values.shape, None if rollout.valid.all() else rollout.valid, is_weight)
        loss = actor_critic_loss(
            estimates.log_probs,
            estimates.entropies,
            advantages,
            value_errors,
            config.value_loss_coef,
            config.entropy_coef,
            weights,
        )
        self.memory.update_priority(handle, float(np.abs(value_errors[rollout.valid]).mean()))
        return self.gradient_of(
            outputs.heads, rollout, loss, started, env_steps=0, finished_returns=[], finished_lengths=[], replayed=True
        )

    def play_rollout(self) -> PlayedRollout:
        """Play t_max steps in every env from where the last rollout left them, with the current weights and a
        new noise draw, fixed for the whole rollout (docs/design/facts.md, fact 6); with --noise-draw episode,
        a new draw only for the envs whose episode ended since theirs."""
        policy, envs, replayable = self.policy, self.envs, self.memory is not None
        self.draw_noise(only=self.episode_ended if self.config.noise_draw == "episode" else None)
        state = policy.begin_rollout(self.state)
        start_state = policy.state_to_numpy(state) if replayable else ()
        steps = zero_steps(self.config.t_max, envs, replayable)
        outputs = zero_outputs(steps.rewards.shape, envs.spec.num_actions, self.model.value_heads)
        observations, finished_returns, finished_lengths = [], [], []
        for t in range(self.config.t_max):
            observations.append(envs.obs)
            state, result = self.play_step(t, state, steps, outputs)
            finished_returns += result.finished_returns
            finished_lengths += result.finished_lengths
        outputs = outputs._replace(bootstrap=self.value_of(envs.obs, state))
        self.state = state
        observations = np.stack(observations)
        if self.model.obs_norm is not None:  # once per rollout: less time and fewer Hogwild races than per step
            self.model.obs_norm.update(torch.from_numpy(observations.reshape(-1, *envs.spec.obs_shape)))
        if self.return_scale is not None:
            self.return_scale.end_rollout()
        steps = steps._replace(observations=observations, start_state=start_state, next_obs=envs.obs)
        self.episode_ended = torch.from_numpy(steps.restarted.any(axis=0))
        return PlayedRollout(steps, outputs, finished_returns, finished_lengths)

    def draw_noise(self, only: Optional[torch.Tensor] = None) -> None:
        """NoisyNet's new draw: one for all envs (the plain call a user's network may define too), or one an
        env, for the envs of `only` alone where given."""
        for module in self.model.modules():
            if isinstance(module, NoisyLinear):
                module.noise_scale = self.noise_scale
        if self.noise_rows is None:
            self.model.resample_noise()
        else:
            self.model.resample_noise(rows=self.noise_rows, only=only)

    def play_step(self, t: int, state, steps: Rollout, outputs: NetOutputs) -> tuple[object, StepResult]:
        """Act in every env at step t of a rollout and step them, filling in row t of `steps` and `outputs`.
        Returns the recurrent state for step t + 1 and the envs' StepResult."""
        envs, config = self.envs, self.config
        if steps.action_masks is not None:
            steps.action_masks[t] = envs.action_mask
        outputs.heads[t], outputs.values[t], state = self.act(envs.obs, state, row(steps.action_masks, t))
        steps.actions[t] = self.distribution.sample(outputs.heads[t], self.policy.log_std, self.rng)
        result = envs.step(steps.actions[t])
        rewards = np.sign(result.rewards) if config.clip_rewards else result.rewards
        ended = result.terminated | result.truncated
        if self.return_scale is not None:
            rewards = self.return_scale(rewards, ended | ~result.valid)
        steps.rewards[t] = rewards * config.reward_scale
        steps.dones[t], steps.valid[t] = ended, result.valid
        if result.truncated.any():
            steps.truncated[t] = result.truncated
            outputs.final_values[t] = self.value_of(result.final_obs, state)
            if steps.final_obs is not None:
                steps.final_obs[t] = result.final_obs
        steps.restarted[t] = ended | ~result.valid  # a new episode starts next step, from a fresh state
        return self.policy.restart(state, steps.restarted[t]), result

    def replay_outputs(self, rollout: Rollout) -> NetOutputs:
        """The network, with the current weights and new noise, re-run over a stored rollout's observations from
        the recurrent state the rollout began with, restarting where it restarted."""
        policy = self.policy
        if self.config.noise_draw != "episode":  # draws held for episodes stay for the acting's next rollout
            self.draw_noise()
        state = policy.begin_rollout(policy.state_from_numpy(rollout.start_state))
        outputs = zero_outputs(rollout.rewards.shape, self.envs.spec.num_actions, self.model.value_heads)
        for t, obs in enumerate(rollout.observations):
            outputs.heads[t], outputs.values[t], state = self.act(obs, state, row(rollout.action_masks, t))
            if rollout.truncated[t].any():
                outputs.final_values[t] = self.value_of(rollout.final_obs[t], state)
            state = policy.restart(state, rollout.restarted[t])
        return outputs._replace(bootstrap=self.value_of(rollout.next_obs, state))

    def act(self, obs: np.ndarray, state, mask: Optional[np.ndarray]):
        """One recorded step of the policy: its head (masked where `mask` is given), values and next state."""
        head, value, state = self.policy.act(obs, state)
        return (head if mask is None else mask_logits(head, mask)), value, state

    def value_of(self, obs: np.ndarray, state) -> np.ndarray:
        """The values of `obs` from `state`, outside the rollout's recorded steps: a bootstrap."""
        return self.policy.act(obs, state, record=False)[1]

    def estimates(self, steps: Rollout, outputs: NetOutputs, bonus: Optional[np.ndarray] = None) -> Estimates:
        """What the loss reads of a rollout's steps and the network's outputs along them; with `bonus` [T, B], the
        novelty bonus's rewards for its value of its own."""
        offset = value_offset(self.model.value_stats)
        rewards, truncated = steps.rewards, steps.truncated
        if bonus is not None:  # the env's return's value centred as it is, the bonus's not
            offset = np.array([offset, 0.0], dtype=np.float32)
            rewards = np.stack([rewards, bonus], axis=-1)
            truncated = per_value(truncated, self.config.novelty_value)
        values, final_values, bootstrap = (
            offset + outputs.values,
            offset + outputs.final_values,
            offset + outputs.bootstrap,
        )
        log_probs, entropies = self.distribution.log_prob_entropy(outputs.heads, self.policy.log_std, steps.actions)
        rewards = fold_truncation_bootstrap(rewards, truncated, final_values, self.config.gamma)
        return Estimates(log_probs, entropies, values, rewards, bootstrap)

    def track_value_targets(self, targets: np.ndarray, valid: np.ndarray) -> None:
        """With --center-values, the running statistics of the value targets (the env's return's, where the
        bonus has a value of its own), from new experience only (a replay's would count the same steps again)."""
        if self.model.value_stats is None:
            return
        targets = (targets if targets.ndim == valid.ndim else targets[..., 0])[valid]
        if np.isfinite(targets).all():  # a NaN reward's are left out, as the worker drops its gradient
            self.model.value_stats.update(torch.from_numpy(targets))

    def gradient_of(
        self, heads: np.ndarray, steps: Rollout, loss: tuple[Loss, LossGradient], since: float, **report
    ) -> tuple[torch.Tensor, RolloutReport]:
        """A rollout's loss backpropagated into the flat gradient, and the update's report: `report` holds
        its fields that depend on the kind of rollout, `since` is when the update began."""
        loss, d_loss = loss
        grad_norm = self.backpropagate(heads, steps.actions, d_loss, steps.restarted, not report.get("replayed"))
        return self.flat_grad, RolloutReport(
            policy_loss=loss.policy,
            value_loss=loss.value,
            entropy=loss.entropy,
            grad_norm=grad_norm,
            update_seconds=time.perf_counter() - since,
            **report,
        )

    def backpropagate(
        self,
        heads: np.ndarray,
        actions: np.ndarray,
        d_loss: LossGradient,
        restarted: np.ndarray,
        new_rollout: bool = True,
    ) -> float:
        """The loss's gradient into the flat gradient, through the distribution and the network, and with a
        `new_rollout` the novelty predictor's on what it reached (a replay's would count its visits twice);
        clipped. Returns the norm before clipping."""
        d_heads, d_log_std = self.distribution.backward(
            heads, self.policy.log_std, actions, d_loss.log_probs, d_loss.entropies
        )
        self.flat_grad.zero_()  # the gradient of this rollout only (docs/design/facts.md, fact 1)
        self.policy.backward(d_heads, d_loss.values, d_log_std, restarted)
        if new_rollout and self.novelty is not None:
            self.novelty.backward()
        return clip_norm_(self.flat_grad, self.config.max_grad_norm).item()


def zero_steps(steps: int, envs, replayable: bool) -> Rollout:
    """Zeroed buffers for a new rollout of `steps` steps in `envs`, filled in step by step (every step valid
    until an env says otherwise); the observations and what only the loss knows come after. The final
    observations are kept for a replay only."""
    batch, spec = len(envs), envs.spec
    action_shape, action_type = action_layout(spec)
    rewards, dones, truncated = (np.zeros((steps, batch), dtype=np.float32) for _ in range(3))
    return Rollout(
        observations=None,
        actions=np.zeros((steps, batch, *action_shape), dtype=action_type),
        behaviour_log_probs=None,
        rewards=rewards,
        dones=dones,
        truncated=truncated,
        final_obs=np.zeros((steps, *envs.obs.shape), dtype=envs.obs.dtype) if replayable else None,
        valid=np.ones((steps, batch), dtype=bool),
        restarted=np.zeros((steps, batch), dtype=bool),
        start_state=(),
        next_obs=None,
        action_masks=None if envs.action_mask is None else np.zeros((steps, *envs.action_mask.shape), dtype=bool),
    )


def zero_outputs(shape: tuple[int, int], num_actions: int, value_heads: int = 1) -> NetOutputs:
    """Zeroed buffers for what the network gives along a rollout of `shape` = (T, B) steps, of a network with
    `value_heads` values; the bootstrap comes after the last step."""
    values = shape if value_heads == 1 else (*shape, value_heads)
    return NetOutputs(
        np.zeros((*shape, num_actions), dtype=np.float32),
        np.zeros(values, dtype=np.float32),
        np.zeros(values, dtype=np.float32),
        None,
    )


def row(array: Optional[np.ndarray], t: int) -> Optional[np.ndarray]:
    """Row t of an optional per-step array (the action masks of an env that has them)."""
    return None if array is None else array[t]


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
