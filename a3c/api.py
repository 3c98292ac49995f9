"""The Python API: `Config.for_env`, `train` and `load_agent`, re-exported at the package top.

`import a3c` stays light (no torch): the functions import the trainer when called.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Optional, Sequence

from a3c.config.settings import Config
from a3c.run.console import silent
from a3c.run.tracking import prestart

if TYPE_CHECKING:  # types only: `import a3c` does not import torch
    from a3c.agent import Agent
    from a3c.run.trainer import TrainResult


def train(
    config: Optional[Config] = None,
    *,
    resume: Optional[str | os.PathLike] = None,
    verbose: bool = True,
    callbacks: Sequence = (),
    **changes: Any,
) -> TrainResult:
    """Train until the run stops: solved (and confirmed), at max_steps, on Ctrl-C or when a callback says so.

    A new run: `train(config)`. Continuing one: `train(resume=RUN_DIR_OR_LAST_PT, **changes)`. Leaves the
    caller's process as it found it (torch thread count, signal handlers).

    Args:
        config: the settings of a new run (`a3c.Config.for_env(env_id, **options)`); None with `resume`.
        resume: a run directory or its checkpoints/last.pt, to continue it with its saved settings.
        verbose: print progress and the run's lines; False prints only errors.
        callbacks: objects with some of the methods of `a3c.Callback` (on_start, on_metrics,
            on_evaluation, on_end), called in this process as the run goes; on_metrics or on_evaluation
            returning True stops the run cleanly (stop_reason "callback").
        **changes: with `resume`, settings on top of the saved ones, as options given again to
            --resume (e.g. max_steps=...).

    Returns:
        The run's `summary`, the dict summary.json holds (stop_reason, env_steps, solved, ...), and its
            `run_dir`, a Path.

    Raises:
        TypeError: neither or both of `config` and `resume`, or `changes` without `resume`.
        a3c.errors.ConfigError: settings that cannot run (named in one line).
    """
    if (config is None) == (resume is None):
        raise TypeError("give a Config for a new run, or resume=RUN_DIR for a saved one, not both")
    if config is not None and changes:
        raise TypeError(f"changes ({', '.join(changes)}) apply to a resumed run; put them in the Config")
    if config is not None:
        prestart(config.track)  # its library's import runs beside torch's, if torch is not imported yet
    from a3c.run.trainer import train as run_training

    return run_training(
        config,
        print_fn=print if verbose else silent,
        resume=None if resume is None else str(resume),
        overrides=changes,
        callbacks=callbacks,
    )


def load_agent(path: str | os.PathLike, env_id: Optional[str] = None, seed: Optional[int] = None) -> Agent:
    """An Agent acting with a checkpoint's weights.

    Args:
        path: a run's checkpoints/best.pt or last.pt (or any checkpoint the trainer wrote).
        env_id: act on this env instead of the checkpoint's, if its spaces are the same.
        seed: the seed of the agent's sampling with `act(..., deterministic=False)`.

    Returns:
        The network with the checkpoint's weights, in evaluation mode (no noise), ready to act.
    """
    from a3c.agent import load_agent as load

    return load(path, env_id, seed)
