"""How a Config field is spelt on the command line, in one place for the CLI, errors and presets."""

from __future__ import annotations


def option_name(field_name: str) -> str:
    """How a Config field is spelt on the command line."""
    return "--" + field_name.replace("_", "-")


def field_name(option: str) -> str:
    """The Config field an option sets ("--noise/--no-noise" sets noise)."""
    return option.split("/")[0].removeprefix("--").replace("-", "_")


def option_value(value) -> str:
    """A value as written on the command line: a tuple of widths as 64,64."""
    return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)


def as_option(name: str, value) -> str:
    """A setting as written on the command line."""
    if isinstance(value, bool):
        return option_name(name if value else "no_" + name)
    return f"{option_name(name)} {option_value(value)}"
