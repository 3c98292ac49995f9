"""Train Stable-Baselines3 PPO on a MinAtar game for a fixed wall-clock budget; print one JSON line.

The observations are the trainer's own (a3c.envs.spec.make_env: channels-first uint8 frames of 0 and
255), and the policy's features come from the same small convnet as ours (one 3x3 convolution of 16
channels, then 128 units). PPO's settings are the common Atari ones scaled to 8 envs (CleanRL's
ppo_atari: 128-step rollouts, 4 epochs, clip 0.1, lr 2.5e-4). Every --eval-interval seconds the
deterministic policy plays --eval-episodes episodes (the learning curve); when the budget (counted
from launch) is spent, training stops and the final policy plays 10 greedy episodes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

START = time.monotonic()

import gymnasium as gym  # noqa: E402
import torch  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.callbacks import BaseCallback  # noqa: E402
from stable_baselines3.common.evaluation import evaluate_policy  # noqa: E402
from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: the a3c package
from a3c.envs.make import make_env  # noqa: E402

FINAL_EPISODES = 10


class SmallConv(BaseFeaturesExtractor):
    """The MinAtar paper's network body, as in our encoder: 3x3 conv of 16 channels, then 128 units."""

    def __init__(self, observation_space: gym.spaces.Box, features_dim: int = 128):
        super().__init__(observation_space, features_dim)
        channels, height, width = observation_space.shape
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(channels, 16, 3),
            torch.nn.ReLU(),
            torch.nn.Flatten(),
            torch.nn.Linear(16 * (height - 2) * (width - 2), features_dim),
            torch.nn.ReLU(),
        )

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.body(observations / 255.0)


class Budget(BaseCallback):
    """Evaluate every `interval` seconds; stop at `deadline` (monotonic seconds)."""

    def __init__(self, eval_env, episodes: int, interval: float, deadline: float):
        super().__init__()
        self.eval_env, self.episodes, self.interval, self.deadline = eval_env, episodes, interval, deadline
        self.next_eval = time.monotonic() + interval
        self.curve: list[tuple[int, float, float]] = []

    def _on_step(self) -> bool:
        if time.monotonic() >= self.next_eval:
            mean, _ = evaluate_policy(self.model, self.eval_env, n_eval_episodes=self.episodes, deterministic=True)
            self.curve.append((self.num_timesteps, round(time.monotonic() - START, 3), float(mean)))
            self.next_eval = time.monotonic() + self.interval
        return time.monotonic() < self.deadline


def envs(env_id: str, count: int, seed: int) -> DummyVecEnv:
    venv = DummyVecEnv([lambda: Monitor(make_env(env_id, training=True))] * count)
    venv.seed(seed)
    return venv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="MinAtar/Breakout-v1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seconds", type=float, required=True, help="the wall-clock budget, from launch")
    parser.add_argument("--eval-interval", type=float, default=30.0)
    parser.add_argument("--eval-episodes", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default, every core)")
    args = parser.parse_args()

    if args.threads:
        torch.set_num_threads(args.threads)
    model = PPO(
        "CnnPolicy",
        envs(args.env, 8, args.seed),
        n_steps=128,
        batch_size=256,
        n_epochs=4,
        learning_rate=2.5e-4,
        clip_range=0.1,
        ent_coef=0.01,
        vf_coef=0.5,
        gamma=0.99,
        gae_lambda=0.95,
        seed=args.seed,
        device="cpu",
        policy_kwargs=dict(features_extractor_class=SmallConv, normalize_images=False),
    )
    eval_env = envs(args.env, args.eval_episodes, args.seed + 10_000)
    callback = Budget(eval_env, args.eval_episodes, args.eval_interval, START + args.seconds)
    model.learn(total_timesteps=10**10, callback=callback)
    final_env = envs(args.env, FINAL_EPISODES, args.seed + 20_000)
    returns, _ = evaluate_policy(
        model, final_env, n_eval_episodes=FINAL_EPISODES, deterministic=True, return_episode_rewards=True
    )
    print(
        json.dumps(
            {
                "env": args.env,
                "seed": args.seed,
                "env_steps": model.num_timesteps,
                "seconds": round(time.monotonic() - START, 3),
                "threads": torch.get_num_threads(),
                "final_returns": [float(r) for r in returns],
                "curve": callback.curve,
            }
        )
    )


if __name__ == "__main__":
    main()
