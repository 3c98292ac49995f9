"""The Python API: `Config.for_env`, `train` and `load_agent`, re-exported at the package top.

`import a3c` stays light (no torch): the functions import the trainer when called.
"""

from __future__ import annotations

import os
from typing import Optional

from .config import Config


def train(config: Config, verbose: bool = True, resume: Optional[str] = None):
    """Train until the run stops (solved, --max-steps, Ctrl-C); returns a TrainResult with the
    run's `summary` (what summary.json holds) and its `run_dir`. Prints progress unless not `verbose`.
    Leaves the caller's process as it found it (torch thread count, signal handlers)."""
    from .trainer import train as run_training
    return run_training(config, print_fn=print if verbose else silent, resume=resume)


def load_agent(path: str | os.PathLike, env_id: Optional[str] = None, seed: Optional[int] = None):
    """An Agent acting with a checkpoint's weights (a run's checkpoints/best.pt or last.pt); see a3c/agent.py."""
    from .agent import load_agent as load
    return load(path, env_id, seed)


def silent(*args, **kwargs) -> None:
    pass
