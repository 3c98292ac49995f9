"""What `a3c tune` writes: trials.csv, best.toml (for --config) and Optuna's plots as PNGs."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from a3c.config.presets import preset_for
from a3c.config.settings import Config
from a3c.tune.space import load_space, suggest
from a3c.tune.study import solved_seeds

TRIAL_COLUMNS = ["number", "state", "objective", "env_steps", "seconds", "solved_seeds"]


def trial_row(trial, space: dict) -> dict:
    solved = solved_seeds(trial)
    return {
        "number": trial.number,
        "state": trial.state.name.lower(),
        "objective": "" if trial.value is None else round(trial.value, 6),
        "env_steps": trial.user_attrs.get("env_steps", ""),
        "seconds": trial.user_attrs.get("seconds", ""),
        "solved_seeds": "" if solved is None else solved,
        **{name: trial.params.get(name, "") for name in space},
    }


def write_trials(path: Path, trials, space: dict) -> None:
    with open(path, "w", newline="") as file:
        writer = csv.DictWriter(file, TRIAL_COLUMNS + list(space))
        writer.writeheader()
        writer.writerows(trial_row(trial, space) for trial in trials)


def toml_value(value) -> str:
    """A setting as TOML writes it: JSON's spelling serves for these types (true, 0.001, "lstm", [64])."""
    return json.dumps(list(value) if isinstance(value, tuple) else value)


def best_settings(trial, study) -> dict:
    """The settings the best trial trained with, as --config applies them on top of the env's preset: a
    study without the preset resets the preset's options to the defaults, so the file repeats the trial."""
    from optuna.trial import FixedTrial

    settings = suggest(FixedTrial(trial.params), load_space(study.space_file))
    undone = {} if study.use_preset else {name: getattr(Config(), name) for name in preset_for(study.env)}
    return {"env": study.env, **undone, "max_steps": study.max_steps, **settings}


def write_best(path: Path, trial, study) -> None:
    lines = [
        f"# a3c tune: trial {trial.number} of study {study.study_name!r}, objective {trial.value:.4f} "
        f"(the mean greedy return over {study.max_steps:,} env steps, {study.seeds} seeds)",
        f"# train with it: a3c --config {path}",
    ]
    lines += [f"{name} = {toml_value(value)}" for name, value in best_settings(trial, study).items()]
    path.write_text("\n".join(lines) + "\n")


def write_plots(optuna_study, out: Path) -> list[Path]:
    """Optuna's optimisation history and parameter importances; importances need two finished trials
    that differ."""
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from optuna.visualization import matplotlib as plots

    written = []
    for name, draw in (("history", plots.plot_optimization_history), ("importances", plots.plot_param_importances)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # Optuna marks its matplotlib plots experimental
                axes = draw(optuna_study)
        except (ValueError, RuntimeError):  # too few trials for this plot
            continue
        path = out / f"{name}.png"
        axes.figure.savefig(path, dpi=120, bbox_inches="tight")
        plt.close(axes.figure)
        written.append(path)
    return written


def write_results(optuna_study, study) -> dict:
    """Writes the study's results into its out dir; returns the paths written and the best trial."""
    from optuna.trial import TrialState

    out, space = Path(study.out), load_space(study.space_file)
    trials = optuna_study.get_trials(deepcopy=False)
    write_trials(out / "trials.csv", trials, space)
    written = {"trials": out / "trials.csv", "plots": write_plots(optuna_study, out), "best": None}
    if any(trial.state == TrialState.COMPLETE for trial in trials):
        best = optuna_study.best_trial
        write_best(out / "best.toml", best, study)
        written.update(best=out / "best.toml", best_trial=best)
    return written
