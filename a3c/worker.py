"""The actor-learner of one worker process: play a rollout, compute the gradient, hand it off."""

from __future__ import annotations

import math
import os
import signal
import traceback
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import torch

from .config import Config
from .counter import StepCounter
from .envs import EnvSpec, make_env_batch
from .flat import attach_flat_gradient, clip_norm_, flatten_parameters
from .model import ActorCritic, RunningNorm
from .optim import SharedOptimizer, linear_decay
from .policy import distribution
from .returns import a3c_loss, fold_truncation_bootstrap, gae_advantages
from .turns import Turns


MAX_RESTART_STEPS_TO_REPLAY = 2  # see ActorLearner.replay_pays


@dataclass
class RolloutReport:
    """What one update tells the metrics writer: plain numbers only (DESIGN.md fact 5)."""

    env_steps: int
    finished_returns: list
    finished_lengths: list
    policy_loss: float
    value_loss: float
    entropy: float
    grad_norm: float
    applied: bool = True  # False where a non-finite gradient was dropped


def env_seeds(config: Config, rank: int, incarnation: int = 0) -> list[int]:
    """Worker `rank` seeds its first env with seed + rank; the others follow, never colliding."""
    first = config.seed + rank + incarnation * config.num_processes * config.envs_per_process
    return [first + k * config.num_processes for k in range(config.envs_per_process)]


def build_model(config: Config, spec: EnvSpec) -> ActorCritic:
    return ActorCritic(spec.obs_shape, spec.num_actions, config.hidden_size, config.noise, config.sigma_init,
                       spec.continuous, config.normalize_obs)


class ActorLearner:
    """A local model and K environments; each call plays t_max steps and returns a gradient.

    Knows nothing of processes or shared memory, so any transport can drive it.
    """

    def __init__(self, config: Config, seeds: list[int], obs_norm: Optional[RunningNorm] = None):
        """`obs_norm`: the shared model's observation statistics, updated and read in place."""
        self.config = config
        self.envs = make_env_batch(config.env, seeds)
        spec = self.envs.spec
        self.model = build_model(config, spec)
        if obs_norm is not None:
            self.model.obs_norm = obs_norm
        self.policy = distribution(spec)
        self.flat_params = flatten_parameters(self.model)
        self.flat_grad = attach_flat_gradient(self.model)
        self.state = self.model.initial_state(len(self.envs))
        self.rng = np.random.default_rng(seeds[0])
        self.replay = True  # see compute_gradient

    @staticmethod
    def replay_pays(restart: np.ndarray) -> bool:
        """Replaying a rollout costs a second forward pass; its fused LSTM repays that only over long
        stretches without restarts. Measured on CartPole early in training (episodes of about 20
        steps), ms an update replaying / recording: 1 env 4.0 / 4.7, 8 envs 7.1 / 6.1, 32 envs
        8.8 / 7.7; deciding by the last rollout, as here, got the better of the two each time."""
        return np.count_nonzero(restart[:-1].any(axis=1)) <= MAX_RESTART_STEPS_TO_REPLAY

    @torch.no_grad()
    def load_weights(self, flat_weights: torch.Tensor) -> None:
        self.flat_params.copy_(flat_weights)

    def compute_gradient(self) -> tuple[torch.Tensor, RolloutReport]:
        """Play t_max steps in every env, then backpropagate the A3C loss once.

        Where the last rollout's episodes ran long (self.replay), the actor runs
        without autograd and the network then replays the rollout with autograd in
        one unroll(), which costs far less than recording the graph step by step;
        where they were short, the graph is recorded while acting. Either way the
        heads run once over all the hidden states. Both ways give the same gradient.
        Returns the flat gradient (a buffer this learner reuses on its next call).
        """
        config, model, envs, spec = self.config, self.model, self.envs, self.envs.spec
        steps, batch = config.t_max, len(envs)
        model.resample_noise()  # fixed for the whole rollout (DESIGN.md fact 6)
        start_state = hx, cx = self.state
        replay = self.replay
        inputs, hiddens = [], []  # what the encoder read (replayed by unroll()), or the recorded hidden states
        action_shape, action_type = ((spec.num_actions,), np.float32) if spec.continuous else ((), np.int64)
        actions = np.zeros((steps, batch, *action_shape), dtype=action_type)
        rewards = np.zeros((steps, batch), dtype=np.float32)
        dones = np.zeros((steps, batch), dtype=np.float32)
        truncated = np.zeros((steps, batch), dtype=np.float32)
        final_values = np.zeros((steps, batch), dtype=np.float32)
        valid = np.ones((steps, batch), dtype=bool)
        restart = np.zeros((steps, batch), dtype=bool)
        finished_returns, finished_lengths = [], []
        with torch.set_grad_enabled(not replay):
            for t in range(steps):
                obs = torch.from_numpy(envs.obs)  # env batches return a new array every step
                if model.obs_norm is not None:
                    model.obs_norm.update(obs)
                inputs.append(model.normalize(obs))
                hx, cx = model.step(inputs[-1], (hx, cx))
                hiddens.append(hx)
                with torch.no_grad():
                    actions[t] = self.policy.sample(model.policy(hx), model.log_std, self.rng)
                result = envs.step(actions[t])
                rewards[t] = ((np.sign(result.rewards) if config.clip_rewards else result.rewards)
                              * config.reward_scale)
                ended = result.terminated | result.truncated
                dones[t] = ended
                valid[t] = result.valid
                if result.truncated.any():
                    truncated[t] = result.truncated
                    final_values[t] = self.value_of(result.final_obs, (hx, cx))
                restart[t] = ended | ~result.valid  # a new episode starts next step, from a fresh LSTM state
                if restart[t].any():
                    keep = torch.from_numpy(~restart[t]).unsqueeze(1).float()
                    hx, cx = hx * keep, cx * keep
                finished_returns += result.finished_returns
                finished_lengths += result.finished_lengths
            bootstrap = torch.from_numpy(self.value_of(envs.obs, (hx, cx)))
        self.state = (hx.detach(), cx.detach())
        self.replay = self.replay_pays(restart)

        hiddens = model.unroll(torch.stack(inputs), start_state, restart) if replay else torch.stack(hiddens)
        policy_out, values = model.heads(hiddens)
        log_probs, entropies = self.policy.log_prob_entropy(policy_out, model.log_std, actions)
        rewards_t = fold_truncation_bootstrap(torch.from_numpy(rewards), torch.from_numpy(truncated),
                                              torch.from_numpy(final_values), config.gamma)
        advantages = gae_advantages(rewards_t, values.detach(), torch.from_numpy(dones), bootstrap,
                                    config.gamma, config.gae_lambda)
        mask = None if valid.all() else torch.from_numpy(valid).float()
        loss = a3c_loss(log_probs, entropies, values, advantages, config.value_loss_coef, config.entropy_coef,
                        mask)
        self.flat_grad.zero_()  # the gradient of this rollout only (DESIGN.md fact 1)
        loss.total.backward()
        grad_norm = clip_norm_(self.flat_grad, config.max_grad_norm)
        report = RolloutReport(int(valid.sum()), finished_returns, finished_lengths, loss.policy.item(),
                               loss.value.item(), loss.entropy.item(), grad_norm.item())
        return self.flat_grad, report

    @torch.no_grad()
    def value_of(self, obs: np.ndarray, state) -> np.ndarray:
        hx, _ = self.model.core(torch.from_numpy(obs), state)
        return self.model.heads(hx)[1].numpy()


@dataclass
class Shared:
    """What every process of a run shares: handed over once, when the process starts."""

    model: ActorCritic  # parameters are views of optimizer.params[0], in shared memory
    optimizer: SharedOptimizer
    env_steps: StepCounter
    stop: Any  # multiprocessing Event
    turns: Optional[Turns] = None  # None: every worker acts at once


def seed_worker_torch(config: Config, rank: int, incarnation: int) -> None:
    """The noise draws of worker `rank`: its own, and new ones after each restart."""
    torch.manual_seed(config.seed + rank + incarnation * config.num_processes)


def become_child_process() -> None:
    """Settings every worker and evaluator process needs first."""
    torch.set_num_threads(1)  # DESIGN.md fact 3: more threads deadlock or crawl
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group; the trainer decides
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def parent_is_gone(parent_pid: int) -> bool:
    """An orphan (its trainer was SIGKILLed) must not train on forever."""
    return os.getppid() != parent_pid


def apply_gradient(optimizer: SharedOptimizer, grad: torch.Tensor, lr: float, grad_norm: float) -> bool:
    """Step the shared optimizer unless the gradient is NaN or infinite, which would poison the weights."""
    if not math.isfinite(grad_norm):
        return False
    optimizer.step([grad], lr=lr)
    return True


def run_worker(config: Config, shared: Shared, messages, parent_pid: int, rank: int, incarnation: int) -> None:
    """Process entry point: Hogwild updates of the shared model until told to stop.

    `incarnation` counts restarts of this rank, so a restarted worker plays new episodes.
    `messages` is this process's own pipe to the trainer (no lock shared with
    other processes, so a killed worker cannot block the others).
    """
    become_child_process()
    seed_worker_torch(config, rank, incarnation)
    try:
        learner = ActorLearner(config, env_seeds(config, rank, incarnation), shared.model.obs_norm)
        weights = shared.optimizer.params[0]
        turn = shared.turns.turn if shared.turns is not None else lambda rank: nullcontext()
        while not shared.stop.is_set() and not parent_is_gone(parent_pid):
            with turn(rank):
                learner.load_weights(weights)
                grad, report = learner.compute_gradient()
                report.applied = apply_gradient(shared.optimizer, grad,
                                                current_lr(config, shared.env_steps.total()), report.grad_norm)
            shared.env_steps.add(rank, report.env_steps)
            messages.send(("update", rank, report))
            if shared.env_steps.total() >= config.max_steps:
                shared.stop.set()
    except Exception:
        messages.send(("error", f"worker {rank}", traceback.format_exc()))
        raise SystemExit(1)


def current_lr(config: Config, env_steps: int) -> float:
    return linear_decay(config.lr, env_steps, config.max_steps) if config.lr_decay else config.lr
