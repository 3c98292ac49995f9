"""One checkpoint's greedy games under greedy play's rules and without each (a3c/envs/progress.py).

    greedy_rules.py --checkpoint runs/<run>/checkpoints/last.pt --games 10 --seed 5000 --out greedy-rules

Contenders, each on the same games (seeds): the rules as they are (a lost life restarts the LSTM's state,
as training does; a game idle for IDLE_STEPS ends); the state carried over a lost life (the evaluator
before version 0.20); and no idle limit. Reported: the mean return and its spread, the steps the batch
took (its longest game's) and its seconds (one process, one torch thread).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the harness and the suites

import numpy as np
import torch

import a3c.envs.progress as progress
import a3c.parallel.evaluation as evaluation
from a3c.agent import load_agent
from a3c.envs.batch import make_vector_env

from harness.launch import environment, print_table, save_json


class CarriedOver(progress.EpisodeProgress):
    """The rules without the restart at a lost life: the state runs on through the whole game."""

    def step(self, rewards, info):
        stalled = super().step(rewards, info)
        self.new_life = None
        return stalled


def play(checkpoint: str, games: int, seed: int, carry_over: bool, idle_steps: int) -> dict:
    """One contender's games, played together as the evaluator plays them, and the steps the batch took."""
    agent = load_agent(checkpoint)
    envs, _ = make_vector_env(agent.config.env, games)
    batch_steps = 0

    class Counted(CarriedOver if carry_over else progress.EpisodeProgress):
        def step(self, rewards, info):
            nonlocal batch_steps
            batch_steps += 1
            return super().step(rewards, info)

    original = evaluation.EpisodeProgress, progress.IDLE_STEPS
    evaluation.EpisodeProgress, progress.IDLE_STEPS = Counted, idle_steps
    start = time.perf_counter()
    try:
        returns = evaluation.play_greedy_episodes(agent, envs, seed)
    finally:
        evaluation.EpisodeProgress, progress.IDLE_STEPS = original
        envs.close()
    return {
        "returns": returns,
        "mean": float(np.mean(returns)),
        "std": float(np.std(returns)),
        "batch_steps": batch_steps,
        "seconds": time.perf_counter() - start,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--games", type=int, default=10)
    parser.add_argument("--seed", type=int, default=5000)
    parser.add_argument("--out", default="greedy-rules")
    args = parser.parse_args()
    torch.set_num_threads(1)
    never = 10**9
    contenders = {
        "the rules (restart at a lost life, idle limit)": (False, progress.IDLE_STEPS),
        "the state carried over a lost life": (True, progress.IDLE_STEPS),
        "no idle limit": (False, never),
    }
    results = {
        name: play(args.checkpoint, args.games, args.seed, carry, idle) for name, (carry, idle) in contenders.items()
    }
    print_table(
        ["contender", "mean return", "spread", "the batch's steps (its longest game)", "seconds"],
        [
            [name, f"{r['mean']:.2f}", f"{r['std']:.2f}", r["batch_steps"], f"{r['seconds']:.0f}"]
            for name, r in results.items()
        ],
    )
    save_json(args.out, {"args": vars(args), "environment": environment(), "results": results})


if __name__ == "__main__":
    main()
