"""The Python API: `Config.for_env`, `train` and `load_agent`, re-exported at the package top.

`import a3c` stays light (no torch): the functions import the trainer when called.
"""

from __future__ import annotations

import os
from typing import Optional, Sequence

from a3c.config.settings import Config
from a3c.run.console import silent
from a3c.run.tracking import prestart


def train(config: Optional[Config] = None, *, resume: Optional[str | os.PathLike] = None, verbose: bool = True,
          callbacks: Sequence = (), **changes):
    """Train until the run stops (solved, max_steps, Ctrl-C); returns a TrainResult with the run's
    `summary` (what summary.json holds) and its `run_dir`. Prints progress unless not `verbose`.

    A new run: `train(config)`. Continuing one: `train(resume=RUN_DIR_OR_LAST_PT, **changes)`, its
    saved settings with `changes` on top (as options given again to --resume, e.g. max_steps=...).
    `callbacks`: objects with some of the methods of `a3c.Callback` (on_start, on_metrics, on_evaluation,
    on_end), called in this process as the run goes; on_metrics or on_evaluation returning True stops
    the run cleanly (stop_reason "callback").
    Leaves the caller's process as it found it (torch thread count, signal handlers).
    """
    if (config is None) == (resume is None):
        raise TypeError("give a Config for a new run, or resume=RUN_DIR for a saved one, not both")
    if config is not None and changes:
        raise TypeError(f"changes ({', '.join(changes)}) apply to a resumed run; put them in the Config")
    if config is not None:
        prestart(config.track)  # its library's import runs beside torch's, if torch is not imported yet
    from a3c.run.trainer import train as run_training
    return run_training(config, print_fn=print if verbose else silent,
                        resume=None if resume is None else str(resume), overrides=changes, callbacks=callbacks)


def load_agent(path: str | os.PathLike, env_id: Optional[str] = None, seed: Optional[int] = None):
    """An Agent acting with a checkpoint's weights (a run's checkpoints/best.pt or last.pt); see a3c/agent.py."""
    from a3c.agent import load_agent as load
    return load(path, env_id, seed)

