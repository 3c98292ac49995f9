"""Where a greedy episode begins a new life and where it has stalled: the rules greedy play (the
evaluator's games, `evaluate`, the films) follows besides the env's own end."""

from __future__ import annotations

import numpy as np

# an episode that goes this many steps without a reward or a lost life is over, its return what it has
# earned: a greedy policy that never serves again (Breakout's FIRE after a lost life) would otherwise play
# out ALE's 27,000 steps a game (docs/design/choices.md, "Stalled games")
IDLE_STEPS = 4_500


def lives_lost(before, after) -> np.ndarray | None:
    """[N] bool, True where an env's lives (Atari's info `lives`) fell; None for envs without lives."""
    if before is None or after is None:
        return None
    return np.atleast_1d(after) < np.atleast_1d(before)


class EpisodeProgress:
    """A batch of N envs' progress, step by step. `new_life`: True where the last step lost a life, so
    that the recurrent state restarts there as it does in training, where a lost life ends an episode
    (a3c/envs/make.py); None for envs without lives. `step` returns where IDLE_STEPS steps went by without
    a reward or a lost life."""

    def __init__(self, reset_info: dict, size: int):
        self.lives = reset_info.get("lives")
        self.idle = np.zeros(size, dtype=np.int64)
        self.new_life = None

    def step(self, rewards, info: dict) -> np.ndarray:
        """Take in a step's rewards ([N], or one env's scalar) and info; [N] bool, True where stalled."""
        lives = info.get("lives")
        self.new_life = lives_lost(self.lives, lives)
        self.lives = lives
        progressed = np.atleast_1d(rewards) != 0
        if self.new_life is not None:
            progressed |= self.new_life
        self.idle = np.where(progressed, 0, self.idle + 1)
        return self.idle >= IDLE_STEPS
