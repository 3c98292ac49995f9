"""Train Stable-Baselines3 PPO with the RL Zoo's Atari settings on an ALE game for a wall-clock budget.

The anchor a user would pick instead of our Atari preset, run the way atari_learn.py runs ours: the
same game rules as `ALE/<GAME>-v5` (sticky actions with probability 0.25; the emulator steps single
frames and SB3's AtariWrapper skips 4, as v5 does), the Zoo's hyperparams/ppo.yml `atari` entry (8 envs
stepped in turn, 128-step rollouts, 4 epochs of batches of 256, lr 2.5e-4 and clip 0.1 decaying
linearly over 10M env steps, entropy 0.01, 4 stacked 84x84 frames, AtariWrapper's life loss and reward
clipping in training), torch on every core. Every --eval-interval seconds the deterministic policy
plays --eval-episodes whole games without clipping or life loss. It writes into --run-dir what
atari_learn.py reads of our runs: metrics.csv (env steps, seconds from launch, mean return of the
training games ended since the row before, the policy's entropy) every 100k env steps, and eval.csv.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

START = time.monotonic()

import ale_py  # noqa: E402
import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.atari_wrappers import AtariWrapper  # noqa: E402
from stable_baselines3.common.callbacks import BaseCallback  # noqa: E402
from stable_baselines3.common.evaluation import evaluate_policy  # noqa: E402
from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack  # noqa: E402

gym.register_envs(ale_py)

ZOO_STEPS = 10_000_000  # the Zoo's n_timesteps: the horizon of its linear schedules
ROW_STEPS = 100_000  # as the Atari preset's log interval
METRICS_COLUMNS = ["env_steps", "wall_seconds", "mean_return", "entropy"]
EVAL_COLUMNS = ["env_steps", "wall_seconds", "mean_return", "episodes", "confirmation"]


def linear(start: float):
    """The Zoo's lin_<start>: from start to 0 over its n_timesteps."""
    return lambda progress_remaining: progress_remaining * start


def atari_envs(game: str, count: int, seed: int, training: bool) -> VecFrameStack:
    """`count` games of ALE/<game>-v5's rules behind AtariWrapper, 4 frames stacked; Monitor sees whole games."""

    def make():
        env = Monitor(gym.make(f"ALE/{game}-v5", frameskip=1))  # v5's sticky actions kept
        return AtariWrapper(env, terminal_on_life_loss=training, clip_reward=training)

    venv = DummyVecEnv([make] * count)
    venv.seed(seed)
    return VecFrameStack(venv, 4)


def append_row(path: Path, columns: list[str], row: dict) -> None:
    """One CSV row, the header first in a new file; closed at once, so a run stopped by a signal keeps it."""
    new = not path.exists()
    with open(path, "a", newline="") as file:
        writer = csv.DictWriter(file, columns)
        if new:
            writer.writeheader()
        writer.writerow(row)


class Log(BaseCallback):
    """metrics.csv every ROW_STEPS env steps, eval.csv every `interval` seconds; stops at `deadline`."""

    def __init__(self, run_dir: Path, eval_env, episodes: int, interval: float, deadline: float):
        super().__init__()
        self.run_dir, self.eval_env, self.episodes = run_dir, eval_env, episodes
        self.interval, self.deadline = interval, deadline
        self.next_eval, self.next_row = time.monotonic() + interval, ROW_STEPS
        self.returns: list[float] = []

    def _on_step(self) -> bool:
        self.returns += [info["episode"]["r"] for info in self.locals["infos"] if "episode" in info]
        if self.num_timesteps >= self.next_row:
            self.next_row += ROW_STEPS
            row = {"mean_return": np.mean(self.returns) if self.returns else np.nan, "entropy": self.entropy()}
            append_row(self.run_dir / "metrics.csv", METRICS_COLUMNS, self.stamped(row))
            self.returns = []
        if time.monotonic() >= self.next_eval:
            mean, _ = evaluate_policy(self.model, self.eval_env, n_eval_episodes=self.episodes, deterministic=True)
            row = {"mean_return": float(mean), "episodes": self.episodes, "confirmation": 0}
            append_row(self.run_dir / "eval.csv", EVAL_COLUMNS, self.stamped(row))
            self.next_eval = time.monotonic() + self.interval
        return time.monotonic() < self.deadline

    def entropy(self) -> float:
        """The policy's mean entropy over the envs' latest observations."""
        observations, _ = self.model.policy.obs_to_tensor(self.locals["new_obs"])
        with torch.no_grad():
            return self.model.policy.get_distribution(observations).entropy().mean().item()

    def stamped(self, row: dict) -> dict:
        return {"env_steps": self.num_timesteps, "wall_seconds": round(time.monotonic() - START, 3), **row}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="Pong")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--minutes", type=float, required=True, help="the wall-clock budget, from launch")
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--eval-interval", type=float, default=300.0, help="seconds, as the Atari preset's")
    parser.add_argument("--eval-episodes", type=int, default=4)
    args = parser.parse_args()

    args.run_dir.mkdir(parents=True, exist_ok=True)
    model = PPO(
        "CnnPolicy",
        atari_envs(args.game, 8, args.seed, training=True),
        n_steps=128,
        n_epochs=4,
        batch_size=256,
        learning_rate=linear(2.5e-4),
        clip_range=linear(0.1),
        vf_coef=0.5,
        ent_coef=0.01,
        seed=args.seed,
        device="cpu",
    )
    eval_env = atari_envs(args.game, 1, args.seed + 10_000, training=False)
    log = Log(args.run_dir, eval_env, args.eval_episodes, args.eval_interval, START + 60 * args.minutes)
    model.learn(total_timesteps=ZOO_STEPS, callback=log)


if __name__ == "__main__":
    main()
