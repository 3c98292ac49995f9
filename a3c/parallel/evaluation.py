"""Greedy, noise-free evaluation without processes: the episodes the `evaluate` command plays, and the
evaluator's rounds (judging a snapshot of the weights, keeping best.pt, filming). The evaluator process
(a3c/parallel/evaluator.py) is a thin shell around Evaluator, as the worker is around ActorLearner."""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import gymnasium as gym
import numpy as np
import torch

from a3c.agent import Agent
from a3c.config.settings import Config
from a3c.envs.batch import make_vector_env
from a3c.envs.masks import ACTION_MASK
from a3c.envs.progress import EpisodeProgress
from a3c.errors import CheckpointError
from a3c.learn.checkpoint import checkpoint_payload, load_checkpoint, save_checkpoint
from a3c.learn.seeding import confirmation_seed, evaluation_seed
from a3c.nets.actor_critic import Network
from a3c.nets.flat import flatten_parameters
from a3c.parallel.messages import Evaluation


def play_greedy_episodes(
    agent: Agent, envs: gym.vector.VectorEnv, seed: int, stop=None, on_step=lambda: None
) -> list[float]:
    """One episode in each env of `envs`, all stepped together with one forward pass per step.

    Greedy actions (argmax over the legal ones, or the Gaussian mean) from the mean weights; returns the
    undiscounted returns. An env that finished keeps being stepped (vector envs step
    all) but is no longer counted. A lost life restarts the recurrent state, as it does in training,
    where it ends an episode, and an episode stalled for IDLE_STEPS ends (a3c/envs/progress.py).
    Stops early, returning what finished, when `stop` is set.
    `on_step` is called before every step (the evaluator's heartbeat).
    """
    obs, info = envs.reset(seed=seed)
    state = agent.initial_state(envs.num_envs)
    returns = np.zeros(envs.num_envs)
    active = np.ones(envs.num_envs, dtype=bool)
    progress = EpisodeProgress(info, envs.num_envs)
    while active.any() and not (stop is not None and stop.is_set()):
        on_step()
        mask = info.get(ACTION_MASK)
        actions, state = agent.act(obs, state, episode_start=progress.new_life, action_mask=mask)
        obs, rewards, terminated, truncated, info = envs.step(actions)
        returns += rewards * active
        active &= ~(terminated | truncated | progress.step(rewards, info))
    return returns[~active].tolist()


# episodes played together at most: `evaluate --episodes 1000000` must not make a million envs; 100 plays a
# confirmation in one batch, faster than two (docs/design/choices.md, '"Solved" is confirmed on new episodes')
EVALUATION_BATCH = 100


def evaluate_agent(agent: Agent, episodes: int, seed: int, stop=None, on_step=lambda: None) -> list[float]:
    """`episodes` greedy returns, played EVALUATION_BATCH at a time; the batch starting at episode k
    resets with seed + k. Fewer when `stop` is set meanwhile (play_greedy_episodes)."""
    returns = []
    for start in range(0, episodes, EVALUATION_BATCH):
        envs, _ = make_vector_env(agent.config.env, min(EVALUATION_BATCH, episodes - start))
        try:
            returns += play_greedy_episodes(agent, envs, seed + start, stop, on_step)
        finally:
            envs.close()
        if stop is not None and stop.is_set():
            break
    return returns


@dataclass(frozen=True, order=True)
class Standing:
    """How a snapshot of the weights ranks for best.pt: a mean confirmed on --confirm-episodes new
    episodes beats any mean of one evaluation (the best of many noisy means is a lucky one), then
    the higher mean wins."""

    confirmed: bool
    mean: float


def reaches(mean: float, target) -> bool:
    return target is not None and mean >= target


CONFIDENCE_Z = 1.2816  # the one-sided 90% quantile of the normal distribution


def confirms(returns: list[float], target) -> bool:
    """The confirmation's mean return, less 1.28 standard errors, reaches the target: the policy's mean
    is at the target with 90% confidence. A policy whose mean is right at the target (Pendulum: episodes
    from 0 to -400) passes a bare 100-episode mean half the time, and a second 100 episodes half the time."""
    lower_bound = float(np.mean(returns)) - CONFIDENCE_Z * float(np.std(returns, ddof=1)) / math.sqrt(len(returns))
    return reaches(lower_bound, target)


def film(agent: Agent, config: Config, run_dir: Path, env_steps: int, round_: int) -> None:
    """One greedy episode (at most TRAINING_VIDEO_STEPS) into RUN_DIR/videos/<env steps>.mp4."""
    from a3c.tools.video import TRAINING_VIDEO_STEPS, record_episodes  # imageio: only when filming

    folder = run_dir / "videos"
    folder.mkdir(exist_ok=True)
    record_episodes(
        agent, config.env, 1, evaluation_seed(config, round_), folder / f"{env_steps:09d}.mp4", TRAINING_VIDEO_STEPS
    )


def saved_standing(best_path: Path) -> Standing | None:
    """best.pt's standing: an evaluator restarted mid-run must not overwrite a better best.pt."""
    try:
        payload = load_checkpoint(best_path) if best_path.exists() else {}
    except CheckpointError:
        return None
    mean = payload.get("eval_return")
    return None if mean is None else Standing(bool(payload.get("eval_confirmed", False)), mean)


@dataclass(frozen=True)
class Round:
    """What one evaluation round decided. `evaluations`: the evaluation's message, then its confirmation's
    if one was played. `complete` False: `stop` was set while the episodes played, and the round decided
    nothing more (an incomplete mean would mislead). `best_written`: best.pt now holds these weights."""

    evaluations: list[Evaluation]
    complete: bool = True
    best_written: bool = False

    @property
    def solved(self) -> bool:
        """The run is solved: the last message says so (a confirmation's, where one was played)."""
        return bool(self.evaluations) and self.evaluations[-1].solved


class Evaluator:
    """The evaluator's work, without the process around it: every round evaluates a snapshot of the weights
    on --eval-episodes greedy episodes; a mean at the target is confirmed on --confirm-episodes new episodes
    of the same weights, and only a confirmation whose mean is at the target with 90% confidence solves
    (`confirms`; with --confirm-episodes 0, the evaluation's own mean). Keeps best.pt and films.

    `model`: the model every round reads (its statistics, and its weights through the flat tensor they are
    views of), copied once: an episode must not see weights change under it. `stop` (an Event) cuts a round
    short, and is set when a round solves. `best_so_far`: the best evaluation mean of the run before this
    evaluator. `on_step`: called before every step of an episode (the evaluator process's heartbeat).
    """

    def __init__(
        self,
        config: Config,
        model: Network,
        run_dir: Path,
        stop,
        best_so_far: float | None = None,
        on_step: Callable[[], None] = lambda: None,
    ):
        self.config, self.source, self.run_dir, self.stop, self.on_step = config, model, run_dir, stop, on_step
        self.model = copy.deepcopy(model)
        self.weights = flatten_parameters(self.model)
        self.envs, spec = make_vector_env(config.env, config.eval_episodes)
        self.agent = Agent(self.model, spec, config.learner, config)
        self.best_path = run_dir / "checkpoints" / "best.pt"
        standings = [Standing(False, best_so_far) if best_so_far is not None else None, saved_standing(self.best_path)]
        self.best = max((b for b in standings if b is not None), default=Standing(False, -math.inf))
        self.rounds = 0
        self.next_video = 0.0  # the first evaluation is filmed

    def close(self) -> None:
        self.envs.close()

    def play_round(
        self,
        env_steps: int,
        flat_weights: torch.Tensor,
        start_time: float,
        send: Callable[[Evaluation], None] = lambda message: None,
        seed: int | None = None,
    ) -> Round:
        """Evaluate `flat_weights` (the flat tensor `model`'s parameters are views of), taken at `env_steps`;
        confirm, keep best.pt, then stop the run if solved, or else film if --video-interval is due.
        `seed`: the episodes' reset seed (by default the round's own).

        Each Evaluation message goes to `send` as soon as it is decided, so that the trainer hears of an
        evaluation while its confirmation plays; its wall_seconds count from `start_time` (time.monotonic()).
        """
        self.read_weights(flat_weights)
        seed = evaluation_seed(self.config, self.rounds) if seed is None else seed
        returns = play_greedy_episodes(self.agent, self.envs, seed, self.stop, self.on_step)
        self.rounds += 1
        if len(returns) < self.envs.num_envs:
            return Round([], complete=False)
        mean = float(np.mean(returns))
        reached = reaches(mean, self.config.target_return)
        confirming = reached and self.config.confirm_episodes > 0
        evaluations = [Evaluation(env_steps, time.monotonic() - start_time, returns, reached and not confirming)]
        send(evaluations[0])
        if confirming:
            confirmation = self.confirm(env_steps, start_time)
            if confirmation is None:
                return Round(evaluations, complete=False)
            evaluations.append(confirmation)
            send(confirmation)
        judged = evaluations[-1]  # the confirmation, where one was played, ranks best.pt
        standing = Standing(judged.confirmation, float(np.mean(judged.returns)))
        decided = Round(evaluations, best_written=self.keep_best(standing, env_steps, len(judged.returns)))
        if decided.solved:
            self.stop.set()  # at once: filming takes seconds (evaluate --video films best.pt)
        elif self.config.video_interval and time.monotonic() >= self.next_video:
            film(self.agent, self.config, self.run_dir, env_steps, self.rounds)
            self.next_video = time.monotonic() + self.config.video_interval
        return decided

    def confirm(self, env_steps: int, start_time: float) -> Evaluation | None:
        """The confirmation of an evaluation at the target: --confirm-episodes new episodes of the same
        weights; None if `stop` cut it short."""
        episodes = self.config.confirm_episodes
        returns = evaluate_agent(
            self.agent, episodes, confirmation_seed(self.config, self.rounds), self.stop, self.on_step
        )
        if len(returns) < episodes:
            return None
        solved = confirms(returns, self.config.target_return)
        return Evaluation(env_steps, time.monotonic() - start_time, returns, solved, confirmation=True)

    def read_weights(self, flat_weights: torch.Tensor) -> None:
        """Copy the weights and snapshot the statistics: both fixed for the round, and whole in best.pt."""
        with torch.no_grad():
            self.weights.copy_(flat_weights)
        for name, norm in self.model.statistics().items():
            norm.load_state_dict(getattr(self.source, name).state_dict())
        self.agent.weights_changed()

    def keep_best(self, standing: Standing, env_steps: int, episodes: int) -> bool:
        """Write best.pt if `standing` beats the best so far; whether it did."""
        if not standing > self.best:
            return False
        self.best = standing
        save_checkpoint(
            self.best_path,
            checkpoint_payload(
                self.config,
                self.model,
                env_steps,
                eval_return=standing.mean,
                eval_confirmed=standing.confirmed,
                eval_episodes=episodes,
            ),
        )
        return True
