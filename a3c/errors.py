"""The errors a user can fix: the command line turns each into one line and exit code 2."""

from __future__ import annotations


class ConfigError(ValueError):
    """A setting that cannot work; the message names the CLI option."""


class EnvError(ValueError):
    """An environment that cannot be made or whose spaces this trainer does not support."""


class CheckpointError(ValueError):
    """A file that is not a readable checkpoint of this trainer."""


class PlotError(ValueError):
    """A run directory or output path that cannot be plotted; the message is one line."""


USAGE_ERRORS = (ConfigError, EnvError, CheckpointError, PlotError)


def first_line(error: BaseException) -> str:
    """An exception in one line: its message's first line, or its type where the message is empty."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0]
