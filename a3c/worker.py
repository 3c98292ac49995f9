"""A worker process: Hogwild updates of the shared model with the gradients of its ActorLearner."""

from __future__ import annotations

import math
import os
import signal
import traceback
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Optional

import torch

from .config import Config
from .counter import StepCounter
from .learner import ActorLearner, env_seeds
from .model import Network
from .optim import SharedOptimizer, linear_decay
from .turns import Turns


@dataclass
class Shared:
    """What every process of a run shares: handed over once, when the process starts."""

    model: Network  # parameters are views of optimizer.params[0], in shared memory
    optimizer: SharedOptimizer
    env_steps: StepCounter
    stop: Any  # multiprocessing Event
    turns: Optional[Turns] = None  # None: every worker acts at once


def seed_worker_torch(config: Config, rank: int, incarnation: int) -> None:
    """The noise draws of worker `rank`: its own, and new ones after each restart."""
    torch.manual_seed(config.seed + rank + incarnation * config.num_processes)


def become_child_process() -> None:
    """Settings every worker and evaluator process needs first."""
    torch.set_num_threads(1)  # DESIGN.md fact 3: more threads deadlock or crawl
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group; the trainer decides
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def parent_is_gone(parent_pid: int) -> bool:
    """An orphan (its trainer was SIGKILLed) must not train on forever."""
    return os.getppid() != parent_pid


def apply_gradient(optimizer: SharedOptimizer, grad: torch.Tensor, lr: float, grad_norm: float) -> bool:
    """Step the shared optimizer unless the gradient is NaN or infinite, which would poison the weights."""
    if not math.isfinite(grad_norm):
        return False
    optimizer.step([grad], lr=lr)
    return True


def run_worker(config: Config, shared: Shared, messages, parent_pid: int, rank: int, incarnation: int) -> None:
    """Process entry point: Hogwild updates of the shared model until told to stop.

    `incarnation` counts restarts of this rank, so a restarted worker plays new episodes.
    `messages` is this process's own pipe to the trainer (no lock shared with
    other processes, so a killed worker cannot block the others).
    """
    become_child_process()
    seed_worker_torch(config, rank, incarnation)
    try:
        learner = ActorLearner(config, env_seeds(config, rank, incarnation), shared.model.obs_norm)
        weights = shared.optimizer.params[0]
        turn = shared.turns.turn if shared.turns is not None else lambda rank: nullcontext()
        while not shared.stop.is_set() and not parent_is_gone(parent_pid):
            with turn(rank):
                learner.load_weights(weights)
                grad, report = learner.compute_gradient()
                report.applied = apply_gradient(shared.optimizer, grad,
                                                current_lr(config, shared.env_steps.total()), report.grad_norm)
            shared.env_steps.add(rank, report.env_steps)
            messages.send(("update", rank, report))
            if shared.env_steps.total() >= config.max_steps:
                shared.stop.set()
        if shared.turns is not None:
            shared.turns.give_back(rank)  # the others may be finishing an update
    except Exception:
        messages.send(("error", f"worker {rank}", traceback.format_exc()))
        raise SystemExit(1)


def current_lr(config: Config, env_steps: int) -> float:
    return linear_decay(config.lr, env_steps, config.max_steps) if config.lr_decay else config.lr
