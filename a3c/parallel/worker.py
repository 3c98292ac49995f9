"""The worker process: Hogwild updates of the shared model, one ActorLearner gradient at a time."""

from __future__ import annotations

import math
import time
import traceback
from contextlib import nullcontext

import torch

from a3c.config.settings import Config
from a3c.errors import EnvError
from a3c.learn.learner import ActorLearner, RolloutReport
from a3c.learn.optim import SharedOptimizer, current_lr
from a3c.learn.seeding import WorkerSeeds, seed_worker_torch
from a3c.parallel.messages import Failure, Update
from a3c.parallel.processes import Shared, become_child_process, parent_is_gone


def apply_gradient(
    optimizer: SharedOptimizer, grad: torch.Tensor, lr: float, report: RolloutReport, read_at: int
) -> None:
    """Step the shared optimizer unless the gradient is NaN or infinite, which would poison the weights;
    record in `report` whether it was applied and its policy lag: the updates that other workers
    applied since this one read the weights at step `read_at`."""
    report.applied = math.isfinite(report.grad_norm)
    if report.applied:
        report.policy_lag = optimizer.step([grad], lr=lr) - 1 - read_at


def update(learner: ActorLearner, shared: Shared) -> RolloutReport:
    """One Hogwild update: read the shared weights, compute the next gradient (new rollout or replayed), apply it."""
    config, optimizer = learner.config, shared.optimizer
    learner.load_weights(optimizer.params[0])
    read_at = optimizer.step_count()
    grad, report = learner.next_gradient()
    lr = current_lr(config, shared.env_steps.total(), time.monotonic() - shared.started_at)
    apply_gradient(optimizer, grad, lr, report, read_at)
    return report


def run_worker(config: Config, shared: Shared, messages, parent_pid: int, rank: int, seeds: WorkerSeeds) -> None:
    """Process entry point: Hogwild updates of the shared model until told to stop.

    `rank` is this worker's slot in `shared` (step counter, turns); `seeds` differ for
    every rank of the run and every restart. `messages` is this process's own pipe to
    the trainer (no lock shared with other processes, so a killed worker cannot block the others).
    """
    become_child_process()
    seed_worker_torch(seeds)
    try:
        learner = ActorLearner(config, seeds, shared.model.statistics())
        turn = shared.turns.turn if shared.turns is not None else lambda rank: nullcontext()
        while not shared.stop.is_set() and not parent_is_gone(parent_pid):
            if shared.heartbeats is not None:
                shared.heartbeats.beat(rank)  # an update's rollout stuck in a hung env beats no more
            with turn(rank):  # a new rollout and the replays due after it, within one turn
                reports = [update(learner, shared)]
                while learner.replays_pending:
                    reports.append(update(learner, shared))
            for report in reports:
                shared.env_steps.add(rank, report.env_steps)
                messages.send(Update(rank, report))
            if shared.env_steps.total() >= config.max_steps:
                shared.stop.set()
        if shared.turns is not None:
            shared.turns.give_back(rank)  # the others may be finishing an update
    except EnvError as error:  # the env's fault, said in one line; a traceback would point at our code
        messages.send(Failure(f"worker {rank}", str(error)))
        raise SystemExit(1) from None
    except Exception:
        messages.send(Failure(f"worker {rank}", traceback.format_exc()))
        raise SystemExit(1) from None
