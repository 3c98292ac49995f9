"""The global env-step counter: one shared slot per worker, so no lock is ever held.

A lock held by a worker that gets SIGKILLed is never released and would hang
every other worker; with one slot each, a worker only ever writes its own.
"""

from __future__ import annotations

import multiprocessing


class StepCounter:
    def __init__(self, ctx: multiprocessing.context.BaseContext, num_workers: int, start: int = 0):
        self.slots = ctx.RawArray("q", num_workers + 1)
        self.slots[num_workers] = start  # the steps of the run being resumed

    def add(self, rank: int, steps: int) -> None:
        self.slots[rank] += steps

    def total(self) -> int:
        return sum(self.slots)
