"""Greedy, noise-free evaluation: a function for the CLI and a process for training."""

from __future__ import annotations

import copy
import math
import time
import traceback
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from .actor import NumpyActor
from .checkpoint import checkpoint_payload, save_checkpoint
from .config import Config
from .envs import EnvError, EnvSpec, env_spec, make_vector_env
from .flat import flatten_parameters
from .learner import build_model
from .messages import Evaluation, Failure
from .model import ActorCritic
from .policy import distribution
from .processes import Shared, become_child_process, parent_is_gone
from .seeding import evaluation_seed


@torch.no_grad()
def play_greedy_episodes(model: ActorCritic, spec: EnvSpec, envs: gym.vector.VectorEnv, seed: int,
                         stop=None) -> list[float]:
    """One episode in each env of `envs`, all stepped together with one forward pass per step.

    Greedy actions (argmax, or the Gaussian mean) from the mean weights, played by the
    numpy actor (a quarter of torch's cost per step, so evaluating takes less of the
    cores from the workers); returns the undiscounted returns. An env that finished
    keeps being stepped (vector envs step all) but is no longer counted. Stops early,
    returning what finished, when `stop` is set.
    """
    model.eval()
    actor = NumpyActor(model)
    actor.begin_rollout()
    obs, _ = envs.reset(seed=seed)
    state = tuple(part.numpy() for part in model.initial_state(envs.num_envs))
    returns = np.zeros(envs.num_envs)
    active = np.ones(envs.num_envs, dtype=bool)
    policy = distribution(spec)
    while active.any() and not (stop is not None and stop.is_set()):
        trace = actor.step(actor.normalize(np.asarray(obs, dtype=spec.obs_dtype)), state)
        state = trace.hidden, trace.cell
        obs, rewards, terminated, truncated, _ = envs.step(spec.env_actions(policy.greedy(actor.heads(state[0])[0])))
        returns += rewards * active
        active &= ~(terminated | truncated)
    return returns[~active].tolist()


def evaluate_model(model: ActorCritic, env_id: str, episodes: int, seed: int) -> list[float]:
    envs, spec = make_vector_env(env_id, episodes)
    try:
        return play_greedy_episodes(model, spec, envs, seed)
    finally:
        envs.close()


def model_from_checkpoint(payload: dict, env_id: str | None = None) -> tuple[ActorCritic, Config]:
    """The checkpoint's network with its weights, for its own env or another with the same spaces."""
    config = Config.from_dict(payload["config"])
    if env_id is not None:
        config = config.replace(env=env_id)
    spec = env_spec(config.env)
    model = build_model(config, spec)
    try:
        model.load_state_dict(payload["model"])
    except RuntimeError:
        raise EnvError(f"the checkpoint's network does not fit {config.env}'s spaces") from None
    return model, config


def run_evaluator(config: Config, shared: Shared, messages, parent_pid: int, start_time: float, run_dir: str,
                  best_so_far: float | None) -> None:
    """Process entry point: evaluate every eval_interval seconds; keep best.pt; stop when solved."""
    become_child_process()
    model = copy.deepcopy(shared.model)  # a private copy: an episode must not see weights change under it
    weights = flatten_parameters(model)
    envs, spec = make_vector_env(config.env, config.eval_episodes)
    best = -math.inf if best_so_far is None else best_so_far
    best_path = Path(run_dir) / "checkpoints" / "best.pt"
    round_ = 0
    try:
        while not shared.stop.wait(config.eval_interval) and not parent_is_gone(parent_pid):
            steps = shared.env_steps.total()
            with torch.no_grad():
                weights.copy_(shared.optimizer.params[0])
            if model.obs_norm is not None:  # a snapshot: fixed for the whole evaluation
                model.obs_norm.load_state_dict(shared.model.obs_norm.state_dict())
            returns = play_greedy_episodes(model, spec, envs, evaluation_seed(config, round_), shared.stop)
            round_ += 1
            if len(returns) < envs.num_envs:
                break  # stopped mid-evaluation: an incomplete mean would mislead
            mean = float(np.mean(returns))
            solved = config.target_return is not None and mean >= config.target_return
            if mean > best:
                best = mean
                save_checkpoint(best_path, checkpoint_payload(config, model, steps, eval_return=mean))
            messages.send(Evaluation(steps, time.monotonic() - start_time, returns, solved))
            if solved:
                shared.stop.set()
    except Exception:
        messages.send(Failure("evaluator", traceback.format_exc()))
        raise SystemExit(1)
    finally:
        envs.close()
