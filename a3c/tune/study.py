"""`a3c tune`: a hyperparameter search on Optuna, each trial real training runs, hopeless ones pruned.

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
import multiprocessing
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from a3c.config.presets import preset_for
from a3c.config.settings import Config
from a3c.errors import ConfigError
from a3c.run.callbacks import Callback
from a3c.run.console import silent
from a3c.tune.space import load_space, suggest

REPORTS_PER_SEED = 20  # the pruner sees each seed's partial area at every 5% of its budget
WARMUP_REPORTS = 4  # no pruning before 20% of the first seed's budget: every run starts at random play


def learning_area(evaluations: list[tuple[int, float]], until: int, budget: int, target: Optional[float],
                  solved_at: Optional[int] = None) -> float:
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
            self.trial.report(mean_so_far(self.earlier + partial, self.budget, self.seed_index * self.budget + until),
                              self.seed_index * REPORTS_PER_SEED + self.reported)

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


@dataclass(frozen=True)
class Study:
    """What a tuning study is: the env, the base settings, the space, the budget and where it writes."""
    env: str
    trials: int
    seeds: int
    max_steps: int
    out: str
    storage: str
    study_name: str
    space_file: Optional[str] = None
    use_preset: bool = True
    jobs: int = 1
    num_processes: int = 1
    pruner: str = "median"
    prune_startup: int = 3
    seed: int = 0

    @property
    def base(self) -> dict:
        """The settings every trial starts from: the env's preset, or none (the defaults)."""
        return dict(preset_for(self.env)) if self.use_preset else {}

    def trial_config(self, settings: dict, seed: int, run_dir: Path) -> Config:
        return Config(**{**self.base, **settings, "env": self.env, "seed": seed, "run_dir": str(run_dir),
                         "max_steps": self.max_steps, "num_processes": self.num_processes,
                         "active_workers": min(cores_per_job(self.jobs), self.num_processes)})


def cores_per_job(jobs: int) -> int:
    """The jobs split the cores: a run's default processes, and at most its active workers."""
    return max(1, (os.cpu_count() or 1) // jobs)


class Interrupted(Exception):
    """Ctrl-C stopped a trial's run: the study ends, its finished trials kept."""


def objective(study: Study, trial) -> float:
    """A trial: one run per seed of the sampled settings; the mean learning area."""
    import optuna

    from a3c.run.trainer import train
    settings = suggest(trial, load_space(study.space_file))
    started, env_steps, areas, solved = time.monotonic(), 0, [], []
    for index in range(study.seeds):
        run_dir = Path(study.out) / "trials" / f"{trial.number:04d}-seed{index}"
        config = study.trial_config(settings, index, run_dir)
        reporter = TrialReporter(trial, index, study.max_steps, sum(areas), study.seeds)
        summary = train(config, print_fn=silent, callbacks=[reporter]).summary
        if summary["stop_reason"] in ("interrupted", "terminated"):
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


def make_study(study: Study, sampler_seed: int):
    """The Optuna study in its storage, created or joined: maximising the learning area."""
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # the tuner prints a line a trial itself
    pruner = (optuna.pruners.MedianPruner(n_startup_trials=study.prune_startup, n_warmup_steps=WARMUP_REPORTS)
              if study.pruner == "median" else optuna.pruners.NopPruner())
    return optuna.create_study(storage=study.storage, study_name=study.study_name, direction="maximize",
                               sampler=optuna.samplers.TPESampler(seed=sampler_seed), pruner=pruner,
                               load_if_exists=True)


def run_trials(study: Study, job: int) -> bool:
    """One job: trials until the study holds `study.trials` finished ones (complete or pruned). Returns
    whether Ctrl-C ended it."""
    import optuna
    from optuna.trial import TrialState
    optuna_study = make_study(study, study.seed * 1000 + job)  # jobs sample apart
    finished = (TrialState.COMPLETE, TrialState.PRUNED)

    def progress(optuna_study, trial) -> None:
        print(describe_trial(trial), flush=True)

    if len(optuna_study.get_trials(states=finished)) >= study.trials:
        return False
    try:
        optuna_study.optimize(lambda trial: objective(study, trial), catch=(ConfigError,),  # a combination refused
                              callbacks=[optuna.study.MaxTrialsCallback(study.trials, states=finished), progress])
    except (Interrupted, KeyboardInterrupt):
        return True  # the interrupted trial is marked failed; the finished ones stay in the storage
    return False


def solved_seeds(trial) -> Optional[int]:
    """How many of a complete trial's runs solved; None for a trial that did not complete."""
    solved = trial.user_attrs.get("solved_env_steps")
    return None if solved is None else sum(steps is not None for steps in solved)


def describe_trial(trial) -> str:
    """One line of a finished trial: its state, objective (a pruned one: its last partial), env steps, seconds."""
    attrs = trial.user_attrs
    name = "objective" if trial.state.name == "COMPLETE" else "last partial"
    value = "" if trial.value is None else f", {name} {trial.value:.2f}"
    solved = solved_seeds(trial)
    solves = "" if solved is None else f", solved {solved}/{len(attrs['solved_env_steps'])} seeds"
    return (f"trial {trial.number}: {trial.state.name.lower()}{value}{solves}, {attrs.get('env_steps', 0):,} env steps, "
            f"{attrs.get('seconds', 0):.1f} s")


def tune(study: Study) -> tuple[dict, bool]:
    """Runs the study (`study.jobs` processes side by side, each a share of the cores) and writes its
    results into `study.out`. Returns what was written and whether Ctrl-C ended the study; the
    finished trials are kept either way."""
    from a3c.tune.results import write_results
    Path(study.out).mkdir(parents=True, exist_ok=True)
    make_study(study, study.seed)  # created once, before the jobs join it
    if study.jobs == 1:
        interrupted = run_trials(study, 0)
    else:
        context = multiprocessing.get_context("spawn")  # a fresh interpreter each: the trainer forks inside
        jobs = [context.Process(target=run_trials, args=(study, job)) for job in range(study.jobs)]
        for process in jobs:
            process.start()
        interrupted = any([join_through_interrupts(process) for process in jobs])
    return write_results(make_study(study, study.seed), study), interrupted


def join_through_interrupts(process) -> bool:
    """Waits for a job; Ctrl-C reaches the jobs too (one process group), so it waits on while they end
    their trials cleanly. Returns whether Ctrl-C came."""
    interrupted = False
    while True:
        try:
            process.join()
            return interrupted
        except KeyboardInterrupt:
            interrupted = True
