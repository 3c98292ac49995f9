"""The tuner's search space: which training options `a3c tune` varies, and over what.

An entry is a range (`low`, `high`, and `log = true` for a log scale; integers for an integer option)
or a list of `choices`. A space file (TOML, `a3c tune --space FILE`) holds tables named by the options;
each replaces the default entry of that option or adds one, and `default_space = false` at its top
leaves the defaults out. One choice holds an option fixed for every trial.
"""

from __future__ import annotations

import typing
from pathlib import Path

from a3c.config.file import coerce, is_number, read_file
from a3c.config.options import field_name
from a3c.config.settings import Config
from a3c.errors import ConfigError

# The options that matter most in A3C-style training, over ranges that each solved something here
# (lr: CartPole's 5e-3 to Atari's 4e-4; reward scale: Pendulum's 0.125 to Atari's 1)
DEFAULT_SPACE: dict[str, dict] = {
    "lr": {"low": 1e-4, "high": 1e-2, "log": True},
    "gamma": {"choices": [0.9, 0.95, 0.98, 0.99, 0.995]},
    "gae_lambda": {"low": 0.8, "high": 1.0},
    "entropy_coef": {"low": 1e-4, "high": 0.05, "log": True},
    "value_loss_coef": {"low": 0.25, "high": 1.0},
    "t_max": {"choices": [5, 10, 20, 40]},
    "envs_per_process": {"choices": [1, 2, 4, 8, 16]},
    "hidden_sizes": {"choices": [[64], [128], [256], [64, 64], [128, 128]]},
    "core": {"choices": ["lstm", "none"]},
    "critic": {"choices": ["shared", "own"]},  # own: Acrobot's LSTM at a quarter of the env steps, CartPole's at 2x
    "noise": {"choices": [True, False]},
    "replay_ratio": {"choices": [0.0, 0.5, 1.0, 2.0]},
    "replay_priority": {"low": 0.0, "high": 1.0},
    "reward_scale": {"low": 0.01, "high": 1.0, "log": True},
    "normalize_obs": {"choices": [True, False]},
}

# Options a trial may not vary: the tuner sets them (env, seed, run dir, processes) or they are no
# hyperparameter of the learning
NOT_TUNABLE = (
    "env",
    "seed",
    "run_dir",
    "num_processes",
    "active_workers",
    "max_steps",
    "backend",
    "ray_address",
    "ray_allow_unauthenticated",
    "nodes",
    "global_shards",
    "placement_timeout",
    "start_method",
    "print_interval",
    "log_interval",
    "checkpoint_interval",
    "tensorboard",
    "track",
    "video_interval",
    "max_worker_restarts",
    "worker_timeout",
)


def as_choice(value):
    """Optuna's categorical values are scalars: a list of widths travels as "64,64"."""
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else value


def check_entry(name: str, entry, where: str) -> dict:
    """One option's entry, checked: every value it can yield is a valid setting of that option."""
    types = typing.get_type_hints(Config)
    if name not in types:
        raise ConfigError(f"{where}: unknown option {name!r}; the keys are training options, like lr or t-max")
    if name in NOT_TUNABLE:
        raise ConfigError(f"{where}: {name} is set by the tuner or is no hyperparameter; give it to `a3c tune`")
    if not isinstance(entry, dict) or set(entry) - {"low", "high", "log", "choices"}:
        raise ConfigError(f"{where}: {name} must be a table with low and high (and log), or choices")
    if "choices" in entry:
        if set(entry) != {"choices"} or not isinstance(entry["choices"], list) or not entry["choices"]:
            raise ConfigError(f"{where}: {name}: choices must be a non-empty list, and alone")
        values = [coerce(value, types[name], name, where) for value in entry["choices"]]
    else:
        if types[name] not in (int, float):
            raise ConfigError(f"{where}: {name} takes choices, not a range")
        low, high, log = entry.get("low"), entry.get("high"), entry.get("log", False)
        if not (is_number(low) and is_number(high) and low < high and isinstance(log, bool)):
            raise ConfigError(f"{where}: {name} needs numbers low < high (and log true or false), got {entry}")
        if log and low <= 0:
            raise ConfigError(f"{where}: {name}: a log range needs low > 0, got {low}")
        values = [coerce(value, types[name], name, where) for value in (low, high)]
    for value in values:
        try:
            Config(**{name: value})
        except ConfigError as error:
            raise ConfigError(f"{where}: {name}: {error}") from None
    return entry


def load_space(path: str | Path | None) -> dict[str, dict]:
    """The default space, with a space file's entries on top (or alone: default_space = false)."""
    if path is None:
        return dict(DEFAULT_SPACE)
    where = f"--space {path}"
    table = read_file(path)
    keep_defaults = table.pop("default_space", True)
    if not isinstance(keep_defaults, bool):
        raise ConfigError(f"{where}: default_space must be true or false")
    entries = {field_name(key): check_entry(field_name(key), entry, where) for key, entry in table.items()}
    space = {**(DEFAULT_SPACE if keep_defaults else {}), **entries}
    if not space:
        raise ConfigError(f"{where}: the space is empty: name an option to tune, like [lr]")
    return space


def suggest(trial, space: dict[str, dict]) -> dict:
    """A trial's settings: a value of every option of the space, asked of Optuna's trial."""
    types = typing.get_type_hints(Config)
    settings = {}
    for name, entry in space.items():
        if "choices" in entry:
            choices = [as_choice(value) for value in entry["choices"]]
            picked = trial.suggest_categorical(name, choices)
            settings[name] = entry["choices"][choices.index(picked)]
        elif types[name] is int:
            settings[name] = trial.suggest_int(name, entry["low"], entry["high"], log=entry.get("log", False))
        else:
            settings[name] = trial.suggest_float(name, entry["low"], entry["high"], log=entry.get("log", False))
    return {name: tuple(value) if isinstance(value, list) else value for name, value in settings.items()}
