"""Turns: at most N workers play a rollout and apply its update at the same time.

With more worker processes than cores (8 on 2 cores), the OS time-shares the
cores mid-rollout, so each gradient is computed on weights that many other
updates have moved since the worker loaded them. On CartPole that stale Hogwild
took about 4x the env steps to solve (median 214k against 53k over 6 seeds,
8 processes on 2 cores). Taking turns, one active worker per core, keeps each
gradient within a few updates of the weights it is applied to. The hand-offs cost
some raw throughput (8 processes x 32 envs: 63k against 72k steps/s), far less
than the env steps they save.

A worker SIGKILLed during its turn cannot give the turn back; the trainer does
it for it (`give_back_for`), and a turn that is waited for longer than
TURN_TIMEOUT_SECONDS is taken anyway, so a lost turn slows a run but never
stops it.
"""

from __future__ import annotations

import multiprocessing
from contextlib import contextmanager

TURN_TIMEOUT_SECONDS = 1.0


class Turns:
    def __init__(self, ctx: multiprocessing.context.BaseContext, active: int, num_workers: int):
        self.semaphore = ctx.Semaphore(active)
        self.holding = ctx.RawArray("b", num_workers)  # 1 while worker `rank` holds a turn

    @contextmanager
    def turn(self, rank: int):
        took = self.semaphore.acquire(timeout=TURN_TIMEOUT_SECONDS)
        self.holding[rank] = took
        try:
            yield
        finally:
            if self.holding[rank]:
                self.holding[rank] = 0
                self.semaphore.release()

    def give_back_for(self, rank: int) -> None:
        """The turn of a worker that died holding it."""
        if self.holding[rank]:
            self.holding[rank] = 0
            self.semaphore.release()
