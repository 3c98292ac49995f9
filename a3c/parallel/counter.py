"""The global env-step counter: one shared slot per worker, so no lock is ever held.

A lock held by a worker that gets SIGKILLed is never released and would hang
every other worker; with one slot each, a worker only ever writes its own.
"""

from __future__ import annotations

import multiprocessing


class StepCounter:
    def __init__(self, ctx: multiprocessing.context.BaseContext, num_workers: int, start: int = 0):
        self.slots = ctx.RawArray("q", num_workers + 1)
        self.num_workers = num_workers
        self.set_elsewhere(start)

    def add(self, rank: int, steps: int) -> None:
        self.slots[rank] += steps

    def set_elsewhere(self, steps: int) -> None:
        """The steps not counted by these workers: the resumed run's, and those of other node groups."""
        self.slots[self.num_workers] = steps

    def own(self) -> int:
        """The steps these workers counted."""
        return sum(self.slots[: self.num_workers])

    def total(self) -> int:
        return sum(self.slots)
