"""What a KeyDoor run's policy does as it trains, copy by copy of its last.pt: the share of sampled episodes
that pick up the key, open the door and reach the goal, their mean length, and the share of their steps spent
in the goal's room.

    key_door_probe.py --run "--env a3c/KeyDoor8-v0 --novelty-coef 0.1 --max-steps 400000 --seed 1" --every 6
    key_door_probe.py runs/<run>/checkpoints/last.pt

Each copy's policy (its mean weights, actions sampled as the workers sample them) plays --episodes episodes
of the run's env from new seeds. A policy that follows a bonus rather than the goal shows here: the key and
the door taken on most episodes, the goal on few.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

import numpy as np

from a3c.agent import load_agent
from a3c.envs.make import make_env
from a3c.learn.checkpoint import load_checkpoint

from harness.launch import print_table
from learning.diagnose import add_checkpoint_options, checkpoints_given

COLUMNS = ("key", "door", "goal", "length", "goal's room")


def behaviour(path: Path, episodes: int, seed: int) -> list[float]:
    """The shares of COLUMNS over `episodes` sampled episodes of the checkpoint's policy (length: the mean)."""
    agent, env = load_agent(path, seed=seed), make_env(load_checkpoint(path)["config"]["env"])
    room = env.unwrapped
    played = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        state, ended, steps, carried, opened, in_room = None, False, 0, False, False, 0
        while not ended:
            action, state = agent.act(obs[None], state, deterministic=False)
            obs, _, terminated, truncated, _ = env.step(action[0])
            ended, steps = terminated or truncated, steps + 1
            carried, opened = carried or room.carrying, opened or room.door_open
            in_room += room.agent[1] > room.wall_column
        played.append((carried, opened, terminated, steps, in_room / steps))
    return list(np.mean(played, axis=0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_checkpoint_options(parser, every=6.0)
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--seed", type=int, default=123)
    args = parser.parse_args()
    with checkpoints_given(args) as paths:
        rows = [
            [f"{load_checkpoint(path)['env_steps']:,}"]
            + [f"{value:.0f}" if name == "length" else f"{value:.2f}" for name, value in zip(COLUMNS, found)]
            for path in paths
            for found in [behaviour(path, args.episodes, args.seed)]
        ]
    print_table(["env steps", *COLUMNS], rows)


if __name__ == "__main__":
    main()
