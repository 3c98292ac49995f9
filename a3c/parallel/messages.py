"""What the worker and evaluator processes tell the trainer's metrics writer.

Plain picklable data only, no tensors: a message crosses a pipe or Ray's object
store, and a tensor would drag shared memory with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from a3c.learn.learner import RolloutReport  # a type only: the metrics writer never imports torch


@dataclass(frozen=True)
class Update:
    """Worker `rank` applied (or dropped) one gradient."""

    rank: int
    report: RolloutReport


@dataclass(frozen=True)
class Evaluation:
    """One round of greedy episodes, at the env-step count it started from; or the confirmation of an
    evaluation that reached the target, on new episodes of the same weights."""

    env_steps: int
    wall_seconds: float
    returns: list
    solved: bool  # the mean reached the target return, and needs no confirmation or is one
    confirmation: bool = False


@dataclass(frozen=True)
class Failure:
    """A process died of an exception; `source` names it ("worker 3", "evaluator")."""

    source: str
    details: str  # a traceback, or one line where the env is at fault


@dataclass(frozen=True)
class Notice:
    """A console line from a process that has no console of its own (a node group of a Ray run)."""

    line: str
    error: bool


@dataclass(frozen=True)
class WriteFailed:
    """A process could not write a file of the run (a full or failing disk): the run stops, as when
    the trainer's own write fails."""

    error: str  # "cannot write PATH: REASON"
