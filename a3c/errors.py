"""The errors a user can fix: the command line turns each into one line and exit code 2."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path


class ConfigError(ValueError):
    """A setting that cannot work; the message names the CLI option."""


class EnvError(ValueError):
    """An environment that cannot be made or whose spaces this trainer does not support."""


class CheckpointError(ValueError):
    """A file that is not a readable checkpoint of this trainer."""


class PlotError(ValueError):
    """A run directory or output path that cannot be plotted; the message is one line."""


USAGE_ERRORS = (ConfigError, EnvError, CheckpointError, PlotError)


def check_output_file(option: str, path, suffixes: tuple[str, ...]) -> Path:
    """A file a command is to write: one of `suffixes`, in a folder that exists; else a ConfigError naming `option`."""
    path = Path(path)
    if path.suffix.lower() not in suffixes:
        raise ConfigError(f"{option} {path}: the file must end in {' or '.join(suffixes)}")
    if not path.parent.is_dir():
        raise ConfigError(f"{option} {path}: the folder {path.parent} does not exist")
    return path


class WriteError(OSError):
    """A file of the run that could not be written (a full or failing disk): the run stops with exit 1."""

    def __init__(self, path, error: OSError):
        super().__init__(f"cannot write {path}: {error.strerror or first_line(error)}")


@contextmanager
def writing(path):
    """An OSError of the writes inside becomes a WriteError naming `path`."""
    try:
        yield
    except WriteError:
        raise
    except OSError as error:
        raise WriteError(path, error) from None


def first_line(error: BaseException) -> str:
    """An exception in one line: its message's first line, or its type where the message is empty."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0]
