"""Greedy, noise-free evaluation: a function for the CLI and a process for training."""

from __future__ import annotations

import copy
import math
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from a3c.agent import Agent
from a3c.config.settings import Config
from a3c.envs.batch import make_vector_env
from a3c.envs.masks import ACTION_MASK
from a3c.errors import CheckpointError, WriteError
from a3c.learn.checkpoint import checkpoint_payload, load_checkpoint, save_checkpoint
from a3c.learn.seeding import confirmation_seed, evaluation_seed
from a3c.nets.flat import flatten_parameters
from a3c.parallel.messages import Evaluation, Failure, WriteFailed
from a3c.parallel.processes import Shared, become_child_process, parent_is_gone


def play_greedy_episodes(agent: Agent, envs: gym.vector.VectorEnv, seed: int, stop=None,
                         on_step=lambda: None) -> list[float]:
    """One episode in each env of `envs`, all stepped together with one forward pass per step.

    Greedy actions (argmax over the legal ones, or the Gaussian mean) from the mean weights; returns the
    undiscounted returns. An env that finished keeps being stepped (vector envs step
    all) but is no longer counted. Stops early, returning what finished, when `stop` is set.
    `on_step` is called before every step (the evaluator's heartbeat).
    """
    obs, info = envs.reset(seed=seed)
    state = agent.initial_state(envs.num_envs)
    returns = np.zeros(envs.num_envs)
    active = np.ones(envs.num_envs, dtype=bool)
    while active.any() and not (stop is not None and stop.is_set()):
        on_step()
        actions, state = agent.act(obs, state, action_mask=info.get(ACTION_MASK))
        obs, rewards, terminated, truncated, info = envs.step(actions)
        returns += rewards * active
        active &= ~(terminated | truncated)
    return returns[~active].tolist()


# episodes played together at most: `evaluate --episodes 1000000` must not make a million envs; 100 plays a
# confirmation in one batch (CartPole: 0.22 s, against 0.33 s as 64 + 36)
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
    from a3c.tools.video import (  # imageio: only when filming
        TRAINING_VIDEO_STEPS,
        record_episodes,
    )
    folder = run_dir / "videos"
    folder.mkdir(exist_ok=True)
    record_episodes(agent, config.env, 1, evaluation_seed(config, round_), folder / f"{env_steps:09d}.mp4",
                    TRAINING_VIDEO_STEPS)


def saved_standing(best_path: Path) -> Standing | None:
    """best.pt's standing: an evaluator restarted mid-run must not overwrite a better best.pt."""
    try:
        payload = load_checkpoint(best_path) if best_path.exists() else {}
    except CheckpointError:
        return None
    mean = payload.get("eval_return")
    return None if mean is None else Standing(bool(payload.get("eval_confirmed", False)), mean)


def wait_beating(stop, seconds: float, beat) -> bool:
    """stop.wait(seconds), beating every second meanwhile: waiting is not hanging."""
    deadline = time.monotonic() + seconds
    while True:
        beat()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return stop.is_set()
        if stop.wait(min(remaining, 1.0)):
            return True


def run_evaluator(config: Config, shared: Shared, messages, parent_pid: int, start_time: float, run_dir: str,
                  best_so_far: float | None) -> None:
    """Process entry point: evaluate every eval_interval seconds; keep best.pt; stop when solved.

    An evaluation whose mean reaches the target is confirmed on --confirm-episodes new episodes of
    the same weights; only a confirmation whose mean is at the target with 90% confidence solves
    (`confirms`; with --confirm-episodes 0, the evaluation's own mean). `best_so_far`: the best
    evaluation mean of the run before this evaluator.
    """
    become_child_process()
    model = copy.deepcopy(shared.model)  # a private copy: an episode must not see weights change under it
    weights = flatten_parameters(model)
    envs, spec = make_vector_env(config.env, config.eval_episodes)
    agent = Agent(model, spec, config.learner, config)
    best_path = Path(run_dir) / "checkpoints" / "best.pt"
    standings = [Standing(False, best_so_far) if best_so_far is not None else None, saved_standing(best_path)]
    best = max((b for b in standings if b is not None), default=Standing(False, -math.inf))
    round_ = 0
    next_video = 0.0  # the first evaluation is filmed
    beat = (lambda: shared.heartbeats.beat(shared.heartbeats.evaluator)) if shared.heartbeats else (lambda: None)
    try:
        while not wait_beating(shared.stop, config.eval_interval, beat) and not parent_is_gone(parent_pid):
            steps = shared.env_steps.total()
            with torch.no_grad():
                weights.copy_(shared.optimizer.params[0])
            for name, norm in model.statistics().items():  # snapshots: fixed for the evaluation, whole in best.pt
                norm.load_state_dict(getattr(shared.model, name).state_dict())
            agent.weights_changed()
            returns = play_greedy_episodes(agent, envs, evaluation_seed(config, round_), shared.stop, beat)
            round_ += 1
            if len(returns) < envs.num_envs:
                break  # stopped mid-evaluation: an incomplete mean would mislead
            mean = float(np.mean(returns))
            reached = reaches(mean, config.target_return)
            confirming = reached and config.confirm_episodes > 0
            solved = reached and not confirming
            messages.send(Evaluation(steps, time.monotonic() - start_time, returns, solved))
            standing = Standing(False, mean)
            if confirming:
                returns = evaluate_agent(agent, config.confirm_episodes, confirmation_seed(config, round_),
                                         shared.stop, beat)
                if len(returns) < config.confirm_episodes:
                    break
                standing = Standing(True, float(np.mean(returns)))
                solved = confirms(returns, config.target_return)
                messages.send(Evaluation(steps, time.monotonic() - start_time, returns, solved, confirmation=True))
            if standing > best:
                best = standing
                save_checkpoint(best_path, checkpoint_payload(config, model, steps, eval_return=standing.mean,
                                                              eval_confirmed=standing.confirmed,
                                                              eval_episodes=len(returns)))
            if solved:
                shared.stop.set()  # at once: filming takes seconds (evaluate --video films best.pt)
            elif config.video_interval and time.monotonic() >= next_video:
                film(agent, config, Path(run_dir), steps, round_)
                next_video = time.monotonic() + config.video_interval
    except WriteError as error:  # best.pt on a full disk: the trainer stops the run as for its own writes
        messages.send(WriteFailed(str(error)))
        raise SystemExit(1)
    except Exception:
        messages.send(Failure("evaluator", traceback.format_exc()))
        raise SystemExit(1)
    finally:
        envs.close()
