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

from .checkpoint import save_checkpoint
from .config import Config
from .envs import EnvError, env_spec, make_vector_env
from .model import ActorCritic
from .worker import build_model


@torch.no_grad()
def play_greedy_episodes(model: ActorCritic, envs: gym.vector.VectorEnv, seed: int, stop=None) -> list[float]:
    """One episode in each env of `envs`, all stepped together with one forward pass per step.

    Greedy (argmax) actions from the mean weights; returns the undiscounted returns.
    An env that finished keeps being stepped (vector envs step all) but is no
    longer counted. Stops early, returning what finished, when `stop` is set.
    """
    model.eval()
    obs, _ = envs.reset(seed=seed)
    state = model.initial_state(envs.num_envs)
    returns = np.zeros(envs.num_envs)
    active = np.ones(envs.num_envs, dtype=bool)
    start = envs.single_action_space.start
    while active.any() and not (stop is not None and stop.is_set()):
        logits, _, state = model(torch.from_numpy(np.asarray(obs, dtype=np.float32)), state)
        obs, rewards, terminated, truncated, _ = envs.step(logits.argmax(dim=-1).numpy() + start)
        returns += rewards * active
        active &= ~(terminated | truncated)
    return returns[~active].tolist()


def evaluate_model(model: ActorCritic, env_id: str, episodes: int, seed: int) -> list[float]:
    envs = make_vector_env(env_id, episodes)
    try:
        return play_greedy_episodes(model, envs, seed)
    finally:
        envs.close()


def model_from_checkpoint(payload: dict, env_id: str | None = None) -> tuple[ActorCritic, Config]:
    """The checkpoint's network with its weights, for its own env or another with the same spaces."""
    config = Config.from_dict(payload["config"])
    if env_id is not None:
        config = config.replace(env=env_id)
    spec = env_spec(config.env)
    model = build_model(config, spec.obs_size, spec.num_actions)
    try:
        model.load_state_dict(payload["model"])
    except RuntimeError:
        raise EnvError(f"the checkpoint's network does not fit {config.env}'s spaces") from None
    return model, config


def run_evaluator(config: Config, shared_model: ActorCritic, env_steps, stop, queue,
                  start_time: float, run_dir: str) -> None:
    """Process entry point: evaluate every eval_interval seconds; keep best.pt; stop when solved."""
    torch.set_num_threads(1)
    model = copy.deepcopy(shared_model)  # a private copy: evaluation must not see half-applied updates mid-episode
    params, shared_params = list(model.parameters()), list(shared_model.parameters())
    envs = make_vector_env(config.env, config.eval_episodes)
    best = -math.inf
    best_path = Path(run_dir) / "checkpoints" / "best.pt"
    round_ = 0
    try:
        while not stop.wait(config.eval_interval):
            steps = env_steps.value
            with torch.no_grad():
                torch._foreach_copy_(params, shared_params)
            seed = config.seed + 1_000_000 + round_ * envs.num_envs  # new starts every round
            returns = play_greedy_episodes(model, envs, seed, stop)
            round_ += 1
            if len(returns) < envs.num_envs:
                break  # stopped mid-evaluation: an incomplete mean would mislead
            mean = float(np.mean(returns))
            solved = config.target_return is not None and mean >= config.target_return
            if mean > best:
                best = mean
                save_checkpoint(best_path, {"config": config.to_dict(), "model": model.state_dict(),
                                            "env_steps": steps, "eval_return": mean})
            queue.put(("eval", steps, time.monotonic() - start_time, returns, solved))
            if solved:
                stop.set()
    except KeyboardInterrupt:
        pass
    except Exception:
        queue.put(("error", "evaluator", traceback.format_exc()))
        raise SystemExit(1)
    finally:
        envs.close()
