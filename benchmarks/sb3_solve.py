"""Train Stable-Baselines3 A2C or PPO on CartPole-v1 until a greedy evaluation solves it.

One run per process, started by solve.py. Hyperparameters: RL Zoo (rl-baselines3-zoo,
hyperparams/a2c.yml and ppo.yml, CartPole-v1); the step budget is the Zoo's n_timesteps, which
is also the horizon of PPO's linear schedules. Every --eval-interval seconds of wall-clock
(counted from the end of the previous evaluation, as our evaluator does) the deterministic
policy plays --eval-episodes episodes on separate envs, stepped together; training stops when
their mean reaches the target. Prints one JSON line: solved, env_steps, seconds.
"""

from __future__ import annotations

import argparse
import json
import time

START = time.monotonic()

import torch  # noqa: E402
from stable_baselines3 import A2C, PPO  # noqa: E402
from stable_baselines3.common.callbacks import BaseCallback  # noqa: E402
from stable_baselines3.common.env_util import make_vec_env  # noqa: E402
from stable_baselines3.common.evaluation import evaluate_policy  # noqa: E402

ENV_ID = "CartPole-v1"
TARGET = 475.0


def linear(start: float):
    """The Zoo's lin_<start>: decays linearly from start to 0 over the step budget."""
    return lambda progress_remaining: progress_remaining * start


ZOO = {
    "a2c": (A2C, 500_000, dict(policy="MlpPolicy", ent_coef=0.0)),
    "ppo": (PPO, 100_000, dict(policy="MlpPolicy", n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98,
                               n_epochs=20, ent_coef=0.0, learning_rate=linear(0.001), clip_range=linear(0.2))),
}
N_ENVS = 8  # both Zoo entries


class SolvedCallback(BaseCallback):
    """Evaluate every `interval` seconds; stop training once the greedy mean reaches TARGET."""

    def __init__(self, eval_env, episodes: int, interval: float):
        super().__init__()
        self.eval_env, self.episodes, self.interval = eval_env, episodes, interval
        self.next_eval = time.monotonic() + interval
        self.solved_at: int | None = None

    def _on_step(self) -> bool:
        if time.monotonic() < self.next_eval:
            return True
        mean, _ = evaluate_policy(self.model, self.eval_env, n_eval_episodes=self.episodes, deterministic=True)
        self.next_eval = time.monotonic() + self.interval
        if mean >= TARGET:
            self.solved_at = self.num_timesteps
            return False
        return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", choices=sorted(ZOO), required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    parser.add_argument("--eval-interval", type=float, default=0.5)
    parser.add_argument("--eval-episodes", type=int, default=10)
    args = parser.parse_args()

    if args.threads:
        torch.set_num_threads(args.threads)
    algo, budget, hyperparams = ZOO[args.algo]
    env = make_vec_env(ENV_ID, n_envs=N_ENVS, seed=args.seed)
    eval_env = make_vec_env(ENV_ID, n_envs=args.eval_episodes, seed=args.seed + 10_000)
    model = algo(env=env, seed=args.seed, device="cpu", **hyperparams)
    callback = SolvedCallback(eval_env, args.eval_episodes, args.eval_interval)
    model.learn(total_timesteps=budget, callback=callback)
    print(json.dumps({"algo": args.algo, "seed": args.seed, "solved": callback.solved_at is not None,
                      "env_steps": callback.solved_at if callback.solved_at is not None else model.num_timesteps,
                      "seconds": round(time.monotonic() - START, 3), "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
