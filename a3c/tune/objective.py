"""A trial's objective in `a3c tune`: real training runs, one a seed, scored as they go; hopeless ones pruned.

A trial samples settings from the search space (a3c/tune/space.py), puts them on top of the env's
preset (or the defaults), and trains one run per seed, one after another, each for the same budget of
env steps. Its score is the learning area: the greedy evaluations' mean return over the budget, where
a confirmed solve counts the target for the rest of it, so solving sooner scores more, and a seed that
never learns scores its random play. The objective is the mean over the seeds. Partial areas go to
Optuna's pruner at fixed fractions of each seed's budget (the same steps in every trial, as the median
pruner compares them); a pruned trial's run stops through a callback, cleanly.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Optional

from a3c.run.callbacks import Callback
from a3c.run.console import silent
from a3c.tune.space import load_space, suggest
from a3c.tune.study import Study

REPORTS_PER_SEED = 20  # the pruner sees each seed's partial area at every 5% of its budget


def learning_area(
    evaluations: list[tuple[int, float]],
    until: int,
    budget: int,
    target: Optional[float],
    solved_at: Optional[int] = None,
) -> float:
    """The integral from 0 to `until` env steps of the greedy return, over `budget` env steps.

    `evaluations`: (env steps, mean return) in order. Each mean holds until the next evaluation (the
    first also before it), capped at the target; from `solved_at` (a confirmed solve) on, the target.
    A lucky evaluation counts only for its own span, unlike a best-so-far.
    """
    if not evaluations:
        return 0.0
    cap = math.inf if target is None else target
    end = until if solved_at is None else min(until, solved_at)
    area, start, value = 0.0, 0, min(evaluations[0][1], cap)
    for steps, mean in evaluations:
        if steps >= end:
            break
        area += value * (steps - start)
        start, value = steps, min(mean, cap)
    area += value * max(end - start, 0)
    if solved_at is not None and until > solved_at:
        area += target * (until - solved_at)
    return area / budget


def mean_so_far(areas: float, budget: int, covered: int) -> float:
    """The greedy return averaged over the `covered` env steps a trial's runs have made: the sum of their
    `areas` (each over `budget`) rescaled to those steps. At the end of the last seed it is the objective.
    The pruner keeps each trial's best report, so a report must be a level, not a sum: a sum of negative
    returns (Acrobot's -500 a step) only falls, its best was the first report, and nothing was pruned."""
    return areas * budget / covered


class TrialReporter(Callback):
    """Reports a seed's partial learning area to the Optuna trial at fixed steps, and stops the run once
    the pruner says the trial is hopeless."""

    def __init__(self, trial, seed_index: int, budget: int, earlier: float, seeds: int):
        self.trial, self.seed_index, self.budget = trial, seed_index, budget
        self.earlier, self.seeds = earlier, seeds  # the sum of the areas of the trial's finished seeds
        self.target: Optional[float] = None
        self.evaluations: list[tuple[int, float]] = []
        self.reported, self.pruned = 0, False

    def on_start(self, config, run_dir) -> None:
        self.target = config.target_return  # "auto" resolved by now: the env's reward threshold

    def report_until(self, steps: int, solved_at: Optional[int] = None) -> None:
        while self.reported < REPORTS_PER_SEED and (self.reported + 1) * self.budget // REPORTS_PER_SEED <= steps:
            self.reported += 1
            until = self.reported * self.budget // REPORTS_PER_SEED
            partial = learning_area(self.evaluations, until, self.budget, self.target, solved_at)
            self.trial.report(
                mean_so_far(self.earlier + partial, self.budget, self.seed_index * self.budget + until),
                self.seed_index * REPORTS_PER_SEED + self.reported,
            )

    def on_evaluation(self, row: dict) -> Optional[bool]:
        if row["confirmation"]:
            return None
        self.evaluations.append((int(row["env_steps"]), float(row["mean_return"])))
        self.report_until(int(row["env_steps"]))
        self.pruned = self.trial.should_prune()
        return self.pruned

    def finish(self, solved_at: Optional[int]) -> float:
        """The seed's whole area; the steps the run did not reach are reported with it."""
        self.report_until(self.budget, solved_at)
        return learning_area(self.evaluations, self.budget, self.budget, self.target, solved_at)


class Interrupted(Exception):
    """Ctrl-C stopped a trial's run: the study ends, its finished trials kept."""


def objective(study: Study, trial) -> float:
    """A trial: one run per seed of the sampled settings; the mean learning area."""
    import optuna

    from a3c.run.trainer import STOP_SIGNALS, train

    settings = suggest(trial, load_space(study.space_file))
    started, env_steps, areas, solved = time.monotonic(), 0, [], []
    for index in range(study.seeds):
        run_dir = Path(study.out) / "trials" / f"{trial.number:04d}-seed{index}"
        config = study.trial_config(settings, index, run_dir)
        reporter = TrialReporter(trial, index, study.max_steps, sum(areas), study.seeds)
        summary = train(config, print_fn=silent, callbacks=[reporter]).summary
        if summary["stop_reason"] in STOP_SIGNALS.values():
            optuna.logging.set_verbosity(optuna.logging.ERROR)  # no "trial failed" warning with a traceback
            raise Interrupted()
        env_steps += summary["env_steps"]
        trial.set_user_attr("env_steps", env_steps)
        trial.set_user_attr("seconds", round(time.monotonic() - started, 1))
        if reporter.pruned:
            raise optuna.TrialPruned()
        solved.append(summary["solved_env_steps"])
        areas.append(reporter.finish(summary["solved_env_steps"]))
        if index + 1 < study.seeds and trial.should_prune():  # a short run may end between two evaluations
            raise optuna.TrialPruned()
    trial.set_user_attr("solved_env_steps", solved)
    return sum(areas) / len(areas)
