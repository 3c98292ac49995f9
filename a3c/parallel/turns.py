"""Turns: at most N workers play a rollout and apply its update at the same time.

With more worker processes than cores (8 on 2 cores), the OS time-shares the
cores mid-rollout, so each gradient is computed on weights that many other
updates have moved since the worker loaded them. On CartPole that stale Hogwild
took about 4x the env steps to solve (median 214k against 53k over 6 seeds,
8 processes on 2 cores). Taking turns, one active worker per core, keeps each
gradient within a few updates of the weights it is applied to.

A worker keeps its turn over consecutive updates for TURN_SECONDS: handing the
turn over after every update cost a third of the throughput at 8 processes
(8 x 32 envs: 62k steps/s against 92k for 2 x 32), in wake-ups and in caches
refilled with the next worker's model and envs.

A turn given back goes to a worker that waits for one: the semaphore is not fair, and a worker that
gives its turn back was taking it again before a woken waiter ran, wherever a core stood idle (one turn
among 4 workers: one worker took 98% of the turns, the others one each time their wait timed out; two
node groups of one turn each on 2 cores learned Acrobot in 2-3 times the local backend's env steps).

A worker SIGKILLed during its turn cannot give the turn back; the trainer does
it for it (`give_back_for`), and a turn that is waited for longer than
TURN_TIMEOUT_SECONDS is taken anyway, so a lost turn slows a run but never
stops it.
"""

from __future__ import annotations

import multiprocessing
import time
from contextlib import contextmanager

TURN_TIMEOUT_SECONDS = 1.0
TURN_SECONDS = 0.05
HANDOVER_SECONDS = 0.005  # the most a worker that gave its turn back waits for a waiter to take it
HANDOVER_POLL_SECONDS = 0.0001


class Turns:
    def __init__(
        self, ctx: multiprocessing.context.BaseContext, active: int, num_workers: int, seconds: float = TURN_SECONDS
    ):
        self.semaphore = ctx.Semaphore(active)
        self.holding = ctx.RawArray("b", num_workers)  # 1 while worker `rank` holds a turn
        self.waiting = ctx.RawArray("b", num_workers)  # 1 while worker `rank` waits for one
        self.taken = ctx.RawArray("L", num_workers)  # the turns worker `rank` has taken (each writes its own)
        self.seconds = seconds
        self.taken_at = None  # in a worker process: when it took the turn it holds, None if it holds none

    @contextmanager
    def turn(self, rank: int):
        """One update within a turn: the turn is taken first if this worker holds none, and given
        back after the update once the worker has held it for `seconds`."""
        if self.taken_at is None:
            self.waiting[rank] = 1
            self.holding[rank] = self.semaphore.acquire(timeout=TURN_TIMEOUT_SECONDS)
            self.waiting[rank] = 0
            self.taken[rank] += 1
            self.taken_at = time.monotonic()
        try:
            yield
        except BaseException:
            self.give_back(rank)
            raise
        if time.monotonic() - self.taken_at >= self.seconds:
            self.give_back(rank)
            self.hand_over(rank)

    def hand_over(self, rank: int) -> None:
        """Wait, up to HANDOVER_SECONDS, until one of the workers that were waiting for a turn has taken one."""
        waiters = [other for other in range(len(self.waiting)) if self.waiting[other] and other != rank]
        if not waiters:
            return
        before = [self.taken[other] for other in waiters]
        deadline = time.monotonic() + HANDOVER_SECONDS
        while time.monotonic() < deadline and before == [self.taken[other] for other in waiters]:
            time.sleep(HANDOVER_POLL_SECONDS)

    def give_back(self, rank: int) -> None:
        """Worker `rank` ends its turn early (it stops)."""
        self.taken_at = None
        self.give_back_for(rank)

    def give_back_for(self, rank: int) -> None:
        """The turn of a worker that died holding it (or waiting for one)."""
        self.waiting[rank] = 0
        if self.holding[rank]:
            self.holding[rank] = 0
            self.semaphore.release()
