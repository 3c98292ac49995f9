"""The evaluation of the weights a run's budget ended with: the evaluator's last round is up to an interval
older, and the final weights are what last.pt holds and what a user takes away."""

from __future__ import annotations

import threading
from pathlib import Path

import torch

from a3c.config.settings import Config
from a3c.errors import EnvError, first_line
from a3c.learn.seeding import final_evaluation_seed
from a3c.nets.actor_critic import Network
from a3c.parallel.evaluation import Evaluator
from a3c.run.console import Console

BUDGET_SPENT = ("max_steps", "max_minutes")  # the stop reasons after which the final weights are evaluated


def evaluate_final_weights(
    config: Config,
    model: Network,
    flat_weights: torch.Tensor,
    run_dir: Path,
    env_steps: int,
    start_time: float,
    best_so_far: float | None,
    console: Console,
    handle,
) -> None:
    """Judge `model` (the final weights, views of `flat_weights`, its workers stopped) as the evaluator judges a
    round, on new episodes: a row of eval.csv, best.pt if it beats `best_so_far`, a confirmation and "solved"
    if it reaches the target. `handle` takes the Evaluation messages as the trainer's loop does; wall
    seconds count from `start_time`. Ctrl-C or a failing env skips it, with a line."""
    console.message(f"evaluating the final weights on {config.eval_episodes} new episodes")
    evaluator = Evaluator(config, model, run_dir, threading.Event(), best_so_far)
    try:
        evaluator.play_round(env_steps, flat_weights, start_time, send=handle, seed=final_evaluation_seed(config))
    except KeyboardInterrupt:
        console.message("the final evaluation was skipped (interrupted)", error=True)
    except EnvError as error:  # the run's files stay whole; the summary says the evaluations before
        console.message(f"the final evaluation failed: {first_line(error)}", error=True)
    finally:
        evaluator.close()
