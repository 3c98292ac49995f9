"""Greedy, noise-free evaluation: a function for the CLI and a process for training."""

from __future__ import annotations

import copy
import math
import time
import traceback
from pathlib import Path

import numpy as np
import torch

from .checkpoint import save_checkpoint
from .config import Config
from .envs import EnvError, env_spec, make_env
from .model import ActorCritic
from .worker import build_model


@torch.no_grad()
def play_greedy_episodes(model: ActorCritic, envs: list, seeds: list[int], stop=None) -> list[float]:
    """One episode in each env, all stepped together with one forward pass per step.

    Greedy (argmax) actions from the mean weights; returns the undiscounted returns.
    Stops early (returning what finished) when `stop` is set.
    """
    model.eval()
    obs = np.stack([env.reset(seed=seed)[0] for env, seed in zip(envs, seeds)]).astype(np.float32)
    state = model.initial_state(len(envs))
    returns = np.zeros(len(envs))
    active = np.ones(len(envs), dtype=bool)
    start = envs[0].action_space.start
    while active.any() and not (stop is not None and stop.is_set()):
        logits, _, state = model(torch.from_numpy(obs), state)
        actions = logits.argmax(dim=-1).numpy()
        for i in np.flatnonzero(active):
            obs[i], reward, terminated, truncated, _ = envs[i].step(int(actions[i]) + start)
            returns[i] += reward
            active[i] = not (terminated or truncated)
    return [float(r) for r, a in zip(returns, active) if not a]


def evaluate_model(model: ActorCritic, env_id: str, episodes: int, seed: int) -> list[float]:
    envs = [make_env(env_id) for _ in range(episodes)]
    try:
        return play_greedy_episodes(model, envs, [seed + i for i in range(episodes)])
    finally:
        for env in envs:
            env.close()


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
    envs = [make_env(config.env) for _ in range(config.eval_episodes)]
    best = -math.inf
    best_path = Path(run_dir) / "checkpoints" / "best.pt"
    round_ = 0
    try:
        while not stop.wait(config.eval_interval):
            steps = env_steps.value
            with torch.no_grad():
                torch._foreach_copy_(params, shared_params)
            seeds = [config.seed + 1_000_000 + round_ * len(envs) + i for i in range(len(envs))]
            returns = play_greedy_episodes(model, envs, seeds, stop)
            round_ += 1
            if len(returns) < len(envs):
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
        for env in envs:
            env.close()
