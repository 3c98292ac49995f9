"""Running a study: its jobs side by side, each a share of the cores, then its results written."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from a3c.errors import ConfigError
from a3c.tune.objective import Interrupted, objective
from a3c.tune.results import write_results
from a3c.tune.study import Study, describe_trial, make_study


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
        optuna_study.optimize(
            lambda trial: objective(study, trial),
            catch=(ConfigError,),  # a combination refused
            callbacks=[optuna.study.MaxTrialsCallback(study.trials, states=finished), progress],
        )
    except (Interrupted, KeyboardInterrupt):
        return True  # the interrupted trial is marked failed; the finished ones stay in the storage
    return False


def tune(study: Study) -> tuple[dict, bool]:
    """Runs the study (`study.jobs` processes side by side, each a share of the cores) and writes its
    results into `study.out`. Returns what was written and whether Ctrl-C ended the study; the
    finished trials are kept either way."""
    Path(study.out).mkdir(parents=True, exist_ok=True)
    make_study(study, study.seed)  # created once, before the jobs join it
    if study.jobs == 1:
        interrupted = run_trials(study, 0)
    else:
        context = multiprocessing.get_context("spawn")  # a fresh interpreter each: the trainer forks inside
        jobs = [context.Process(target=run_trials, args=(study, job)) for job in range(study.jobs)]
        for process in jobs:
            process.start()
        # a list, not a generator: every job is joined, not only those before the first interrupted one
        interrupted = any([join_through_interrupts(process) for process in jobs])  # noqa: C419
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
