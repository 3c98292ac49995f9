"""a3c.learn.seeding: every seed of a run from one SeedSequence, none shared between consumers."""

from __future__ import annotations

from a3c.config.settings import Config
from a3c.learn.seeding import evaluation_seed, model_seed, worker_seeds


def all_seeds(config: Config, incarnations: int, rounds: int) -> list[int]:
    seeds = [model_seed(config)]
    for rank in range(config.num_processes):
        for incarnation in range(incarnations):
            worker = worker_seeds(config, rank, incarnation)
            seeds += [*worker.envs, worker.vector_env, worker.actions, worker.torch]
    return seeds + [evaluation_seed(config, round_) for round_ in range(rounds)]


def test_no_two_consumers_share_a_seed():
    config = Config(num_processes=4, envs_per_process=8)
    seeds = all_seeds(config, incarnations=3, rounds=50)
    assert len(set(seeds)) == len(seeds)


def test_seeds_depend_on_the_run_seed_and_on_who_asks_only():
    config = Config(num_processes=2, envs_per_process=3, seed=7)
    assert all_seeds(config, 2, 5) == all_seeds(config, 2, 5)
    assert worker_seeds(config, 1, 0) == worker_seeds(config.replace(num_processes=8), 1, 0)
    assert set(all_seeds(config, 2, 5)).isdisjoint(all_seeds(config.replace(seed=8), 2, 5))
    assert len(worker_seeds(config, 0).envs) == 3
