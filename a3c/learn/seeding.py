"""Every seed of a run, derived from one numpy SeedSequence of --seed.

Each consumer's seeds come from SeedSequence(seed, spawn_key=(whose, ...)):
they depend only on the run's seed and on who asks (a worker's rank and
incarnation, an evaluation round), never on the order of asking, and no two
consumers share a stream.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from a3c.config.settings import Config

MODEL, WORKER, EVALUATOR, CONFIRMATION, FINAL = range(5)  # the first element of a spawn key: whose seeds


class WorkerSeeds(NamedTuple):
    """The seeds of one worker incarnation."""

    envs: list[int]  # one reset seed per env, for a batch stepped in a loop
    vector_env: int  # a gymnasium vector env has one rng for the whole batch: it is reset with this one seed
    actions: int  # the action sampler
    torch: int  # the NoisyNet noise draws
    replay: int  # which stored rollouts are replayed, and how many after each on-policy update


def derive(config: Config, *key: int, count: int = 1) -> list[int]:
    """`count` 32-bit seeds from the stream `key` of this run."""
    return np.random.SeedSequence(config.seed, spawn_key=key).generate_state(count).tolist()


def model_seed(config: Config) -> int:
    """The initial weights and noise of the shared model."""
    return derive(config, MODEL)[0]


def worker_seeds(config: Config, rank: int, incarnation: int = 0) -> WorkerSeeds:
    """Worker `rank`'s seeds; a restarted worker (incarnation > 0) plays new episodes."""
    vector_env, actions, torch_seed, replay, *envs = derive(
        config, WORKER, rank, incarnation, count=4 + config.envs_per_process
    )
    return WorkerSeeds(envs, vector_env, actions, torch_seed, replay)


def seed_worker_torch(seeds: WorkerSeeds) -> None:
    torch.manual_seed(seeds.torch)


def evaluation_seed(config: Config, round_: int) -> int:
    """The reset seed of evaluation round `round_`: new starts every round (gymnasium derives each env's)."""
    return derive(config, EVALUATOR, round_)[0]


def final_evaluation_seed(config: Config) -> int:
    """The reset seed of the evaluation of the weights a run's budget ended with."""
    return derive(config, FINAL)[0]


def confirmation_seed(config: Config, round_: int) -> int:
    """The reset seed of the confirmation after evaluation round `round_`: episodes no evaluation played."""
    return derive(config, CONFIRMATION, round_)[0]
