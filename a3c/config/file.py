"""Training options from a file (--config): a TOML file, or a run's own config.json to repeat the run.

Keys are the training options, spelt as on the command line or as Config fields (`num-processes` or
`num_processes`); values have the option's type. A file is read whole and checked before anything
runs: an unknown key or a value of the wrong type is refused in one line naming the file and the key.
"""

from __future__ import annotations

import json
import sys
import typing
from pathlib import Path

from a3c.config.options import field_name
from a3c.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def read_file(path: str | Path) -> dict:
    """The file's table: TOML, or JSON for a .json file (a run's config.json)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as error:
        raise ConfigError(f"--config {path}: cannot read it: {error.strerror}") from None
    try:
        values = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(
            f"--config {path}: not valid {'JSON' if path.suffix == '.json' else 'TOML'}: {str(error).splitlines()[0]}"
        ) from None
    if not isinstance(values, dict):
        raise ConfigError(f"--config {path}: expected a table of options, got {type(values).__name__}")
    return values


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)  # TOML's true is no 1


def coerce(value, kind, key: str, where: str):
    """`value` as the field's type `kind`, or a ConfigError naming the key and what was expected."""

    def refuse(expected: str):
        raise ConfigError(f"{where}: {key} must be {expected}, got {value!r}")

    if kind is bool:
        return value if isinstance(value, bool) else refuse("true or false")
    if kind is int:
        return value if isinstance(value, int) and not isinstance(value, bool) else refuse("an integer")
    if kind is float:
        return float(value) if is_number(value) else refuse("a number")
    if kind is str:
        return value if isinstance(value, str) else refuse("a string")
    if kind == tuple[int, ...]:
        widths = [value] if isinstance(value, int) else value
        if isinstance(widths, list) and widths and all(isinstance(w, int) and not isinstance(w, bool) for w in widths):
            return tuple(widths)
        return refuse("a list of integers, like [64, 64]")
    if kind == typing.Union[bool, str]:  # normalize_obs
        return value if isinstance(value, bool) or value == "auto" else refuse('true, false or "auto"')
    if kind == typing.Union[float, str]:  # novelty_coef
        return value if value == "auto" else float(value) if is_number(value) else refuse('a number or "auto"')
    # target_return: a number, "auto", or none ("none", or JSON's null)
    if value is None or value in ("auto", "none"):
        return None if value in (None, "none") else value
    return float(value) if is_number(value) else refuse('a number, "auto" or "none"')


def file_options(path: str | Path, config_class) -> dict:
    """The Config fields a file sets, checked. A run's config.json names its own run dir: repeating the
    run writes a new one, so its run_dir is left out."""
    where = f"--config {path}"
    types = typing.get_type_hints(config_class)
    options = {}
    for key, value in read_file(path).items():
        name = field_name(key)
        if name not in types:
            raise ConfigError(
                f"{where}: unknown key {key!r}; the keys are the training options, like lr or num-processes"
            )
        if name in options:
            raise ConfigError(f"{where}: {key} is given twice")
        options[name] = coerce(value, types[name], key, where)
    if Path(path).suffix == ".json":
        options.pop("run_dir", None)
    return options
