"""What every child process of a local run (the workers, the evaluator) shares and does first."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from typing import Any, Optional

import torch
from threadpoolctl import threadpool_limits

from .counter import StepCounter
from .model import Network
from .optim import SharedOptimizer
from .turns import Turns


@dataclass
class Shared:
    """What every process of a run shares: handed over once, when the process starts."""

    model: Network  # parameters are views of optimizer.params[0], in shared memory
    optimizer: SharedOptimizer
    env_steps: StepCounter
    stop: Any  # multiprocessing Event
    turns: Optional[Turns] = None  # None: every worker acts at once


def one_thread() -> None:
    """One compute thread in this process, for torch and for numpy's BLAS (docs/design.md, fact 3).

    Setting OMP_NUM_THREADS=1 before numpy loads does the same for BLAS, but a caller of
    the Python API may have imported numpy already: with BLAS's own threads, 8 workers
    on 2 cores ran 3.2x slower (Pendulum, numpy learner).
    """
    torch.set_num_threads(1)
    threadpool_limits(1)


def become_child_process() -> None:
    """Settings every worker and evaluator process needs first."""
    one_thread()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group; the trainer decides
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def parent_is_gone(parent_pid: int) -> bool:
    """An orphan (its trainer was SIGKILLed) must not train on forever."""
    return os.getppid() != parent_pid
