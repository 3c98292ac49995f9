"""Train Stable-Baselines3 A2C or PPO with the RL Zoo's hyperparameters until a greedy evaluation solves the env.

One run per process, started by solve.py and zoo.py. Hyperparameters: RL Baselines3 Zoo
(hyperparams/a2c.yml and ppo.yml) for each env; the step budget is the Zoo's n_timesteps, which is
also the horizon of its linear schedules. The Zoo's `normalize: true` is VecNormalize (observations
and rewards); the evaluation env shares the observation statistics, frozen. Every --eval-interval
seconds of wall-clock (counted from the end of the previous evaluation, as our evaluator does) the
deterministic policy plays --eval-episodes episodes on separate envs, stepped together; training
stops when their mean reaches --target and the mean of --confirm-episodes new episodes is at the
target with 90% confidence, as our trainer's evaluator decides (a3c.parallel.evaluation.confirms).
Prints one JSON line: solved, env_steps, seconds, the learning curve (env steps, seconds, greedy mean
return at each evaluation) and the confirmations.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

START = time.monotonic()

import numpy as np  # noqa: E402
import torch  # noqa: E402
from stable_baselines3 import A2C, PPO  # noqa: E402
from stable_baselines3.common.callbacks import BaseCallback  # noqa: E402
from stable_baselines3.common.env_util import make_vec_env  # noqa: E402
from stable_baselines3.common.evaluation import evaluate_policy  # noqa: E402
from stable_baselines3.common.vec_env import VecNormalize, sync_envs_normalization  # noqa: E402

from a3c.envs.own import register_own  # noqa: E402
from a3c.parallel.evaluation import confirms  # noqa: E402  the rule our evaluator applies

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites
from learning.zoo_settings import ZOO  # noqa: E402

ALGOS = {"a2c": A2C, "ppo": PPO}


class SolvedCallback(BaseCallback):
    """Evaluate every `interval` seconds; stop training once the greedy mean reaches `target` and
    `confirm_episodes` new episodes of the same weights confirm it (a3c.parallel.evaluation.confirms)."""

    def __init__(self, eval_env, episodes: int, interval: float, target: float, confirm_episodes: int):
        super().__init__()
        self.eval_env, self.episodes, self.interval, self.target = eval_env, episodes, interval, target
        self.confirm_episodes = confirm_episodes
        self.confirmations: list[tuple[int, float]] = []
        self.next_eval = time.monotonic() + interval
        self.solved_at: int | None = None
        self.curve: list[tuple[int, float, float]] = []

    def evaluate(self) -> float:
        sync_envs_normalization(self.training_env, self.eval_env)
        mean, _ = evaluate_policy(self.model, self.eval_env, n_eval_episodes=self.episodes, deterministic=True)
        self.curve.append((self.num_timesteps, round(time.monotonic() - START, 3), float(mean)))
        self.next_eval = time.monotonic() + self.interval
        return mean

    def confirmed(self) -> bool:
        if not self.confirm_episodes:
            return True
        returns, _ = evaluate_policy(
            self.model,
            self.eval_env,
            n_eval_episodes=self.confirm_episodes,
            deterministic=True,
            return_episode_rewards=True,
        )
        self.confirmations.append((self.num_timesteps, float(np.mean(returns))))
        self.next_eval = time.monotonic() + self.interval
        return confirms(returns, self.target)

    def _on_step(self) -> bool:
        if time.monotonic() < self.next_eval:
            return True
        if self.evaluate() >= self.target and self.confirmed():
            self.solved_at = self.num_timesteps
            return False
        return True


def make_envs(env_id: str, n_envs: int, seed: int, normalize: bool, training: bool):
    env = make_vec_env(env_id, n_envs=n_envs, seed=seed)
    if not normalize:
        return env
    return VecNormalize(env, training=training, norm_reward=training)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="CartPole-v1", choices=sorted({env for env, _ in ZOO}))
    parser.add_argument("--algo", choices=sorted(ALGOS), required=True)
    parser.add_argument("--target", type=float, default=475.0, help="greedy mean return that counts as solved")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    parser.add_argument("--eval-interval", type=float, default=0.5)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument(
        "--confirm-episodes",
        type=int,
        default=100,
        help="new episodes that must confirm an evaluation at the target (0: none)",
    )
    args = parser.parse_args()

    if args.threads:
        torch.set_num_threads(args.threads)
    n_envs, budget, normalize, hyperparams = ZOO[(args.env, args.algo)]
    register_own(args.env)  # the sparse picture tasks (a3c/ ids) are this project's envs
    env = make_envs(args.env, n_envs, args.seed, normalize, training=True)
    eval_env = make_envs(args.env, args.eval_episodes, args.seed + 10_000, normalize, training=False)
    model = ALGOS[args.algo](policy="MlpPolicy", env=env, seed=args.seed, device="cpu", **hyperparams)
    callback = SolvedCallback(eval_env, args.eval_episodes, args.eval_interval, args.target, args.confirm_episodes)
    try:
        model.learn(total_timesteps=budget, callback=callback)
    except KeyboardInterrupt:  # zoo.py's timeout: report how far it got
        pass
    if callback.solved_at is None:
        callback.evaluate()  # the final greedy return, at the end of the budget
    print(
        json.dumps(
            {
                "env": args.env,
                "algo": args.algo,
                "seed": args.seed,
                "solved": callback.solved_at is not None,
                "env_steps": callback.solved_at if callback.solved_at is not None else model.num_timesteps,
                "seconds": round(time.monotonic() - START, 3),
                "threads": torch.get_num_threads(),
                "final_eval": callback.curve[-1][2],
                "curve": callback.curve,
                "confirmations": callback.confirmations,
            }
        )
    )


if __name__ == "__main__":
    main()
