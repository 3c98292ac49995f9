"""A tuning study: what it is (Study), its Optuna study in storage, and what a finished trial says."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from a3c.config.presets import preset_for
from a3c.config.settings import Config

WARMUP_REPORTS = 4  # no pruning before 20% of the first seed's budget: every run starts at random play


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
        return Config(
            **{
                **self.base,
                **settings,
                "env": self.env,
                "seed": seed,
                "run_dir": str(run_dir),
                "max_steps": self.max_steps,
                "num_processes": self.num_processes,
                "active_workers": min(cores_per_job(self.jobs), self.num_processes),
            }
        )


def cores_per_job(jobs: int) -> int:
    """The jobs split the cores: a run's default processes, and at most its active workers."""
    return max(1, (os.cpu_count() or 1) // jobs)


def make_study(study: Study, sampler_seed: int):
    """The Optuna study in its storage, created or joined: maximising the learning area."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)  # the tuner prints a line a trial itself
    pruner = (
        optuna.pruners.MedianPruner(n_startup_trials=study.prune_startup, n_warmup_steps=WARMUP_REPORTS)
        if study.pruner == "median"
        else optuna.pruners.NopPruner()
    )
    return optuna.create_study(
        storage=study.storage,
        study_name=study.study_name,
        direction="maximize",
        sampler=optuna.samplers.TPESampler(seed=sampler_seed),
        pruner=pruner,
        load_if_exists=True,
    )


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
    return (
        f"trial {trial.number}: {trial.state.name.lower()}{value}{solves}, {attrs.get('env_steps', 0):,} env steps, "
        f"{attrs.get('seconds', 0):.1f} s"
    )
