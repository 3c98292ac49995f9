"""Where the workers run: local processes sharing memory, or Ray actors (imported only when chosen)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from a3c.backends.base import Backend, MessageSink
from a3c.backends.children import ChildProcesses, EvaluatorSettings
from a3c.backends.local import LocalBackend
from a3c.config.settings import Config
from a3c.parallel.processes import Shared


def connect_backend(config: Config):
    """With --backend ray, the RayCluster, connected before anything is written: a bad address is a usage error."""
    if config.backend != "ray":
        return None
    from a3c.backends.ray import connect  # here only: the local backend never imports Ray

    return connect(config)


def make_backend(
    ray_cluster,
    ctx,
    config: Config,
    shared: Shared,
    run_dir: Optional[Path],
    start_time: float,
    best_eval: Optional[float],
    console: MessageSink,
) -> Backend:
    """The backend of a run: Ray's where connect_backend gave a cluster, else the local one. `run_dir`,
    `start_time` and `best_eval` are the evaluator's (EvaluatorSettings)."""
    children = ChildProcesses(ctx, config, shared, console)
    evaluation = EvaluatorSettings(run_dir, start_time, best_eval)
    if ray_cluster is None:
        return LocalBackend(children, evaluation)
    from a3c.backends.ray import RayBackend

    return RayBackend(ray_cluster, children, evaluation)
